"""A file's stamp: its device, inode, size and modification time in nanoseconds, taken when toolc has just written
or checked the file, so that a hash of its bytes (or of spans of them) is remembered instead of read again.

A recompile that changes one description keeps nearly every byte of the last one (Microsoft Graph: 433 MB of
tools files that grow, 676 MB of toolset files kept): reading and hashing them all again to prove they are
unchanged was a seventh of its time. A file whose stamp is the one recorded with its hashes has not been written
since: every write sets the modification time from the clock, and `settle` waits, when the stamp is taken, until
the clock is past the time the file holds (a kernel whose timestamps are coarse gives writes of the same tick the
same time; one with fine-grained timestamps gives a file that was just queried a newer one anyway). A file
replaced (another inode), cut or grown (another size), or written in place (another time) has another stamp,
and its bytes are checked by their hashes, as with no stamp at all. What a stamp cannot tell is a file whose
time was set back by hand (`touch -d`) to the very nanosecond after it was altered in place: a cache is keyed
against mistakes and stale builds, not against someone forging its files.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable

_COARSE_CLOCK = 5 if sys.platform.startswith("linux") else time.CLOCK_REALTIME
"""CLOCK_REALTIME_COARSE (Linux, not named by Python): the clock a coarse kernel takes file times from."""
_SETTLE_LIMIT_NS = 50_000_000
"""How long `settle` waits at most (a coarse tick is 1 to 10 ms); a clock that far behind a file: no stamp."""
_COARSEST_TRUSTED_NS = 1_000_000
"""A modification time that is a whole number of these is taken for one a coarse file system rounded (one in a
million fine-grained times is too: it then costs one pass of hashing)."""


def of(result: os.stat_result) -> str:
    """The stamp of a file's `os.stat` or `os.fstat`."""
    return f"{result.st_dev}:{result.st_ino}:{result.st_size}:{result.st_mtime_ns}"


def of_path(path: os.PathLike[str] | str) -> str:
    """The stamp of the file at `path` (not through a symlink); empty when there is none."""
    try:
        return of(os.stat(path, follow_symlinks=False))
    except OSError:
        return ""


def settle(stamps: Iterable[str]) -> bool:
    """Wait until a write from now on would give each of `stamps` another modification time (at most a tick of
    the clock); False when the clock does not get there (then the stamps must not be recorded)."""
    times = [int(stamp.rsplit(":", 1)[1]) for stamp in stamps if stamp]
    if any(time_ns % _COARSEST_TRUSTED_NS == 0 for time_ns in times):
        return False  # a file system that keeps whole ms or coarser (FAT, exFAT, HFS+, ext4 with small inodes):
        # the clock is past such a time at once, and a write within its tick would keep the stamp
    latest = max(times, default=0)
    deadline = time.monotonic_ns() + _SETTLE_LIMIT_NS
    while time.clock_gettime_ns(_COARSE_CLOCK) <= latest:
        if time.monotonic_ns() > deadline:
            return False
        time.sleep(0.001)
    return True
