"""Reading a tool schema the way the RefResolver defines it (its scope rules, `schema.merge_all_of`), for
comparison and hashing.

A tool schema sees its source's shared definitions as `#/$defs/<name>` (its own `$defs` win, as in
`refs.RefResolver.bundle`). The drift check follows `$ref`s lazily, one node at a time, instead of
inlining: a recursive schema is compared pair by pair with no depth cut, and nothing is expanded that both
sides share unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compiler.refs import PointerError, RefResolver, local_def_name
from compiler.refs.scope import Failure
from compiler.schema import IdentityMemo, merge_all_of

_MAX_HOPS = 64


class SchemaView:
    """One tool schema plus the shared definitions it can reach, resolved by the shared resolver's scope rules
    (`RefResolver.scope`): own `$defs` over shared ones, any JSON pointer, `$id`s and anchors."""

    def __init__(self, root: Any, shared: Mapping[str, Any]) -> None:
        self.root = root
        self.scope = RefResolver.scope(root, shared)
        self.own: Mapping[str, Any] = self.scope.own_defs
        self.shared = shared

    def lookup(self, ref: str) -> Any:
        """The node `ref` names, or raise PointerError."""
        found = self.scope.resolve(ref, self.scope.root_base)
        if isinstance(found, Failure):
            raise PointerError(found.message)
        return found.node

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
        """`deref`, then `allOf` merged into one node (`schema.merge_all_of`), so `$ref: X` and
        `allOf: [{$ref: X}, {extra}]` compare as X against X+extra."""
        node, ref = self.deref(node)
        if not isinstance(node, Mapping) or depth > 16:
            return node, ref
        return merge_all_of(node, lambda branch: self.resolved(branch, depth + 1)[0]), ref


RefsCache = IdentityMemo[frozenset[str]]
"""The `$ref` strings under each node, by node identity."""


def refs_in(node: Any, cache: RefsCache) -> frozenset[str]:
    """Every `$ref` string under `node` (memoised by object identity: IR schemas are not mutated)."""
    found = cache.get(node)
    if found is not None:
        return found
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
    return cache.put(node, frozenset(refs))


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
