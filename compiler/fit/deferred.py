"""A provider's own deferred loading, written as its `tools` argument, sendable as is (`schemas/<target>.deferred.json`).

    OpenAI Responses   [{"type": "tool_search"}, {"type": "namespace", "name", "description", "tools": [function
                       definitions with "defer_loading": true]}, ...]: the model sees the namespaces' names and
                       descriptions until it searches; a loaded function keeps its schema and `strict` flag, so the
                       provider still enforces it
    Claude             [the tool search tool, every tool with "defer_loading": true]: the model sees only the search
                       tool until it searches; written while it fits a request (`Deferral.max_bytes`, `max_tools`),
                       else left out with TC773, which points to the toolset files

A dialect says how through `Dialect.deferral`. The file is made from the target's tools file without decoding it
(a big API's is hundreds of MB): a skeleton of the array is encoded with a placeholder per definition, and each
placeholder is replaced by the definition's bytes (`spans.py`), re-indented to its column, with the
`"defer_loading": true` line added first (canonical JSON sorts keys, and that key sorts before every key a
definition has). The result is the bytes `canonical_json` would write for the decoded value.

What the model sees at the start of a request (`start_tokens`) is counted on the view the provider shows before any
search (the search tool, and each namespace's type, name and description), as the SDK sends it: compact JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

import orjson

from compiler.build import Layout
from compiler.fit.namespaces import Namespace
from compiler.infra.serialize import canonical_json
from compiler.ir import JsonObject
from compiler.providers import tokens
from compiler.providers.dialect import Deferral
from compiler.providers.spans import frame

_PLACEHOLDER = re.compile(rb'"\\u0000toolc-deferred:(\d+)\\u0000"')
_DEFER_KEY = "defer_loading"
_FIRST_KEY = re.compile(rb'\{\n *("(?:[^"\\]|\\.)*"):')


@dataclass(frozen=True)
class DeferredForm:
    tool_ids: list[str]
    """In file order."""
    skeleton: list[Any]
    """The array, each definition a placeholder string."""
    view: list[JsonObject]
    """What the model sees before it searches."""
    groups: int


def _placeholder(index: int) -> str:
    return f"\u0000toolc-deferred:{index}\u0000"


def plan(deferral: Deferral, tool_ids: Sequence[str], namespaces: Sequence[Namespace]) -> DeferredForm:
    """The array's shape: the search tool, then the definitions (in namespaces when the provider groups them)."""
    search = dict(deferral.search_tool)
    if deferral.group_type is None:
        ids = list(tool_ids)
        return DeferredForm(ids, [search, *(_placeholder(i) for i in range(len(ids)))], [search], 0)
    wanted = set(tool_ids)
    ids = []
    skeleton: list[Any] = [search]
    view: list[JsonObject] = [search]
    for namespace in namespaces:
        members = [tool_id for tool_id in namespace.tool_ids if tool_id in wanted]
        if not members:
            continue
        head = {"type": deferral.group_type, "name": namespace.name, "description": namespace.description}
        skeleton.append({**head, "tools": [_placeholder(len(ids) + i) for i in range(len(members))]})
        view.append(head)
        ids.extend(members)
    assert len(ids) == len(wanted), "a tool in no namespace"  # every tool is in a toolset, so in a namespace
    return DeferredForm(ids, skeleton, view, len(view) - 1)


def start_tokens(form: DeferredForm) -> int:
    """Tokens of what the model sees before it searches, as the SDK sends it (compact JSON)."""
    return tokens.count_text(json.dumps(form.view, separators=(",", ":"), ensure_ascii=False, sort_keys=True))


def chunks(form: DeferredForm, layout: Layout, source: BinaryIO) -> Iterator[bytes]:
    """`canonical_json` of the array, each definition marked `defer_loading: true`, in pieces."""
    skeleton = canonical_json(form.skeleton)
    pad = frame(layout.target).pad
    at = 0
    for match in _PLACEHOLDER.finditer(skeleton):
        yield skeleton[at:match.start()]
        column = match.start() - skeleton.rfind(b"\n", 0, match.start()) - 1
        span = layout.spans[form.tool_ids[int(match.group(1))]]
        source.seek(span.offset)
        yield deferred_definition(source.read(span.length), pad, column)
        at = match.end()
    yield skeleton[at:]


def deferred_definition(placed: bytes, pad: bytes, column: int) -> bytes:
    """A definition as placed in its tools file (lines after the first indented by `pad`), re-indented to start at
    `column`, with `"defer_loading": true` as its first key."""
    key = _FIRST_KEY.match(placed)
    if key is None or orjson.loads(key.group(1)) <= _DEFER_KEY:
        raise ValueError("a definition whose first key sorts before defer_loading")  # no dialect writes one
    indent = b" " * (column - len(pad))
    body = placed.replace(b"\n", b"\n" + indent)
    return b"{\n" + b" " * (column + 2) + f'"{_DEFER_KEY}": true,'.encode() + body[1:]
