"""The spool folder a compile keeps its big files in (`output.FileSet`), and the sweep of those a killed compile
left behind.

A compile removes its spool when it is done or fails; one killed outright (the kernel's out-of-memory killer,
SIGKILL, a CI runner's timeout) cannot, and leaves gigabytes in the temporary folder on a big API (Microsoft
Graph: 3 GB). Each spool holds an exclusive `flock` on its `.owner` file for as long as its compile (or a worker
it forked, which inherits the descriptor) lives: the kernel drops the lock when the last holder dies, whatever
killed it. A new spool removes every other spool whose lock it can take. A process id would not do: ids are
reused, and a container sharing the temporary folder sees other processes under other ids.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import IO

try:
    import fcntl
except ImportError:  # Windows: no flock; spools are not swept there
    fcntl = None  # type: ignore[assignment]

PREFIX = "toolc-spool-"
OWNER = ".owner"


class Spool:
    """A temporary folder owned by this process until `close`, which removes it (as does the interpreter's exit
    or the object's collection, like `tempfile.TemporaryDirectory`)."""

    def __init__(self) -> None:
        sweep(Path(tempfile.gettempdir()))
        self.path = Path(tempfile.mkdtemp(prefix=PREFIX))
        self._close = weakref.finalize(self, _remove, self.path, _claim(self.path))

    def close(self) -> None:
        self._close()


def _remove(folder: Path, owner: IO[bytes] | None) -> None:
    if owner is not None:
        owner.close()
    shutil.rmtree(folder, ignore_errors=True)


def _claim(folder: Path) -> IO[bytes] | None:
    """Lock the folder's owner file before it takes its name: a sweep never sees `.owner` unlocked while its
    compile lives."""
    if fcntl is None:
        return None
    pending = folder / f"{OWNER}.pending"
    handle = pending.open("wb")
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # a temporary folder without locks (some network mounts): unowned, so never swept
        handle.close()
        pending.unlink(missing_ok=True)
        return None
    os.replace(pending, folder / OWNER)
    return handle


def sweep(parent: Path) -> list[Path]:
    """Remove the spools under `parent` whose compile is gone (their owner file's lock is free); returns them.
    A spool without an owner file (being made right now, or not this kind) and one that cannot be opened (another
    user's) are left alone."""
    if fcntl is None:
        return []
    removed = []
    for folder in parent.glob(f"{PREFIX}*"):
        try:
            with (folder / OWNER).open("rb") as handle:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # no owner file, not ours to open, or locked: its compile lives
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed
