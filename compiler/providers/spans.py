"""A target's tools array as spans of one file: the lowering worker writes `schemas/<target>.json` one definition
at a time and records where each definition sits and what it costs in tokens; the fit stage then cuts toolset
arrays out of that file by byte range and adds up their tokens, never decoding the file nor encoding a tool again
(on Microsoft Graph, that decoding and re-encoding was most of a compile).

`canonical_json(tools_array(target, definitions))` is a frame (`head`, `sep` between definitions, `tail`) around
each definition's canonical encoding re-indented to the frame's column (`pad`): JSON strings hold no raw newline,
so indenting after every newline is exact. Token counts add up because no o200k_base token crosses a line break
of canonical JSON (`tokens.count_bytes`): an array costs its frame with every definition cut to its first and
last line (`shell`), plus each definition's other lines as indented in the array (`Span.inner`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import orjson

from compiler.build import Layout, Span
from compiler.infra.serialize import canonical_json, compact_json
from compiler.providers import tokens
from compiler.providers.dialect import Lowered
from compiler.providers.registry import PROVIDERS

_ITEM = "\u0000toolc-definition\u0000"


@dataclass(frozen=True)
class Frame:
    head: bytes
    sep: bytes
    tail: bytes
    pad: bytes
    """The spaces before every line of a definition inside the array but its first."""

    @property
    def shell(self) -> bytes:
        """A definition of the array cut to its first and last line (every definition is a multi-line object)."""
        return b"{\n" + self.pad + b"}"


@cache
def frame(target: str) -> Frame:
    """The array's skeleton: the canonical encoding of the same array holding one placeholder string."""
    skeleton = canonical_json(PROVIDERS[target].tools_array([_ITEM]))  # type: ignore[list-item]
    head, tail = skeleton.split(orjson.dumps(_ITEM))
    pad = b" " * (len(head) - head.rfind(b"\n") - 1)
    return Frame(head, b",\n" + pad, tail, pad)


def empty(target: str) -> bytes:
    """The array of no definitions (not a frame around nothing: `[]`, or no Tool at all for Gemini)."""
    return canonical_json(PROVIDERS[target].tools_array([]))


class Measure(NamedTuple):
    """What `write_array` computes of a definition besides its bytes: its lock digest and tokens (`Span`)."""

    digest: str
    tokens: int
    inner: int
    placed_sha256: str
    """sha256 of the definition's bytes as placed (`Placed.content`): the lowering cache checks the bytes it
    copies from the last compile's tools file against it (`reuse.py`)."""


class Placed(NamedTuple):
    """A definition as a previous compile placed it in this target's array (the lowering cache's), and its measure."""

    content: bytes | memoryview
    measure: Measure


def write_array(path: Path, target: str, ordered: Sequence[Lowered], known: Mapping[str, Placed] | None = None,
                *, hashed: bool = True) -> tuple[dict[str, Measure], Layout]:
    """Write `canonical_json(tools_array(target, definitions))` to `path` one definition at a time (a big API's
    array is hundreds of MB: never held as one `bytes`). Returns each definition's measure (its lock digest among
    them) by tool id, and the layout.
    `known`: definitions already placed and measured (by the lowering cache, or by the worker that lowered them:
    copied, never encoded or counted again). `hashed`: the file's sha256 is wanted (the file goes into the
    output); without it (a file in the lowering cache alone, read by spans) the file is not hashed whole and the
    layout has no sha256."""
    known = known or {}
    path.unlink(missing_ok=True)  # a new file, never one linked into the lowering cache rewritten in place
    if not ordered:
        path.write_bytes(empty(target))
        return {}, Layout(target, {}, "sha256:" + hashlib.sha256(empty(target)).hexdigest() if hashed else "")
    shape = frame(target)
    measures: dict[str, Measure] = {}
    spans: dict[str, Span] = {}
    with path.open("wb") as handle:
        out = _HashedWriter(handle, hashed=hashed)
        out.write(shape.head)
        for index, item in enumerate(ordered):
            placed = known.get(item.tool.id) or place(item, target)
            measures[item.tool.id] = placed.measure
            if index:
                out.write(shape.sep)
            spans[item.tool.id] = Span(out.offset, len(placed.content), placed.measure.tokens, placed.measure.inner)
            out.write(placed.content)
        out.write(shape.tail)
    return measures, Layout(target, spans, out.sha256())


class _HashedWriter:
    """A file written and hashed in one pass: the lowering cache and the project record take its sha256 from
    here instead of reading hundreds of MB back. Without `hashed`, only written."""

    def __init__(self, out: BinaryIO, *, hashed: bool) -> None:
        self.out, self.digest, self.offset = out, hashlib.sha256() if hashed else None, 0

    def write(self, content: bytes | memoryview) -> None:
        if self.digest is not None:
            self.digest.update(content)
        self.out.write(content)
        self.offset += len(content)

    def sha256(self) -> str:
        """`sha256:<hex>` of what was written, or empty when not hashed."""
        return "" if self.digest is None else "sha256:" + self.digest.hexdigest()


@cache
def _line_ends(target: str) -> int:
    """Tokens of a definition's first and last line as indented in the array (`Measure.inner` leaves them out)."""
    pad = frame(target).pad
    return tokens.line_count(pad + b"{") + tokens.line_count(pad + b"}")


@cache
def _nesting(target: str) -> tuple[int, int, int]:
    """(depth, head, tail): a definition wrapped in `depth` lists is encoded indented to the array's column, as it
    is placed, between `head` and `tail` bytes; orjson indents it there, where re-indenting its encoding copied
    every byte again (a tenth of placing Microsoft Graph's 700 MB of definitions)."""
    pad = frame(target).pad
    depth = len(pad) // 2
    skeleton = orjson.dumps(_nested(0, depth), option=orjson.OPT_INDENT_2)
    head, tail = skeleton.split(b"0")
    if not head.endswith(b"\n" + pad):
        raise ValueError(f"{target}: its array's column is not a list's")  # two spaces a level: never happens
    return depth, len(head), len(tail)


def _nested(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = [value]
    return value


def place(item: Lowered, target: str) -> Placed:
    """A definition as it sits in the array (its lines indented to the array's column) and its measure."""
    depth, head, tail = _nesting(target)
    nested = orjson.dumps(_nested(item.definition, depth), option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
    content = nested[head:len(nested) - tail]
    if not content.startswith(b"{\n"):
        raise ValueError(f"{item.tool.id}: an empty definition for {target}")  # lowering never makes one
    own, padded = tokens.count_placed(content, frame(target).pad)
    digest = "sha256:" + hashlib.sha256(compact_json(item.definition)).hexdigest()
    return Placed(content, Measure(digest, own, padded - _line_ends(target), hashlib.sha256(content).hexdigest()))


def array_chunks(layout: Layout, source: BinaryIO, tool_ids: Sequence[str]) -> Iterator[bytes]:
    """The canonical tools array of `tool_ids` (in that order), in pieces, read from the layout's own file."""
    if not tool_ids:
        yield empty(layout.target)
        return
    shape = frame(layout.target)
    yield shape.head
    for index, tool_id in enumerate(tool_ids):
        span = layout.spans[tool_id]
        if index:
            yield shape.sep
        source.seek(span.offset)
        yield source.read(span.length)
    yield shape.tail


def array_bytes(layout: Layout) -> int:
    """The size of the tools array of every definition of `layout`, in its order (what `write_array` writes)."""
    if not layout.spans:
        return len(empty(layout.target))
    shape = frame(layout.target)
    return (len(shape.head) + sum(span.length for span in layout.spans.values())
            + len(shape.sep) * (len(layout.spans) - 1) + len(shape.tail))


def array_tokens(layout: Layout, tool_ids: Iterable[str]) -> int:
    """Tokens of the array `array_chunks` gives, exactly as one count of its bytes."""
    ids = list(tool_ids)
    if not ids:
        return tokens.count_bytes(empty(layout.target))
    shape = frame(layout.target)
    skeleton = shape.head + shape.sep.join([shape.shell] * len(ids)) + shape.tail
    return tokens.count_bytes(skeleton) + sum(layout.spans[tool_id].inner for tool_id in ids)
