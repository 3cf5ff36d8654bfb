"""Compare two catalogs tool by tool: pair the tools (by name or id, then renames), and classify every change.

Renames are found in this order, each pairing only when it is one to one: same HTTP binding (method + path),
the same name once case and separators are ignored (`getTinyImage` / `get-tiny-image`), the same non-empty
input shape (property names, types and `required`), and the same shape with one name's words inside the
other's (`longRunningOperation` / `trigger-long-running-operation`). Anything else is a removal plus an addition.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from compiler.drift.canonical import canonical_tools
from compiler.drift.rules import AUDIENCES, RULES, Change, Level
from compiler.drift.schema_diff import SchemaDiff
from compiler.drift.schemas import RefsCache, SchemaView, dirty_definitions
from compiler.infra.serialize import compact_json
from compiler.ir import Annotations, Catalog, HttpBinding, Tool
from compiler.schema import IdentityMemo

PROVIDER_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
# MCP's defaults for absent hints, and which way is riskier for a policy-checked router.
_HINTS: tuple[tuple[str, str, bool, bool], ...] = (
    ("read_only_hint", "readOnlyHint", False, False),
    ("destructive_hint", "destructiveHint", True, True),
    ("idempotent_hint", "idempotentHint", False, False),
    ("open_world_hint", "openWorldHint", True, True),
)


@dataclass
class DriftReport:
    changes: list[Change] = field(default_factory=list)
    tools_old: int = 0
    tools_new: int = 0
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    """Generated files that differ from the output folder (check only): path → changed | missing | extra."""
    refresh: str = ""
    """The command that brings the output up to date (check only)."""

    def sorted_changes(self) -> list[Change]:
        return sorted(self.changes, key=Change.sort_key)

    def worst(self) -> Level | None:
        levels = [level for change in self.changes if (level := change.levels.worst()) is not None]
        return max(levels) if levels else None

    def fails(self, fail_on: Level) -> bool:
        worst = self.worst()
        return bool(self.files) or (worst is not None and worst >= fail_on)

    def summary(self) -> dict[str, Any]:
        audiences = {a: {level.name: 0 for level in reversed(Level)} for a in AUDIENCES}
        by_worst = {level.name: 0 for level in reversed(Level)}
        for change in self.changes:
            for audience, level in zip(AUDIENCES, (change.levels.stub, change.levels.wire, change.levels.model),
                                       strict=True):
                if level is not None:
                    audiences[audience][level.name] += 1
            worst = change.levels.worst()
            if worst is not None:
                by_worst[worst.name] += 1
        changed = {c.tool for c in self.changes if c.change not in ("tool-added", "tool-removed", "tool-name-invalid")}
        worst_level = self.worst()
        data: dict[str, Any] = {
            "tools": {"old": self.tools_old, "new": self.tools_new, "added": len(self.added),
                      "removed": len(self.removed), "renamed": len(self.renamed), "changed": len(changed)},
            "changes": len(self.changes),
            "levels": by_worst,
            "audiences": audiences,
            "worst": worst_level.name if worst_level is not None else None,
        }
        if self.files:
            data["files"] = dict(sorted(self.files.items()))
        return data

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"changes": [c.to_json() for c in self.sorted_changes()], "summary": self.summary()}
        if self.refresh:
            data["refresh"] = self.refresh
        return data


def _words(name: str) -> tuple[str, ...]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return tuple(word.lower() for word in re.split(r"[^A-Za-z0-9]+", spaced) if word)


class CatalogDiff:
    """One comparison of an old and a new catalog; `run()` returns the report."""

    def __init__(self, old: Catalog, new: Catalog, *, by: str = "name",
                 skip: Callable[[Tool, Tool], bool] | None = None) -> None:
        self.old, self.new = old, new
        self.by = by
        self.skip = skip
        self.refs_cache: RefsCache = RefsCache()
        self.dirty_cache: IdentityMemo[IdentityMemo[frozenset[str]]] = IdentityMemo()
        """old shared definitions → new shared definitions → the names whose meaning may differ."""
        self.report = DriftReport(tools_old=len(old.tools), tools_new=len(new.tools))

    def key(self, tool: Tool) -> str:
        return tool.name if self.by == "name" else tool.id

    def run(self) -> DriftReport:
        old = {self.key(t): t for t in self.old.tools}
        new = {self.key(t): t for t in self.new.tools}
        removed = sorted(k for k in old if k not in new)
        added = sorted(k for k in new if k not in old)
        for old_key, new_key in self._renames([old[k] for k in removed], [new[k] for k in added]):
            removed.remove(old_key)
            added.remove(new_key)
            self.report.renamed.append((old_key, new_key))
            self._add(new_key, "tool-renamed", "", f"renamed: {old_key} → {new_key}")
            self._check_name(new[new_key], new_key)
            self.compare_tools(old[old_key], new[new_key], new_key)
        for key in removed:
            self.report.removed.append(key)
            self._add(key, "tool-removed", "", f"tool removed: {key}")
        for key in added:
            self.report.added.append(key)
            self._add(key, "tool-added", "", f"tool added: {key}")
            self._check_name(new[key], key)
        for key in sorted(k for k in old if k in new):
            if self.skip is None or not self.skip(old[key], new[key]):
                self.compare_tools(old[key], new[key], key)
        self.report.renamed.sort()
        return self.report

    def _add(self, tool: str, rule: str, pointer: str, message: str) -> None:
        assert rule in RULES, rule
        self.report.changes.append(Change(tool, rule, pointer, message))

    def _check_name(self, tool: Tool, display: str) -> None:
        if not PROVIDER_NAME.match(tool.name):
            self._add(display, "tool-name-invalid", "/name",
                      f"{tool.name!r} is not a provider tool name (^[a-zA-Z0-9_-]{{1,64}}$): toolc rewrites it per target")

    # -- renames ---------------------------------------------------------------------------------------
    def _renames(self, removed: list[Tool], added: list[Tool]) -> list[tuple[str, str]]:
        pairs: list[tuple[str, str]] = []
        shapes_old = {self.key(t): self._shape(t, self.old) for t in removed}
        shapes_new = {self.key(t): self._shape(t, self.new) for t in added}
        passes: tuple[Callable[[Tool, Tool], bool], ...] = (
            lambda a, b: isinstance(a.binding, HttpBinding) and isinstance(b.binding, HttpBinding)
            and (a.binding.method, a.binding.path) == (b.binding.method, b.binding.path),
            lambda a, b: _words(a.name) == _words(b.name),
            lambda a, b: shapes_old[self.key(a)] == shapes_new[self.key(b)] and shapes_old[self.key(a)] != b"{}",
            lambda a, b: shapes_old[self.key(a)] == shapes_new[self.key(b)]
            and (set(_words(a.name)) <= set(_words(b.name)) or set(_words(b.name)) <= set(_words(a.name))),
        )
        for same in passes:
            matches = {self.key(a): [self.key(b) for b in added if same(a, b)] for a in removed}
            claimed: dict[str, int] = {}
            for news in matches.values():
                for name in news:
                    claimed[name] = claimed.get(name, 0) + 1
            paired = [(o, news[0]) for o, news in matches.items() if len(news) == 1 and claimed[news[0]] == 1]
            pairs.extend(paired)
            gone_old = {o for o, _ in paired}
            gone_new = {n for _, n in paired}
            removed = [t for t in removed if self.key(t) not in gone_old]
            added = [t for t in added if self.key(t) not in gone_new]
        return sorted(pairs)

    def _shape(self, tool: Tool, catalog: Catalog) -> bytes:
        view = SchemaView(tool.input_schema, catalog.definitions_for(tool))
        root, _ = view.deref(tool.input_schema)
        properties = root.get("properties") if isinstance(root, Mapping) else None
        if not isinstance(properties, Mapping) or not properties:
            return b"{}"
        types = {}
        for name, schema in properties.items():
            node, _ = view.deref(schema)
            types[name] = node.get("type") if isinstance(node, Mapping) else None
        return compact_json({"properties": types, "required": sorted(root.get("required") or [])})

    # -- one tool --------------------------------------------------------------------------------------
    def compare_tools(self, a: Tool, b: Tool, display: str) -> None:
        if a.description != b.description:
            self._add(display, "description-changed", "/description", "tool description changed")
        if a.title != b.title:
            self._add(display, "title-changed", "/title", f"title: {a.title!r} → {b.title!r}")
        self._compare_annotations(a.annotations, b.annotations, display)
        self._compare_binding(a, b, display)
        self._compare_schema(a, b, a.input_schema, b.input_schema, "/inputSchema", "input", display)
        if a.output_schema is not None and b.output_schema is None:
            self._add(display, "output-schema-removed", "/outputSchema", "outputSchema removed")
        elif a.output_schema is None and b.output_schema is not None:
            self._add(display, "output-schema-added", "/outputSchema", "outputSchema added")
        elif a.output_schema is not None and b.output_schema is not None:
            self._compare_schema(a, b, a.output_schema, b.output_schema, "/outputSchema", "output", display)

    def _compare_schema(self, a: Tool, b: Tool, schema_a: Any, schema_b: Any, pointer: str, direction: str,
                        display: str) -> None:
        old = SchemaView(schema_a, self.old.definitions_for(a))
        new = SchemaView(schema_b, self.new.definitions_for(b))
        dirty = self._dirty(old, new)
        walker = SchemaDiff(old, new, tool=display, direction=direction, same_def=lambda name: name not in dirty,
                            refs_cache=self.refs_cache)
        walker.compare(schema_a, schema_b, pointer)
        self.report.changes.extend(walker.changes)
        if not walker.changes and canonical_tools(schema_a) != canonical_tools(schema_b):
            self._add(display, "schema-restructured", pointer, "schema text changed ($ref/$defs, $schema, empty keywords); resolves to the same schema")

    def _dirty(self, old: SchemaView, new: SchemaView) -> frozenset[str]:
        if old.own or new.own:
            return dirty_definitions({**old.shared, **old.own}, {**new.shared, **new.own}, self.refs_cache)
        by_new = self.dirty_cache.get(old.shared)
        if by_new is None:
            by_new = self.dirty_cache.put(old.shared, IdentityMemo())
        dirty = by_new.get(new.shared)
        if dirty is None:
            dirty = by_new.put(new.shared, dirty_definitions(old.shared, new.shared, self.refs_cache))
        return dirty

    def _compare_annotations(self, a: Annotations, b: Annotations, display: str) -> None:
        for attribute, wire_name, default, riskier in _HINTS:
            before = getattr(a, attribute)
            after = getattr(b, attribute)
            if before == after:
                continue
            effective_before = default if before is None else before
            effective_after = default if after is None else after
            rule = "annotation-riskier" if effective_after == riskier and effective_before != riskier else "annotation-changed"
            self._add(display, rule, f"/annotations/{wire_name}", f"{wire_name}: {before} → {after}")

    def _compare_binding(self, a: Tool, b: Tool, display: str) -> None:
        if not isinstance(a.binding, HttpBinding) or not isinstance(b.binding, HttpBinding):
            return
        if (a.binding.method, a.binding.path) != (b.binding.method, b.binding.path):
            self._add(display, "binding-changed", "/binding",
                      f"{a.binding.method} {a.binding.path} → {b.binding.method} {b.binding.path}")
        old_args = {arg.name: arg for arg in a.binding.arguments}
        for arg in b.binding.arguments:
            before = old_args.get(arg.name)
            if before is not None and (before.location, before.wire_name) != (arg.location, arg.wire_name):
                self._add(display, "binding-changed", f"/binding/arguments/{arg.name}",
                          f"{arg.name}: {before.location} {before.wire_name!r} → {arg.location} {arg.wire_name!r}")


def diff_catalogs(old: Catalog, new: Catalog, *, by: str = "name",
                  skip: Callable[[Tool, Tool], bool] | None = None) -> DriftReport:
    """The changes from `old` to `new`. `by="name"` pairs tools by name (two versions of one input);
    `by="id"` by tool id (a project against its own previous output). `skip(old, new)` can prove a pair equal."""
    return CatalogDiff(old, new, by=by, skip=skip).run()
