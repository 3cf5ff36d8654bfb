"""One source's tool schemas bundled for the models, its shared definitions held once.

`RefResolver.bundle` makes each tool schema self-contained: its `$defs` carry every definition the tool reaches,
and for the source's shared definitions (OpenAPI components) the resolver's memo hands every tool the same
objects. Keeping those per tool and cleaning them per tool (`patterns.drop_bad_patterns`) walked Microsoft
Graph's entity graph once per operation (11k times, most of the stubs' time). Here a shared definition is taken
once, the first time a tool reaches it, cleaned once, and goes into the source's `shared` table; each tool's
request keeps only the definitions that are its own:

    tool schema ──bundle──► {body, $defs: {shared…, own…}} ──► request {body, $defs: {own…}}
                                                     └──────► shared[name] (first sight, cleaned once)

A definition of the tool's bundle stays the tool's own when its name is not a shared definition's, when it is
not the first-seen one (same object, or equal), or when it refers to one of the tool's own definitions (a
definition pointing at something that differs per tool differs too). `models.combine(requests, shared)` then
builds the same table as combining the whole bundles did (tests/codegen/test_bundling.py checks it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from compiler.codegen.stubs.models import references
from compiler.codegen.stubs.patterns import DroppedPattern, drop_bad_patterns
from compiler.refs import escape_token


@dataclass
class Bundled:
    schema: dict[str, Any]
    """The tool's schema with only its own `$defs` (refs to shared definitions point into `SharedDefinitions`)."""
    introduces: tuple[str, ...]
    """Shared definitions this tool reached first: `combine` adds them to the table when it reaches the tool, so
    names are taken in the same order as when every tool carried its whole bundle."""
    dropped: list[DroppedPattern]
    """Patterns dropped from the tool's own parts and from the shared definitions it introduces."""


@dataclass
class SharedDefinitions:
    names: frozenset[str]
    """Names a shared definition may have: the source's definitions, less the tool models' names (a definition
    named like a tool model is renamed by `combine`, so it stays a tool's own)."""
    raw: dict[str, Any] = field(default_factory=dict)
    """Name → the bundled definition as first seen (the object the resolver's memo hands out)."""
    cleaned: dict[str, Any] = field(default_factory=dict)
    """Name → that definition without the patterns the models would refuse: the table `combine` takes."""
    own_first: set[str] = field(default_factory=set)
    """Names first seen referring to a tool's own definitions: never shared (each tool keeps its copy)."""
    _refs: dict[str, frozenset[str]] = field(default_factory=dict)
    _referenced: set[str] = field(default_factory=set)
    """Every name some shared definition refers to."""

    def split(self, bundled: Mapping[str, Any], pointer: str) -> Bundled:
        """`bundled` (a whole tool bundle) without its shared definitions; those seen for the first time are
        recorded here."""
        defs = bundled.get("$defs")
        if not isinstance(defs, Mapping) or not defs:
            cleaned, found = drop_bad_patterns(bundled, pointer)
            return Bundled(cleaned, (), found)
        shared: set[str] = set()
        new: dict[str, frozenset[str]] = {}
        for name, node in defs.items():
            if name not in self.names or name in self.own_first:
                continue
            first = self.raw.get(name)
            if first is None:
                new[name] = frozenset(references(node))
                shared.add(name)
            elif first is node or first == node:
                shared.add(name)
        own = set(defs) - shared
        if own & (self._referenced.union(*new.values())):  # rare: a shared name refers to a tool's own one
            changed = True
            while changed:
                changed = False
                for name in sorted(shared):
                    if (new[name] if name in new else self._refs[name]) & own:
                        shared.discard(name)
                        own.add(name)
                        changed = True
        dropped: list[DroppedPattern] = []
        for name in new:
            if name in shared:
                self._take(name, defs[name], new[name], f"{pointer}/$defs/{escape_token(name)}", dropped)
            else:
                self.own_first.add(name)
        body = {key: value for key, value in bundled.items() if key != "$defs"}
        if own:
            body["$defs"] = {name: defs[name] for name in defs if name in own}
        cleaned, more = drop_bad_patterns(body, pointer)
        return Bundled(cleaned, tuple(name for name in new if name in shared), dropped + more)

    def _take(self, name: str, node: Any, refs: frozenset[str], pointer: str, dropped: list[DroppedPattern]) -> None:
        self.raw[name] = node
        cleaned, found = drop_bad_patterns(node, pointer)
        self.cleaned[name] = cleaned
        dropped.extend(found)
        self._refs[name] = refs
        self._referenced |= refs
