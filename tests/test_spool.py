"""A killed compile's spool folder (gigabytes on a big API) is removed by the next compile; a live one is not."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from compiler.infra import spool
from compiler.infra.output import FileSet

pytestmark = pytest.mark.skipif(spool.fcntl is None, reason="no flock on this platform")

# A compile's process, reduced to what matters: a spool with a file in it, then waiting to be killed.
HOLDER = """
import sys, tempfile, time
tempfile.tempdir = sys.argv[1]
from compiler.infra.output import FileSet
files = FileSet()
files["schemas/big.json"] = b"x" * (FileSet.SPOOL_MIN + 1)
print(files.spool_dir(), flush=True)
time.sleep(60)
"""


def _holder(temp: Path) -> tuple[subprocess.Popen[str], Path]:
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(temp)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    return process, Path(process.stdout.readline().strip())


@pytest.fixture
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_a_killed_compiles_spool_is_removed_by_the_next_one(temp: Path) -> None:
    process, folder = _holder(temp)
    os.kill(process.pid, signal.SIGKILL)  # as the out-of-memory killer ends it: no cleanup of its own
    process.wait()
    assert any(folder.iterdir()), "the killed compile left its spool behind"
    files = FileSet()
    mine = files.spool_dir()
    assert not folder.exists()
    assert mine.exists()
    files.release_spool()
    assert not mine.exists()


def test_a_live_compiles_spool_is_kept(temp: Path) -> None:
    process, folder = _holder(temp)
    try:
        files = FileSet()
        files.spool_dir()
        assert (folder / spool.OWNER).exists() and any(path.suffix == ".out" for path in folder.iterdir())
        assert spool.sweep(temp) == []
        files.release_spool()
    finally:
        process.kill()
        process.wait()
    assert spool.sweep(temp) == [folder]


def test_folders_that_are_not_a_compiles_spool_are_left_alone(temp: Path) -> None:
    unowned = temp / f"{spool.PREFIX}being-made"
    unowned.mkdir()
    other = temp / "toolc-format-x"
    other.mkdir()
    assert spool.sweep(temp) == []
    assert unowned.exists() and other.exists()


def test_a_temporary_folder_without_locks_still_gets_a_spool_that_is_never_swept(
        temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_locks(fd: int, operation: int) -> None:
        raise OSError(37, "No locks available")  # ENOLCK, as some network mounts answer

    monkeypatch.setattr(spool.fcntl, "flock", no_locks)
    files = FileSet()
    mine = files.spool_dir()
    assert mine.is_dir() and not any(mine.iterdir()), "no owner file: a sweep leaves it alone"
    assert spool.sweep(temp) == [] and mine.exists()
    files.release_spool()
    assert not mine.exists()
