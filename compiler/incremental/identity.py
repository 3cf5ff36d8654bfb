"""toolc's own identity: what decides the bytes a compile writes besides its inputs.

A hash over the `compiler` package's Python files, the templates (router static files included), toolc's version
and the exact versions of the libraries installed beside it (datamodel-code-generator's and ruff's output is embedded
in stubs; the tokenizer's counts are written into toolsets). Any edit to toolc, an upgrade or a new library
version changes it, and with it every cache key: a stale cache can never change the output.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from functools import cache
from importlib import resources
from pathlib import Path


def _package_root() -> Path:
    return Path(__file__).resolve().parent.parent


def _templates_root() -> Path:
    return Path(str(resources.files("compiler.templates")))


def _library_versions() -> list[str]:
    """The `name-version.dist-info` entries of the environment toolc's libraries are installed in: one directory
    listing (asking `importlib.metadata` for each library costs 0.1 s). Any package installed or upgraded there
    changes the identity: a cache is dropped more often than needed, never kept when it should not be. The
    libraries are found, not imported (a compile of JSON documents never imports PyYAML)."""
    found: set[str] = set()
    for library in ("orjson", "yaml", "click"):
        spec = importlib.util.find_spec(library)
        folder = Path(spec.origin if spec is not None and spec.origin else "").resolve().parent.parent
        try:
            found.update(entry.name for entry in os.scandir(folder) if entry.name.endswith(".dist-info"))
        except OSError:
            continue
    return sorted(found)


def _files(root: Path, patterns: tuple[str, ...]) -> list[Path]:
    found = {path for pattern in patterns for path in root.glob(pattern) if path.is_file()}
    return sorted(found, key=lambda path: path.relative_to(root).as_posix())


@cache
def toolc_identity() -> str:
    """sha256 over toolc's code, templates and library versions (about 5 ms, once per process)."""
    digest = hashlib.sha256()
    for label, root, patterns in (("compiler", _package_root(), ("**/*.py",)),
                                  ("templates", _templates_root(), ("**/*.jinja", "**/*.py", "**/*.txt"))):
        for path in _files(root, patterns):
            digest.update(f"{label}/{path.relative_to(root).as_posix()}\0".encode())
            digest.update(path.read_bytes() + b"\0")
    for line in _library_versions():
        digest.update(line.encode() + b"\0")
    return "sha256:" + digest.hexdigest()
