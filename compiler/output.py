"""Atomic output: the new tree is written beside the old one and swapped in, so a failed or interrupted
compile leaves the previous output exactly as it was."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, MutableMapping
from pathlib import Path

from compiler.diagnostics import CompilerError, Diagnostic, Severity

CANNOT_WRITE = "TC120"


class OutputFolder(MutableMapping[str, bytes]):
    """The files of an existing output folder, by POSIX relative path, each read on first access.

    A compile only needs a few of them (the lock and the `python/` files that codegen compares or carries
    `# toolc: keep` edits from); `toolc check` compares them all. Listing is eager, reading is not."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._paths = set(_relative_files(folder))
        self._content: dict[str, bytes] = {}

    def __getitem__(self, path: str) -> bytes:
        if path not in self._content:
            if path not in self._paths:
                raise KeyError(path)
            self._content[path] = (self._folder / path).read_bytes()
        return self._content[path]

    def __setitem__(self, path: str, content: bytes) -> None:
        self._paths.add(path)
        self._content[path] = content

    def __delitem__(self, path: str) -> None:
        self._paths.remove(path)
        self._content.pop(path, None)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._paths))

    def __len__(self) -> int:
        return len(self._paths)


def _relative_files(folder: Path) -> list[str]:
    if not folder.is_dir():
        return []
    return [path.relative_to(folder).as_posix() for path in sorted(folder.rglob("*"))
            if path.is_file() and "__pycache__" not in path.parts]


def read_tree(folder: Path) -> dict[str, bytes]:
    """Every file under `folder`, by POSIX relative path (empty when the folder does not exist)."""
    return {relative: (folder / relative).read_bytes() for relative in _relative_files(folder)}


def write_tree(folder: Path, files: dict[str, bytes]) -> None:
    folder = folder.resolve()
    parent = folder.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.new-", dir=parent))
        for relative, content in sorted(files.items()):
            target = staging / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        if folder.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{folder.name}.old-", dir=parent))
            os.replace(folder, retired / folder.name)
            os.replace(staging, folder)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.replace(staging, folder)
    except OSError as exc:
        raise CompilerError(
            Diagnostic(code=CANNOT_WRITE, severity=Severity.ERROR, message=f"cannot write output: {exc}", source=str(folder))
        ) from None
