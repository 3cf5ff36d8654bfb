"""A module made of a head and pieces of whole top-level function definitions (a source's tools.py: its docstring
and imports, then its functions, `stub_functions.PIECE` at a time) formatted piece by piece, each piece the last
compile formatted taken from its output (issue 27: one changed description formatted Microsoft Graph's 22 MB
tools.py whole again, 0.5 s of ruff).

Why the bytes are ruff's for the whole module: ruff formats each top-level statement on its own, and what joins
two of them is the blank lines between, two before a top-level function definition whatever precedes it. So the
module formatted whole is its head formatted, then for each piece two newlines and the piece formatted as a
module of its own (its leading newlines dropped). The tests compare the two on every document the stub tests
compile (`tests/codegen/test_piece_format.py`). A module whose pieces are not only generated functions (a
carried-over `# toolc: keep` edit, with its comments) is never formatted this way: it is formatted whole.

Reuse: a piece is keyed by its text with every `sha256:<64 hex>` zeroed (the head quotes the source's digest,
which any change to any tool changes; `format_reuse` says why a digest never moves a line break), and kept as a
byte range of the formatted module the last compile wrote (`.toolc-cache/<output>.piece-format.json`: module
path → [[key, offset, length, sha256], …] in order). A range is read from the output folder's module, checked
against its sha256 (a module edited or replaced since gives a miss: the piece is formatted again) and given
this compile's digests. toolc's identity (ruff's version among its libraries) is in the store's envelope.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler.codegen import formatting
from compiler.codegen.format_reuse import digest_key, same_digests, with_digests
from compiler.incremental import store
from compiler.infra.diagnostics import Diagnostics

KIND = "piece-format"
_VERSION = "1"
_JOIN = b"\n\n"
"""Between a formatted piece and the next (each ends with one newline): two blank lines in all."""

Pieced = Sequence[str]
"""A module as its head and its pieces of functions, in order: the module is their concatenation."""


@dataclass(frozen=True)
class PiecedFiles:
    files: dict[str, bytes]
    """Path (under `python/`) → content, not yet formatted."""
    pieced: dict[str, Pieced]
    """Modules of `files` as their head and pieces of whole functions, formatted piece by piece (`PieceFormats`)."""


class PieceFormats:
    """One compile's formatting of pieced modules: `format` them, then `save` (with the output folder).
    `out_dir`: the output folder (its cache beside it), None for no reuse; `previous`: the output folder as the
    last compile left it (read only on a hit)."""

    def __init__(self, out_dir: Path | None, previous: Mapping[str, bytes], diagnostics: Diagnostics) -> None:
        self._out_dir, self._folder = out_dir, previous
        entry = store.load(out_dir, KIND, diagnostics, _well_formed) if out_dir is not None else None
        self._previous: dict[str, Any] = entry.payload if entry is not None and entry.key == _VERSION else {}
        self._now: dict[str, list[list[Any]]] = {}

    def format(self, modules: Mapping[str, Pieced]) -> dict[str, bytes]:
        """Each module (path under `python/` → its pieces) formatted: pieces from the last compile where they
        check out, the rest in one ruff run."""
        contents = {path: [piece.lstrip("\n").encode() for piece in pieces] for path, pieces in modules.items()}
        keys = {path: [digest_key(content) for content in found] for path, found in contents.items()}
        reused = {path: self._reused(path, pieces, keys[path]) for path, pieces in modules.items()}
        missing = {f"{index:06d}/{path}": contents[path][index]
                   for path in modules for index, piece in enumerate(reused[path]) if piece is None}
        made = formatting.run_ruff(missing) if missing else {}
        out: dict[str, bytes] = {}
        for path in modules:
            formatted = [piece if piece is not None else made[f"{index:06d}/{path}"]
                         for index, piece in enumerate(reused[path])]
            out[path] = _JOIN.join(formatted).rstrip(b"\n") + b"\n"  # one final newline, as every module has
            self._record(path, contents[path], keys[path], formatted)
        return out

    def _reused(self, path: str, pieces: Pieced, keys: list[str]) -> list[bytes | None]:
        """Each piece's formatting from the last compile's module at `path`, or None where it has to be made
        (`keys`: each piece's `digest_key`)."""
        ranges = _ranges(self._previous.get(path))
        if not ranges:
            return [None] * len(pieces)
        try:
            old = self._folder[f"python/{path}"]
        except (KeyError, OSError):
            return [None] * len(pieces)
        return [_piece(old, ranges.get(key), piece) for piece, key in zip(pieces, keys, strict=True)]

    def _record(self, path: str, contents: list[bytes], keys: list[str], formatted: list[bytes]) -> None:
        rows: list[list[Any]] = []
        offset = 0
        for content, key, made in zip(contents, keys, formatted, strict=True):
            if same_digests(made, content):  # else no digest could be put back safely: not kept
                rows.append([key, offset, len(made), _sha256(made)])
            offset += len(made) + len(_JOIN)
        self._now[path] = rows

    def save(self) -> None:
        if self._out_dir is not None:
            store.save(self._out_dir, KIND, store.Entry(_VERSION, self._now))


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _ranges(rows: Any) -> dict[str, tuple[int, int, str]]:
    """Piece key → (offset, length, sha256) of a well-formed entry; empty for anything else."""
    if not isinstance(rows, list):
        return {}
    found: dict[str, tuple[int, int, str]] = {}
    for row in rows:
        if not (isinstance(row, list) and len(row) == 4):
            return {}
        key, offset, length, sha = row
        if not (isinstance(key, str) and type(offset) is int and type(length) is int and isinstance(sha, str)
                and offset >= 0 and length >= 0):
            return {}
        found[key] = (offset, length, sha)
    return found


def _piece(old: bytes, where: tuple[int, int, str] | None, piece: str) -> bytes | None:
    """The formatted piece at `where` in `old` with `piece`'s digests, when it is there and still hashes as it did."""
    if where is None:
        return None
    offset, length, sha = where
    data = old[offset:offset + length]
    if len(data) != length or _sha256(data) != sha:
        return None
    return with_digests(data, piece.encode())


def _well_formed(payload: Any) -> bool:
    return isinstance(payload, dict)
