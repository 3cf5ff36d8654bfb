"""Output files the last compile wrote, kept as they are when this compile would write the same bytes.

A big API's toolset files and deferred forms (Microsoft Graph: 580 files, ~850 MB) are byte ranges of its tools
files put in a frame, so what a file will hold is known before it is made: its recipe, the hash of its frame and
of the lock digests of the definitions it holds, in order. A compile records each such file's recipe and sha256
(`.toolc-cache/<output>.kept-files.json`); the next one, finding the same recipe for a path, hashes the file the
output folder holds there and, when it still has the recorded sha256, takes it as it is (`FileSet.keep`: linked
into the new output). Nothing is copied out of the tools file, written to the spool, or freed with the old
folder (a recompile that changes one description changes 4 of Graph's 580 toolset files; copying the other 576,
writing them and deleting the old ones cost more than hashing them).

The recipe is the whole key: a definition's bytes in a target's array are its digest's JSON encoded by the
target's frame, and the frame is toolc's (the envelope's identity). A file edited since the last compile no longer
has its sha256 and is made again; a record that is not ours is ignored with a TC140 note (`store`). Each file's
stamp is recorded too, as the output folder is written (`incremental.stamps`): a file that still has it is not
read again to prove its sha256 (Graph: 576 files, 676 MB, hashed on every recompile before).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from compiler.incremental import stamps, store
from compiler.incremental.project import stream_digest
from compiler.infra.diagnostics import Diagnostics

KIND = "kept-files"
_FORMAT = "2"


def recipe(parts: Iterable[str]) -> str:
    """The key of a file made of `parts` (its frame's hash, then its definitions' digests, in order)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


class Kept(NamedTuple):
    """A file of the last compile's output folder this compile takes as it is."""

    path: Path
    digest: str
    """`sha256:<hex>` of its bytes, checked just now."""


class KeptFiles:
    """One compile's view of the record: `find` what the last compile made from the same recipe, `record` what this
    one made, `save` when its output folder is in place."""

    def __init__(self, out_dir: Path | None, diagnostics: Diagnostics) -> None:
        """Without `out_dir` nothing is found, and nothing is saved."""
        self._out_dir = out_dir
        entry = store.load(out_dir, KIND, diagnostics, _well_formed) if out_dir is not None else None
        self._previous: dict[str, Any] = entry.payload if entry is not None and entry.key == _FORMAT else {}
        self._sealed = entry is not None and entry.sealed
        """The record is as the last compile wrote it: the stamps it holds can be relied on."""
        self._now: dict[str, list[str]] = {}

    def find(self, path: str, file_recipe: str) -> Kept | None:
        """The output folder's file at `path` when the last compile made it from `file_recipe` and it still hashes
        as it did then; None otherwise (then the file is made)."""
        recorded = self._previous.get(path)
        if self._out_dir is None or recorded is None or recorded[0] != file_recipe:
            return None
        existing = self._out_dir.resolve() / path
        _recipe, digest, stamp = recorded
        if self._sealed and stamp and stamps.of_path(existing) == stamp:
            return Kept(existing, digest)  # not written since it was recorded: its sha256 holds
        return Kept(existing, digest) if stream_digest(existing) == digest else None

    def record(self, path: str, file_recipe: str, digest: str) -> None:
        self._now[path] = [file_recipe, digest, ""]

    def save(self) -> None:
        """Called once the output folder holds this compile's files (`Build.saved_with_output`): each file's
        stamp is taken now, where it lies (none at all when the clock cannot vouch for them)."""
        if self._out_dir is None:
            return
        folder = self._out_dir.resolve()
        found = {path: stamps.of_path(folder / path) for path in self._now}
        settled = stamps.settle(found.values())
        for path, row in self._now.items():
            row[2] = found[path] if settled else ""
        if self._now != self._previous or not self._sealed:  # a record that lost its seal is sealed again
            store.save(self._out_dir, KIND, store.Entry(_FORMAT, self._now))


def _well_formed(payload: Any) -> bool:
    return isinstance(payload, dict) and all(
        isinstance(row, list) and len(row) == 3 and all(isinstance(part, str) for part in row)
        for row in payload.values())
