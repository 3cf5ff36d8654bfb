"""Atomic output: the new tree is written beside the old one and swapped in, so a failed or interrupted
compile leaves the previous output exactly as it was."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from pathlib import Path
from typing import BinaryIO, NamedTuple

from compiler.infra.diagnostics import CompilerError, Diagnostic
from compiler.infra.spool import Spool

CANNOT_WRITE = "TC120"


class SpooledFile(NamedTuple):
    """A file too big to hold, written into a build's spool folder as it was made (by a worker process too),
    for `FileSet.adopt`."""

    path: Path
    sha256: str
    """`sha256:<hex>` of its bytes, hashed as they were written."""


def spool_file(path: Path, chunks: Iterable[bytes]) -> SpooledFile:
    """Write `chunks` to `path` (in a spool folder), hashing them on the way."""
    digest = hashlib.sha256()
    with path.open("wb") as out:
        for chunk in chunks:
            digest.update(chunk)
            out.write(chunk)
    return SpooledFile(path, "sha256:" + digest.hexdigest())


class FileSet(MutableMapping[str, bytes]):
    """A build's output files by POSIX relative path. Files of `SPOOL_MIN` bytes or more (the provider files of a
    big API: hundreds of MB each) live in a private temporary folder, not in memory: a build holds at most one of
    them at a time, and `write_tree` copies them without reading them in."""

    SPOOL_MIN = 1 << 20

    def __init__(self) -> None:
        self._small: dict[str, bytes] = {}
        self._spooled: dict[str, Path] = {}
        self._digests: dict[str, str] = {}
        """Path → sha256 of a spooled file its writer hashed as it wrote it (never read back to hash it)."""
        self._kept: set[str] = set()
        """Paths whose file is the last compile's, taken as it is (`keep`): linked into the output, never removed."""
        self._spool: Spool | None = None

    def spool_dir(self) -> Path:
        """Where big files are kept (a worker process may write there and hand the path to `adopt`)."""
        if self._spool is None:
            self._spool = Spool()
        return self._spool.path

    def release_spool(self) -> None:
        """Remove the spool folder and forget its files: called once they are written out, or not wanted
        (`toolc compile` ends its process without the interpreter's teardown, which would otherwise remove it)."""
        self._spooled.clear()
        self._digests.clear()
        self._kept.clear()
        if self._spool is not None:
            self._spool.close()
            self._spool = None

    def adopt(self, path: str, spooled: Path, digest: str = "") -> None:
        """Take `spooled` (a file in `spool_dir()`) as the content of `path`; `digest`: its sha256, when known."""
        self._discard(path)
        self._spooled[path] = spooled
        if digest:
            self._digests[path] = digest

    def keep(self, path: str, existing: Path, digest: str) -> None:
        """Take `existing` (a file the last compile left, in the output folder or its cache, whose sha256 is `digest`)
        as the content of `path`: linked into the new output like a spooled file, but never removed with the spool."""
        self._discard(path)
        self._spooled[path] = existing
        self._digests[path] = digest
        self._kept.add(path)

    def known_digest(self, path: str) -> str:
        """The sha256 `adopt` was given for `path`, or empty."""
        return self._digests.get(path, "")

    def digest(self, path: str) -> str:
        """sha256 of a file held in memory, or of a spooled one as its writer hashed it (empty if it did not)."""
        if path in self._small:
            return "sha256:" + hashlib.sha256(self._small[path]).hexdigest()
        return self._digests.get(path, "")

    def detach(self, path: str) -> Path | bytes:
        """Take `path` out of the set but keep its content: the spooled file (it stays in the spool folder and goes
        with it) or the bytes. For a file replaced in the output whose content is still read."""
        if path in self._kept:
            raise ValueError(f"{path} is the last compile's file: it cannot be detached")
        self._digests.pop(path, None)
        spooled = self._spooled.pop(path, None)
        return spooled if spooled is not None else self._small.pop(path)

    def spooled_path(self, path: str) -> Path | None:
        return self._spooled.get(path)

    def size(self, path: str) -> int:
        spooled = self._spooled.get(path)
        return spooled.stat().st_size if spooled is not None else len(self._small[path])

    def __getitem__(self, path: str) -> bytes:
        spooled = self._spooled.get(path)
        return spooled.read_bytes() if spooled is not None else self._small[path]

    def __setitem__(self, path: str, content: bytes) -> None:
        self._discard(path)
        if len(content) < self.SPOOL_MIN:
            self._small[path] = content
            return
        self.write_chunks(path, (content,))

    def write_chunks(self, path: str, chunks: Iterable[bytes]) -> int:
        """Set `path` from pieces: kept in memory while under `SPOOL_MIN`, streamed to a spool file from there on
        (a file cut out of others, hundreds of MB, is never held whole) and hashed as it is written (the project
        record wants every file's sha256: Microsoft Graph's toolsets, 600 MB, were read back to hash them).
        Returns its size."""
        self._discard(path)
        held: list[bytes] = []
        size = 0
        out: BinaryIO | None = None
        digest = hashlib.sha256()
        try:
            for chunk in chunks:
                size += len(chunk)
                if out is not None:
                    out.write(chunk)
                    digest.update(chunk)
                    continue
                held.append(chunk)
                if size >= self.SPOOL_MIN:
                    descriptor, name = tempfile.mkstemp(dir=self.spool_dir(), suffix=".out")
                    out = os.fdopen(descriptor, "wb")
                    self._spooled[path] = Path(name)
                    out.writelines(held)
                    for piece in held:
                        digest.update(piece)
                    held = []
        finally:
            if out is not None:
                out.close()
        if out is None:
            self._small[path] = b"".join(held)
        else:
            self._digests[path] = "sha256:" + digest.hexdigest()
        return size

    def __delitem__(self, path: str) -> None:
        if path not in self:
            raise KeyError(path)
        self._discard(path)

    def _discard(self, path: str) -> None:
        self._small.pop(path, None)
        self._digests.pop(path, None)
        spooled = self._spooled.pop(path, None)
        if spooled is not None and path not in self._kept:
            spooled.unlink(missing_ok=True)
        self._kept.discard(path)

    def __contains__(self, path: object) -> bool:
        return path in self._small or path in self._spooled

    def __iter__(self) -> Iterator[str]:
        return iter(sorted([*self._small, *self._spooled]))

    def __len__(self) -> int:
        return len(self._small) + len(self._spooled)


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


_TOOL_CACHES = frozenset({"__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"})
"""Folders Python tools leave beside code they read (ruff writes `.ruff_cache` next to `python/ruff.toml`, its
nearest config): never toolc's output, so never drift."""


def _relative_files(folder: Path) -> list[str]:
    if not folder.is_dir():
        return []
    return [path.relative_to(folder).as_posix() for path in sorted(folder.rglob("*"))
            if path.is_file() and _TOOL_CACHES.isdisjoint(path.relative_to(folder).parts)]


def read_tree(folder: Path) -> dict[str, bytes]:
    """Every file under `folder`, by POSIX relative path (empty when the folder does not exist)."""
    return {relative: (folder / relative).read_bytes() for relative in _relative_files(folder)}


def _place(spooled: Path, target: Path) -> None:
    """A spooled file into the output: linked where the spool shares the output's file system (nothing copied;
    spooled files are never written again once made), copied where it does not."""
    try:
        os.link(spooled, target)
    except OSError:
        shutil.copyfile(spooled, target)
        return
    os.chmod(target, 0o666 & ~_UMASK)  # as a file written there would be (the spool's are private, 0600)


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


_UMASK = _umask()


def write_tree(folder: Path, files: Mapping[str, bytes]) -> None:
    """Files are written one at a time (a `FileSet`'s spooled files are linked or copied, never read in whole)."""
    folder = folder.resolve()
    parent = folder.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.new-", dir=parent))
        os.chmod(staging, 0o777 & ~_UMASK)  # mkdtemp's folder is private (0700); the output is not
        for relative in sorted(files):
            target = staging / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            spooled = files.spooled_path(relative) if isinstance(files, FileSet) else None
            if spooled is not None:
                _place(spooled, target)
            else:
                target.write_bytes(files[relative])
        if folder.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{folder.name}.old-", dir=parent))
            os.replace(folder, retired / folder.name)
            os.replace(staging, folder)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.replace(staging, folder)
    except OSError as exc:
        raise CompilerError(
            Diagnostic.of(CANNOT_WRITE, f"cannot write output: {exc}", source=str(folder))
        ) from None
