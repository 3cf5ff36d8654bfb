"""Per generated module: ruff's formatting of the last compile, reused when the module is the same but for the
sha256 digests it quotes (issue 27: one changed description must not format Microsoft Graph's 45 MB of stubs
again).

Every stub module's first lines name its whole source (`sha256:<hex>` of the input, which any change to any tool
changes), so after one changed description every module differs from the last compile's, yet only by that digest.
A module is keyed by its text with every `sha256:<64 hex>` in it set to zeros; on a hit, this compile's digests
go, in order, where the last compile's formatted module had its own. That gives ruff's own bytes because a digest
is opaque to the formatter: as long, of the same characters, inside a comment or a string, it moves no line
break and no quote. An entry is kept only when the formatted module quotes the same digests in the same order as
the module it was formatted from (otherwise there is nothing to put back safely), and a hit reads the last
compile's formatted module from the output folder, checked against the sha256 the entry recorded (a file edited
since is formatted again).

One file per output folder (`.toolc-cache/<output>.format.json`: module path → [key, sha256 of the formatted
module]), holding only this compile's modules; toolc's identity (ruff's version among its libraries) is in the
store's envelope, so another toolc's formatting is never reused.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from compiler.incremental import store
from compiler.infra.diagnostics import Diagnostics

KIND = "format"
_VERSION = "1"
_DIGEST = re.compile(rb"sha256:[0-9a-f]{64}")
_ZEROS = b"sha256:" + b"0" * 64


def _sha256(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def digest_key(content: bytes) -> str:
    """The key of `content`'s formatting: its sha256 with every digest it quotes zeroed."""
    return _sha256(_DIGEST.sub(_ZEROS, content))


def with_digests(formatted: bytes, content: bytes) -> bytes | None:
    """`formatted` (a module formatted from text keyed as `content` is) with `content`'s digests in place of its
    own, in order; None when they are not as many."""
    pieces = _DIGEST.split(formatted)
    digests = _DIGEST.findall(content)
    if len(pieces) != len(digests) + 1:
        return None
    return b"".join(piece + digest for piece, digest in zip(pieces, [*digests, b""], strict=True))


def same_digests(formatted: bytes, content: bytes) -> bool:
    """Whether `formatted` quotes `content`'s digests in the same order (else none can be put back safely)."""
    return _DIGEST.findall(formatted) == _DIGEST.findall(content)


class FormatReuse:
    """One compile's reuse of formatted modules: `get` each, format the rest and `put` them, then `save`.
    `previous`: the output folder as the last compile left it (its `python/` files, read only on a hit)."""

    def __init__(self, out_dir: Path, previous: Mapping[str, bytes], diagnostics: Diagnostics) -> None:
        self._out_dir, self._folder = out_dir, previous
        entry = store.load(out_dir, KIND, diagnostics, _well_formed)
        self._previous: dict[str, Any] = entry.payload if entry is not None and entry.key == _VERSION else {}
        self._now: dict[str, list[str]] = {}

    def get(self, path: str, content: bytes) -> bytes | None:
        """The formatted `content` of `path` (under `python/`), or None when it has to be formatted."""
        item = self._previous.get(path)
        if not (isinstance(item, list) and len(item) == 2 and item[0] == digest_key(content)):
            return None
        try:
            formatted = self._folder[f"python/{path}"]
        except (KeyError, OSError):
            return None
        if _sha256(formatted) != item[1]:
            return None  # edited since (or another compile's): formatted again
        made = with_digests(formatted, content)
        if made is None:
            return None
        self._now[path] = [item[0], _sha256(made)]
        return made

    def put(self, path: str, content: bytes, formatted: bytes) -> None:
        if same_digests(formatted, content):
            self._now[path] = [digest_key(content), _sha256(formatted)]

    def save(self) -> None:
        store.save(self._out_dir, KIND, store.Entry(_VERSION, self._now))


def _well_formed(payload: Any) -> bool:
    return isinstance(payload, dict)
