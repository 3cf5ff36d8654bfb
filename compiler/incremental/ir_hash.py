"""The IR hash of a tool: every field of the tool plus the shared definitions its schemas reach, transitively
(the same information `RefResolver.bundle` copies into `$defs`), each definition hashed once per compile.

`toolc.lock` holds it per tool (`drift.lock`), and the lowering reuse keys each tool by it (`providers.reuse`):
the hash that says whether a tool changed for drift says whether its lowering may be reused.
Hashes are sha256 over `serialize.compact_json` (sorted keys), so key order never changes a hash.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from compiler.infra.serialize import compact_json
from compiler.ir import Catalog, Tool
from compiler.refs import local_def_name


def digest(data: Any) -> str:
    return "sha256:" + hashlib.sha256(compact_json(data)).hexdigest()


_REF = re.compile(rb'"\$ref":"((?:[^"\\]|\\.)*)"')


def _refs(encoded: bytes) -> set[str]:
    """The `$ref` strings in a compact JSON encoding (a string value that merely contains `"$ref":` is escaped
    there, so it cannot match)."""
    return {orjson.loads(b'"' + match + b'"') for match in _REF.findall(encoded)}


class ToolHasher:
    """Hashes the tools of one catalog in time linear in the size of its definitions.

    Each shared definition gets a *deep* hash that covers everything it reaches (a Merkle hash over the
    definition graph; the members of a reference cycle share one hash over the whole cycle). A tool's hash then
    covers its own encoding and the deep hashes of the definitions it refers to directly, so a change anywhere
    in what a tool reaches changes its hash, without walking each tool's closure (Stripe's responses reach
    ~400 definitions per tool)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._deep: dict[str, dict[str, str]] = {}

    def deep_hashes(self, source: str) -> dict[str, str]:
        if source not in self._deep:
            self._deep[source] = _deep_hashes(self.catalog.source(source).definitions)
        return self._deep[source]

    def ir_hash(self, tool: Tool) -> str:
        encoded = compact_json(tool)
        own = tool.input_schema.get("$defs") or {}
        deep = self.deep_hashes(tool.source)
        direct = {n for ref in _refs(encoded) if (n := local_def_name(ref)) is not None and n not in own}
        reached = {name: deep[name] for name in sorted(direct) if name in deep}
        return digest({"tool": hashlib.sha256(encoded).hexdigest(), "definitions": reached})


def _deep_hashes(definitions: Mapping[str, Any]) -> dict[str, str]:
    shallow: dict[str, str] = {}
    edges: dict[str, list[str]] = {}
    for name, schema in definitions.items():
        encoded = compact_json(schema)
        shallow[name] = hashlib.sha256(encoded).hexdigest()
        edges[name] = sorted({n for ref in _refs(encoded) if (n := local_def_name(ref)) is not None and n in definitions})
    deep: dict[str, str] = {}
    for component in _components(edges):  # children's components come first
        members = sorted(component)
        outside = sorted({deep[child] for name in members for child in edges[name] if child not in component})
        shared = hashlib.sha256(compact_json([[(n, shallow[n]) for n in members], outside])).hexdigest()
        for name in members:
            deep[name] = "sha256:" + hashlib.sha256(f"{name}\0{shared}".encode()).hexdigest()
    return deep


def _components(edges: Mapping[str, list[str]]) -> list[set[str]]:
    """Strongly connected components in reverse topological order (Tarjan's algorithm, iterative: a chain of
    thousands of definitions must not overflow the stack)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, position = work.pop()
            if position == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            children = edges[node]
            if position < len(children):
                work.append((node, position + 1))
                child = children[position]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                found.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def tool_hashes(catalog: Catalog, known: Callable[[Tool], str | None] = lambda tool: None) -> dict[str, str]:
    """`ToolHasher.ir_hash` of every tool, by id; `known` gives the hash of a tool that is the last compile's (the
    tools cache, `sources.reuse`: the same tool read from the same definitions), or None."""
    hasher = ToolHasher(catalog)
    return {tool.id: known(tool) or hasher.ir_hash(tool) for tool in catalog.tools}
