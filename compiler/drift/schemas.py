"""Reading a tool schema the way the RefResolver defines it, for comparison and hashing.

A tool schema sees its source's shared definitions as `#/$defs/<name>` (its own `$defs` win, as in
`refs.RefResolver.bundle`). The drift check follows `$ref`s lazily, one node at a time, instead of
inlining: a recursive schema is compared pair by pair with no depth cut, and nothing is expanded that both
sides share unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compiler.refs import PointerError, resolve_pointer, unescape_token

DEFS_PREFIX = "#/$defs/"
_MAX_HOPS = 64


def local_def_name(ref: str) -> str | None:
    """`#/$defs/a~1b` → `a/b`; None for any other reference."""
    if ref.startswith(DEFS_PREFIX) and "/" not in ref[len(DEFS_PREFIX):]:
        return unescape_token(ref[len(DEFS_PREFIX):])
    return None


class SchemaView:
    """One tool schema plus the shared definitions it can reach."""

    def __init__(self, root: Any, shared: Mapping[str, Any]) -> None:
        self.root = root
        own = root.get("$defs") if isinstance(root, Mapping) else None
        self.own: Mapping[str, Any] = own if isinstance(own, Mapping) else {}
        self.shared = shared

    def lookup(self, ref: str) -> Any:
        """The node `ref` names, or raise PointerError."""
        name = local_def_name(ref)
        if name is not None:
            if name in self.own:
                return self.own[name]
            if name in self.shared:
                return self.shared[name]
            raise PointerError(f"{ref}: no definition {name!r}")
        if ref.startswith(DEFS_PREFIX):
            overlay = {**dict(self.root), "$defs": {**self.shared, **self.own}}
            return resolve_pointer(overlay, ref)
        return resolve_pointer(self.root, ref)

    def deref(self, node: Any) -> tuple[Any, str]:
        """Follow a `$ref` chain. Sibling keywords next to a `$ref` win over the target's. Returns the node and
        the first reference followed ("" when none). An unresolvable reference is returned as it is."""
        first = ""
        for _ in range(_MAX_HOPS):
            if not isinstance(node, Mapping) or not isinstance(node.get("$ref"), str):
                return node, first
            ref = node["$ref"]
            first = first or ref
            try:
                target = self.lookup(ref)
            except PointerError:
                return node, first
            siblings = {key: value for key, value in node.items() if key != "$ref"}
            node = {**target, **siblings} if siblings and isinstance(target, Mapping) else target
        return node, first

    def resolved(self, node: Any, depth: int = 0) -> tuple[Any, str]:
        """`deref`, then `allOf` merged into one node (its own keywords first, then each branch's; `properties`
        merged, `required` united), so `$ref: X` and `allOf: [{$ref: X}, {extra}]` compare as X against X+extra."""
        node, ref = self.deref(node)
        if not isinstance(node, Mapping) or not isinstance(node.get("allOf"), list) or depth > 16:
            return node, ref
        merged = {key: value for key, value in node.items() if key != "allOf"}
        properties = dict(merged.get("properties") or {})
        required = list(merged.get("required") or [])
        for branch in node["allOf"]:
            part, _ = self.resolved(branch, depth + 1)
            if not isinstance(part, Mapping):
                return node, ref
            for key, value in part.items():
                if key == "properties" and isinstance(value, Mapping):
                    properties = {**value, **properties}
                elif key == "required" and isinstance(value, list):
                    required += [name for name in value if name not in required]
                else:
                    merged.setdefault(key, value)
        if properties:
            merged["properties"] = properties
        if required:
            merged["required"] = required
        return merged, ref


RefsCache = dict[int, tuple[Any, frozenset[str]]]
"""id(node) → (node, its refs). Holding the node keeps its id from being reused by another object."""


def refs_in(node: Any, cache: RefsCache) -> frozenset[str]:
    """Every `$ref` string under `node` (memoised by object identity: IR schemas are not mutated)."""
    key = id(node)
    found = cache.get(key)
    if found is not None and found[0] is node:
        return found[1]
    refs: set[str] = set()
    if isinstance(node, Mapping):
        ref = node.get("$ref")
        if isinstance(ref, str):
            refs.add(ref)
        for value in node.values():
            if isinstance(value, Mapping | list):
                refs |= refs_in(value, cache)
    elif isinstance(node, list):
        for value in node:
            if isinstance(value, Mapping | list):
                refs |= refs_in(value, cache)
    result = frozenset(refs)
    cache[key] = (node, result)
    return result


def reachable_definitions(schema: Any, shared: Mapping[str, Any], cache: RefsCache) -> list[str]:
    """The shared definitions `schema` reaches, transitively, sorted: what `bundle` would copy into `$defs`."""
    view = SchemaView(schema, shared)
    seen: set[str] = set()
    pending = [ref for ref in refs_in(schema, cache)]
    while pending:
        name = local_def_name(pending.pop())
        if name is None or name in seen or name in view.own or name not in shared:
            continue
        seen.add(name)
        pending.extend(refs_in(shared[name], cache))
    return sorted(seen)


def dirty_definitions(old: Mapping[str, Any], new: Mapping[str, Any],
                      cache: RefsCache) -> frozenset[str]:
    """Definition names whose meaning may differ between `old` and `new`: changed, added or removed, or reaching
    such a definition (or anything but a `#/$defs/` reference). Every other name is unchanged, closure included."""
    missing = object()
    names = set(old) | set(new)
    dirty = {name for name in names if old.get(name, missing) != new.get(name, missing)}
    users: dict[str, set[str]] = {}
    for name in names:
        for side in (old, new):
            if name not in side:
                continue
            for ref in refs_in(side[name], cache):
                target = local_def_name(ref)
                if target is None:
                    dirty.add(name)
                else:
                    users.setdefault(target, set()).add(name)
    pending = list(dirty)
    while pending:
        for user in users.get(pending.pop(), ()):
            if user not in dirty:
                dirty.add(user)
                pending.append(user)
    return frozenset(dirty)
