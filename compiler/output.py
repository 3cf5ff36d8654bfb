"""Atomic output: the new tree is written beside the old one and swapped in, so a failed or interrupted
compile leaves the previous output exactly as it was."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from compiler.diagnostics import CompilerError, Diagnostic, Severity

CANNOT_WRITE = "TC120"


def read_tree(folder: Path) -> dict[str, bytes]:
    """Every file under `folder`, by POSIX relative path (empty when the folder does not exist)."""
    if not folder.is_dir():
        return {}
    files: dict[str, bytes] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            files[path.relative_to(folder).as_posix()] = path.read_bytes()
    return files


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
