"""Compare two versions of one tool schema, node by node, and name each difference with a rule id.

The walk is semantic: `$ref`s are followed on both sides (so moving a schema into `$defs` changes nothing),
dict key order never matters, and `required` / `enum` / `type` lists are compared as sets. Each finding names
the rule for both directions (an input schema is what callers send, an output schema what they read), and the
walker keeps the one for its direction.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from compiler.drift.rules import Change
from compiler.drift.schemas import RefsCache, SchemaView, refs_in
from compiler.infra.serialize import compact_json
from compiler.refs import escape_token, local_def_name

_UPPER = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
_LOWER = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_HANDLED = frozenset({
    "$ref", "type", "nullable", "enum", "const", *_UPPER, *_LOWER, "pattern", "format", "multipleOf", "uniqueItems",
    "properties", "required", "additionalProperties", "items", "prefixItems", "anyOf", "oneOf", "allOf",
    "description", "title", "examples", "example", "default", "deprecated", "x-mcp-header",
})
_IGNORED = frozenset({"$schema", "$id", "$anchor", "$comment", "$defs", "definitions"})
_COSMETIC = frozenset({"description-changed", "title-changed", "examples-changed", "schema-restructured"})
_HEADER_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_MAX_DEPTH = 96


def _types(view: SchemaView, node: Mapping[str, Any], depth: int = 0) -> frozenset[str]:
    """The JSON types a node allows; empty means any. Without `type`, the union of its anyOf/oneOf branches."""
    raw = node.get("type")
    types = {raw} if isinstance(raw, str) else {t for t in raw if isinstance(t, str)} if isinstance(raw, list) else set()
    if not types and depth < 8:
        for keyword in ("anyOf", "oneOf"):
            branches = node.get(keyword)
            if isinstance(branches, list) and branches:
                for branch in branches:
                    resolved, _ = view.resolved(branch)
                    branch_types = _types(view, resolved, depth + 1) if isinstance(resolved, Mapping) else frozenset()
                    if not branch_types:
                        return frozenset()
                    types |= branch_types
                break
    if types and node.get("nullable") is True:
        types.add("null")
    return frozenset(types)


def _covers(types: frozenset[str], one: str) -> bool:
    return one in types or (one == "integer" and "number" in types)


def _values(node: Mapping[str, Any]) -> dict[bytes, Any] | None:
    if isinstance(node.get("enum"), list):
        return {compact_json(value): value for value in node["enum"]}
    if "const" in node:
        return {compact_json(node["const"]): node["const"]}
    return None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _closed(node: Mapping[str, Any]) -> bool:
    return node.get("additionalProperties") is False or node.get("unevaluatedProperties") is False


def _short(value: Any) -> str:
    text = compact_json(value).decode()
    return text if len(text) <= 60 else text[:57] + "..."


class SchemaDiff:
    """Walks an old and a new schema together; `changes` collects what differs."""

    def __init__(self, old: SchemaView, new: SchemaView, *, tool: str, direction: str,
                 same_def: Callable[[str], bool], refs_cache: RefsCache) -> None:
        self.old, self.new = old, new
        self.tool, self.direction = tool, direction
        self.same_def = same_def
        self.refs_cache = refs_cache
        self.seen: set[tuple[str, str]] = set()
        self._pinned: list[Any] = []
        """Nodes whose `id` is part of a `seen` key (merged `allOf` nodes are fresh dicts): kept alive so their ids
        are never reused by another node during this walk."""
        self.changes: list[Change] = []

    # -- reporting -------------------------------------------------------------------------------------
    def emit(self, pointer: str, message: str, *, input: str | None, output: str | None) -> None:
        rule = input if self.direction == "input" else output
        if rule is not None:
            self.changes.append(Change(self.tool, rule, pointer, message))

    def equivalent(self, a: Any, b: Any, pointer: str) -> bool:
        """True when the two schemas differ at most cosmetically (used to pair renamed properties and branches)."""
        probe = SchemaDiff(self.old, self.new, tool=self.tool, direction=self.direction, same_def=self.same_def,
                           refs_cache=self.refs_cache)
        probe.compare(a, b, pointer)
        return all(change.change in _COSMETIC for change in probe.changes)

    def unchanged(self, a: Any, b: Any) -> bool:
        """Cheap proof of equality: equal text, and every reference inside names a definition equal on both sides."""
        if a is b and self.old.shared is self.new.shared and self.old.own is self.new.own:
            return True
        if a != b:
            return False
        for ref in refs_in(a, self.refs_cache):
            name = local_def_name(ref)
            if name is None or not self.same_def(name):
                return False
        return True

    # -- the walk --------------------------------------------------------------------------------------
    def compare(self, a: Any, b: Any, pointer: str, *, types_judged: bool = False) -> None:
        """`types_judged`: the caller has already compared the types (an Optional peeled to its branch)."""
        if pointer.count("/") > _MAX_DEPTH or self.unchanged(a, b):
            return
        a, ref_a = self.old.resolved(a)
        b, ref_b = self.new.resolved(b)
        if ref_a or ref_b:
            key = (ref_a or f"@{id(a)}", ref_b or f"@{id(b)}")
            if key in self.seen:
                return
            self.seen.add(key)
            self._pinned.extend((a, b))
        if not isinstance(a, Mapping) or not isinstance(b, Mapping):
            self._compare_booleans(a, b, pointer)
            return
        if not types_judged and not self._compare_types(a, b, pointer):
            return
        self._compare_values(a, b, pointer)
        self._compare_constraints(a, b, pointer)
        self._compare_object(a, b, pointer)
        self._compare_arrays(a, b, pointer)
        for keyword in ("anyOf", "oneOf", "allOf"):
            self._compare_branches(keyword, a, b, pointer)
        self._compare_annotations(a, b, pointer)
        self._compare_other(a, b, pointer)

    def _compare_booleans(self, a: Any, b: Any, pointer: str) -> None:
        if a == b:
            return
        if b is True or b == {}:
            self.emit(pointer, "now accepts anything", input="input-type-widened-union", output="output-type-widened")
        else:
            self.emit(pointer, f"{_short(a)} → {_short(b)}", input="input-type-changed", output="output-type-changed")

    def _compare_types(self, a: Mapping[str, Any], b: Mapping[str, Any], pointer: str) -> bool:
        """Report a type change; False when the types are unrelated (comparing deeper would only add noise)."""
        old, new = _types(self.old, a), _types(self.new, b)
        if old == new:
            return True
        where = f"{pointer}/type"
        shown = f"{sorted(old) or 'any'} → {sorted(new) or 'any'}"
        if not new or all(_covers(new, t) for t in old):
            added = {t for t in new if not _covers(old, t)} if new else {"any"}
            if added == {"null"}:
                self.emit(where, f"now nullable: {shown}", input="input-type-widened",
                          output="output-property-became-nullable")
            elif not added or (added == {"number"} and "integer" in old):
                self.emit(where, f"type widened: {shown}", input="input-type-widened", output="output-type-widened")
            else:
                self.emit(where, f"type widened: {shown}", input="input-type-widened-union",
                          output="output-type-widened")
            return True
        if not old or all(_covers(old, t) for t in new):
            self.emit(where, f"type narrowed: {shown}", input="input-type-changed", output="output-narrowed")
            return True
        self.emit(where, f"type changed: {shown}", input="input-type-changed", output="output-type-changed")
        return False

    def _compare_values(self, a: Mapping[str, Any], b: Mapping[str, Any], pointer: str) -> None:
        old, new = _values(a), _values(b)
        if old == new:
            return
        where = f"{pointer}/{'enum' if 'enum' in b or 'enum' in a else 'const'}"
        if old is None and new is not None:
            self.emit(where, f"became an enum: {_short(list(new.values()))}", input="input-became-enum",
                      output="output-narrowed")
        elif old is not None and new is None:
            self.emit(where, "enum/const removed: any value allowed", input="input-constraint-loosened",
                      output="output-type-widened")
        elif old is not None and new is not None:
            removed = [old[key] for key in old if key not in new]
            added = [new[key] for key in new if key not in old]
            if removed:
                self.emit(where, f"enum values removed: {_short(removed)}", input="input-enum-value-removed",
                          output="output-narrowed")
            if added:
                self.emit(where, f"enum values added: {_short(added)}", input="input-enum-value-added",
                          output="output-enum-value-added")

    def _compare_constraints(self, a: Mapping[str, Any], b: Mapping[str, Any], pointer: str) -> None:
        for keyword in (*_UPPER, *_LOWER, "multipleOf"):
            old, new = a.get(keyword), b.get(keyword)
            if old == new:
                continue
            where = f"{pointer}/{escape_token(keyword)}"
            told, tnew = _number(old), _number(new)
            if (old is not None and told is None) or (new is not None and tnew is None):
                self.emit(where, f"{keyword}: {_short(old)} → {_short(new)}", input="schema-keyword-changed",
                          output="schema-keyword-changed")
            elif told is None:
                self.emit(where, f"{keyword} set to {_short(new)}", input="input-constraint-set", output="output-narrowed")
            elif tnew is None:
                self.emit(where, f"{keyword} {_short(old)} removed", input="input-constraint-loosened",
                          output="output-constraint-loosened")
            elif keyword == "multipleOf":
                self.emit(where, f"multipleOf {old} → {new}", input="input-constraint-set",
                          output="output-constraint-changed")
            elif (tnew < told) == (keyword in _UPPER):
                self.emit(where, f"{keyword} tightened: {old} → {new}", input="input-constraint-tightened",
                          output="output-narrowed")
            else:
                self.emit(where, f"{keyword} loosened: {old} → {new}", input="input-constraint-loosened",
                          output="output-constraint-loosened")
        for keyword in ("pattern", "format"):
            old, new = a.get(keyword), b.get(keyword)
            if old == new:
                continue
            where = f"{pointer}/{keyword}"
            if old is None:
                tightened = "input-constraint-tightened" if keyword == "pattern" else "input-constraint-set"
                self.emit(where, f"{keyword} added: {_short(new)}", input=tightened, output="output-narrowed")
            elif new is None:
                self.emit(where, f"{keyword} removed: {_short(old)}", input="input-constraint-loosened",
                          output="output-constraint-loosened")
            else:
                self.emit(where, f"{keyword} changed: {_short(old)} → {_short(new)}", input="input-constraint-set",
                          output="output-constraint-changed")
        if bool(a.get("uniqueItems")) != bool(b.get("uniqueItems")):
            unique = bool(b.get("uniqueItems"))
            self.emit(f"{pointer}/uniqueItems", f"uniqueItems {'added' if unique else 'removed'}",
                      input="input-constraint-tightened" if unique else "input-constraint-loosened",
                      output="output-narrowed" if unique else "output-constraint-loosened")

    def _compare_object(self, a: Mapping[str, Any], b: Mapping[str, Any], pointer: str) -> None:
        props_a = _mapping(a.get("properties"))
        props_b = _mapping(b.get("properties"))
        req_a = {r for r in a.get("required", ()) if isinstance(r, str)} if isinstance(a.get("required"), list) else set()
        req_b = {r for r in b.get("required", ()) if isinstance(r, str)} if isinstance(b.get("required"), list) else set()
        removed = [name for name in props_a if name not in props_b]
        added = [name for name in props_b if name not in props_a]
        renamed = self._renames(props_a, props_b, removed, added, pointer) if self.direction == "input" else {}
        for old_name, new_name in sorted(renamed.items()):
            self.emit(f"{pointer}/properties/{escape_token(new_name)}", f"property renamed: {old_name} → {new_name}",
                      input="input-property-renamed", output=None)
        for name in sorted(n for n in removed if n not in renamed):
            where = f"{pointer}/properties/{escape_token(name)}"
            self.emit(where, f"property removed: {name}",
                      input="input-property-removed-closed" if _closed(b) else "input-property-removed",
                      output="output-required-property-removed" if name in req_a else "output-optional-property-removed")
        for name in sorted(n for n in added if n not in renamed.values()):
            where = f"{pointer}/properties/{escape_token(name)}"
            required = name in req_b
            self.emit(where, f"{'required' if required else 'optional'} property added: {name}",
                      input="input-required-property-added" if required else "input-optional-property-added",
                      output="output-property-added")
        for name in sorted(n for n in props_a if n in props_b):
            where = f"{pointer}/properties/{escape_token(name)}"
            if name in req_a and name not in req_b:
                self.emit(where, f"became optional: {name}", input="input-property-became-optional",
                          output="output-property-became-optional")
            elif name in req_b and name not in req_a:
                self.emit(where, f"became required: {name}", input="input-property-became-required",
                          output="output-narrowed")
            self.compare(props_a[name], props_b[name], where)
        self._compare_additional(a, b, pointer)

    def _renames(self, props_a: Mapping[str, Any], props_b: Mapping[str, Any], removed: list[str], added: list[str],
                 pointer: str) -> dict[str, str]:
        """One removed and one added property with the same schema, paired one to one, are a rename."""
        candidates: dict[str, list[str]] = {
            old: [new for new in added if self.equivalent(props_a[old], props_b[new], pointer)] for old in removed
        }
        renamed: dict[str, str] = {}
        for old, news in candidates.items():
            if len(news) == 1 and sum(news[0] in other for other in candidates.values()) == 1:
                renamed[old] = news[0]
        return renamed

    def _compare_additional(self, a: Mapping[str, Any], b: Mapping[str, Any], pointer: str) -> None:
        where = f"{pointer}/additionalProperties"
        if not _closed(a) and _closed(b):
            self.emit(where, "additionalProperties became false", input="input-additional-properties-closed",
                      output="output-narrowed")
        elif _closed(a) and not _closed(b):
            self.emit(where, "additionalProperties no longer false", input="input-constraint-loosened",
                      output="output-property-added")
        extra_a, extra_b = a.get("additionalProperties"), b.get("additionalProperties")
        if isinstance(extra_a, Mapping) and isinstance(extra_b, Mapping):
            self.compare(extra_a, extra_b, where)

    def _compare_arrays(self, a: Mapping[str, Any], b: Mapping[str, Any], pointer: str) -> None:
        items_a, items_b = a.get("items"), b.get("items")
        if isinstance(items_a, Mapping | bool) and isinstance(items_b, Mapping | bool):
            self.compare(items_a, items_b, f"{pointer}/items")
        elif items_a != items_b and items_a is not None and items_b is not None:
            self.emit(f"{pointer}/items", "items changed shape", input="schema-keyword-changed",
                      output="schema-keyword-changed")
        prefix_a, prefix_b = a.get("prefixItems"), b.get("prefixItems")
        if isinstance(prefix_a, list) and isinstance(prefix_b, list):
            for index, (item_a, item_b) in enumerate(zip(prefix_a, prefix_b, strict=False)):
                self.compare(item_a, item_b, f"{pointer}/prefixItems/{index}")
            if len(prefix_a) != len(prefix_b):
                self.emit(f"{pointer}/prefixItems", f"prefixItems: {len(prefix_a)} → {len(prefix_b)} items",
                          input="schema-keyword-changed", output="schema-keyword-changed")

    def _compare_branches(self, keyword: str, a: Mapping[str, Any], b: Mapping[str, Any], pointer: str) -> None:
        old = _list(a.get(keyword))
        new = _list(b.get(keyword))
        if not old and not new:
            return
        where = f"{pointer}/{keyword}"
        if not old or not new:
            # One side is a union, the other is not: the type check has judged the union; an Optional[X]
            # (X plus a null branch) is then compared with the plain node.
            solid = [i for i, branch in enumerate(old or new) if self._is_null(branch, old=bool(old)) is False]
            if len(solid) == 1 and not old:
                self.compare(a, new[solid[0]], f"{where}/{solid[0]}", types_judged=True)
            elif len(solid) == 1:
                self.compare(old[solid[0]], b, pointer, types_judged=True)
            return
        unmatched_new = list(range(len(new)))
        unmatched_old: list[int] = []
        for i, branch in enumerate(old):
            match = next((j for j in unmatched_new if self.equivalent(branch, new[j], f"{where}/{j}")), None)
            if match is None:
                unmatched_old.append(i)
            else:
                unmatched_new.remove(match)
        if len(unmatched_old) == 1 and len(unmatched_new) == 1:
            self.compare(old[unmatched_old[0]], new[unmatched_new[0]], f"{where}/{unmatched_new[0]}")
            return
        narrowing = keyword == "allOf"
        for i in unmatched_old:
            self.emit(f"{where}/{i}", f"{keyword} branch removed: {_short(old[i])}",
                      input="input-constraint-loosened" if narrowing else "input-type-changed",
                      output="output-type-widened" if narrowing else "output-narrowed")
        for j in unmatched_new:
            is_null = self._is_null(new[j], old=False)
            self.emit(f"{where}/{j}", f"{keyword} branch added: {_short(new[j])}",
                      input="input-constraint-tightened" if narrowing else
                      "input-type-widened" if is_null else "input-type-widened-union",
                      output="output-narrowed" if narrowing else
                      "output-property-became-nullable" if is_null else "output-type-widened")

    def _is_null(self, branch: Any, *, old: bool) -> bool:
        node, _ = (self.old if old else self.new).resolved(branch)
        return isinstance(node, Mapping) and node.get("type") == "null"

    def _compare_annotations(self, a: Mapping[str, Any], b: Mapping[str, Any], pointer: str) -> None:
        for keyword, rule in (("description", "description-changed"), ("title", "title-changed")):
            if a.get(keyword) != b.get(keyword):
                self.emit(f"{pointer}/{keyword}", f"{keyword} changed", input=rule, output=rule)
        if (a.get("examples"), a.get("example")) != (b.get("examples"), b.get("example")):
            self.emit(f"{pointer}/examples", "examples changed", input="examples-changed", output="examples-changed")
        if bool(a.get("deprecated")) != bool(b.get("deprecated")):
            state = "deprecated" if b.get("deprecated") else "no longer deprecated"
            self.emit(f"{pointer}/deprecated", state, input="deprecated-changed", output="deprecated-changed")
        if ("default" in a, a.get("default")) != ("default" in b, b.get("default")):
            self.emit(f"{pointer}/default", f"default: {_short(a.get('default'))} → {_short(b.get('default'))}",
                      input="input-default-changed", output=None)
        header_a, header_b = a.get("x-mcp-header"), b.get("x-mcp-header")
        if header_a != header_b and header_b is not None:
            valid = isinstance(header_b, str) and bool(_HEADER_TOKEN.match(header_b))
            self.emit(f"{pointer}/x-mcp-header", f"x-mcp-header: {_short(header_a)} → {_short(header_b)}",
                      input="mcp-header-changed" if valid else "mcp-header-invalid", output=None)

    def _compare_other(self, a: Mapping[str, Any], b: Mapping[str, Any], pointer: str) -> None:
        for keyword in sorted(set(a) | set(b)):
            if keyword in _HANDLED or keyword in _IGNORED or keyword.startswith("x-"):
                continue
            if a.get(keyword) != b.get(keyword):
                self.emit(f"{pointer}/{escape_token(keyword)}", f"{keyword} changed (not classified; review it)",
                          input="schema-keyword-changed", output="schema-keyword-changed")
