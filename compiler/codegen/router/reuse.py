"""Per tool: the pieces of the router's data files from the last compile, reused when what they are made from is
the same (issue 27: one changed description must not bundle, type and encode Microsoft Graph's 11k tools again).

The big data files are one piece per tool in tool order between a few bytes of frame (`_catalog.json`,
`_codemode.json`, `_schemas.json`, `_tables.json`, `_serve.json`; the per-source `$defs` of `_schemas.json` are
pieces too). A piece is keyed by everything it is made from: the tool's IR hash (every field of the tool and
every shared definition it reaches, `incremental.ir_hash`), plus what the file's piece reads besides the tool
(its code-mode function name or served MCP name, which depend on the whole set; its toolsets; its policy
aliases; its API's base URL; the resolver's limits). Names that depend on the whole set are computed every time
as before, and only their results enter a key; the files' frames (name tables, the code-mode tools) are made
every time too. The bytes are those of a compile from nothing because each piece's maker is a pure function of
what its key holds.

A hit is read from the last compile's file in the output folder by its byte range and checked against the sha256
the entry recorded: a file edited or replaced since gives a miss, and the piece is made again. A file that still
has the stamp recorded as the output folder was written (`incremental.stamps`) was not written since: its pieces'
sha256s hold unread (Microsoft Graph's `_catalog.json`, 168 MB, was hashed piece by piece on every recompile,
then again as the new file was written). One file per
output folder (`.toolc-cache/<output>.router.json`: data file → key → [offset, length, sha256, diagnostics]),
holding only this compile's pieces; toolc's identity is in the store's envelope, so another toolc's pieces are
never read, and a damaged or foreign file is ignored with a TC140 note (`incremental.store`). The router is made
in a forked child, so the entry is handed back and saved by the parent with the output folder, never by a
compile that does not write it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler.incremental import stamps, store
from compiler.infra.diagnostics import Diagnostic, Diagnostics
from compiler.infra.output import SpooledFile
from compiler.infra.serialize import compact_json

PACKAGE = "toolc_router"
"""The router package's name (in the output's `python/`)."""
KIND = "router"
_VERSION = "1"
_STAMPS = "stamps"
"""The payload's entry of each data file's stamp (data file → stamp), beside the data files' pieces."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def piece_key(*parts: Any) -> str:
    """The key of a piece: a digest of everything it is made from (JSON data)."""
    return hashlib.sha256(compact_json(parts)).hexdigest()


class FilePieces:
    """One data file's pieces as the file is made: `frame` the bytes between pieces, `piece` each piece (reused,
    or made by the caller), so each piece's byte range in the new file is known and kept for the next compile.
    `previous`: the last compile's pieces of this file (key → [offset, length, sha256, diagnostics]);
    `folder_file`: that file in the output folder; `as_recorded`: it has the stamp recorded with the pieces."""

    def __init__(self, previous: dict[str, Any], folder_file: Path | None, keep: bool, as_recorded: bool = False) -> None:
        self._previous, self._folder_file, self._as_recorded = previous, folder_file, as_recorded
        self.now: dict[str, list[Any]] | None = {} if keep else None
        self._position = 0
        self._fd: int | None = None
        self._size = 0

    def frame(self, data: bytes) -> bytes:
        self._position += len(data)
        return data

    def piece(self, key: str, make: Callable[[], tuple[bytes, list[Diagnostic]]],
              diagnostics: Diagnostics | None = None) -> bytes:
        """The piece keyed `key`: the last compile's bytes when they check out (its diagnostics replayed into
        `diagnostics`), else `make()`'s (with the diagnostics it reported, which `make` has reported already)."""
        found = self._reused(key)
        if found is not None:
            data, sha, replayed = found
            if diagnostics is not None:
                diagnostics.extend(replayed)
        elif self.now is not None:
            data, replayed = make()
            sha = _sha256(data)
        else:
            return make()[0]
        if self.now is not None:
            self.now[key] = [self._position, len(data), sha, [item.to_row() for item in replayed]]
        self._position += len(data)
        return data

    def _reused(self, key: str) -> tuple[bytes, str, list[Diagnostic]] | None:
        item = self._previous.get(key)
        if not (isinstance(item, list) and len(item) == 4) or self._folder_file is None:
            return None
        offset, length, sha, rows = item
        try:
            if not (isinstance(offset, int) and isinstance(length, int) and 0 <= offset <= offset + length
                    <= self._file_size()):  # a crafted length would otherwise be allocated before the read
                return None
            replayed = [Diagnostic.from_row(row) for row in rows]
            data = self._read(offset, length)
        except (OSError, TypeError, ValueError, KeyError, IndexError):
            return None
        if len(data) != length or (not self._as_recorded and _sha256(data) != sha):
            return None  # the folder's file was edited or replaced since: made again
        return data, sha, replayed

    def _file_size(self) -> int:
        """The folder file's size, opening it on first use (a compile that reuses nothing never opens it)."""
        if self._fd is None:
            assert self._folder_file is not None
            self._fd = store.open_regular(self._folder_file)  # no symlink, no FIFO to hang on
            self._size = os.fstat(self._fd).st_size
        return self._size

    def _read(self, offset: int, length: int) -> bytes:
        self._file_size()
        assert self._fd is not None
        return os.pread(self._fd, length, offset)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class RouterReuse:
    """One compile's reuse of the router's data file pieces: `pieces(name)` while each file is made, then
    `entry()` to hand back for saving (`save`). `out_dir`: the output folder (its cache beside it); `folder`:
    the router package in it as the last compile wrote it. Without an output folder nothing is reused or kept."""

    def __init__(self, out_dir: Path | None, folder: Path | None, diagnostics: Diagnostics) -> None:
        found = store.load(out_dir, KIND, diagnostics, _well_formed) if out_dir is not None else None
        self._previous: dict[str, Any] = found.payload if found is not None and found.key == _VERSION else {}
        recorded = self._previous.get(_STAMPS)
        sealed = found is not None and found.sealed  # else its stamps may have been edited with its ranges
        self._stamps: dict[str, Any] = recorded if isinstance(recorded, dict) and sealed else {}
        self._folder = folder
        self.keeps = out_dir is not None
        """Whether pieces are kept for the next compile (else no key or digest need be made)."""
        self._now: dict[str, dict[str, list[Any]]] = {}

    @contextmanager
    def pieces(self, name: str) -> Iterator[FilePieces]:
        previous = self._previous.get(name)
        file = self._folder / name if self._folder is not None else None
        recorded = self._stamps.get(name)
        as_recorded = file is not None and isinstance(recorded, str) and bool(recorded) and \
            stamps.of_path(file) == recorded
        pieces = FilePieces(previous if isinstance(previous, dict) and name != _STAMPS else {},
                            file if file is not None and file.is_file() else None, self.keeps, as_recorded)
        try:
            yield pieces
        finally:
            pieces.close()
        if pieces.now is not None:
            self._now[name] = pieces.now

    def entry(self) -> store.Entry | None:
        return store.Entry(_VERSION, self._now) if self.keeps else None


@dataclass(frozen=True)
class RouterFiles:
    """What making the router gives (`router_package.generate_router_spooled`): files held, files spooled, and
    the pieces of its data files, for `save` once the output folder is written (None: none kept)."""

    files: dict[str, bytes]
    spooled: dict[str, SpooledFile]
    cache: store.Entry | None


def save(out_dir: Path, entry: store.Entry, folder: Path) -> None:
    """Once the output folder holds the router (`folder`): the pieces, with each data file's stamp taken now."""
    found = {name: stamps.of_path(folder / name) for name in entry.payload if name != _STAMPS}
    if not stamps.settle(found.values()):
        found = {}
    store.save(out_dir, KIND, store.Entry(entry.key, {**entry.payload, _STAMPS: found}, entry.blob))


def _well_formed(payload: Any) -> bool:
    return isinstance(payload, dict)
