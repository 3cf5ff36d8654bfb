"""Generic validation rules for emitted definitions (providers.md §1-3, §5): a library the dialects compose.

Each dialect owns its validation (`Dialect.validate`, in its own module) and builds it from these rules: node
rules see every schema node (`check_nodes`), definition rules see the wrapper (`name_rule`, `root_object`,
`strict_limits`). This module imports no dialect. `Dialect.check` runs a dialect's validation with a family's
memo of subtrees already seen valid (`checking`). Cross-tool limits (tool counts, Anthropic strict budgets) are
applied where the whole tool list is known (`lower.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from compiler.providers.base import Capabilities, Checked, LimitMemo, Totals, token, type_set
from compiler.schema import DEFINITIONS, SCHEMA, SCHEMA_LIST, SCHEMA_MAP, is_data, keywords_of, subschemas

JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})

STRICT_MAX_PROPERTIES = 5000
STRICT_MAX_DEPTH = 10
STRICT_MAX_ENUM_VALUES = 1000
STRICT_MAX_STRING_TOTAL = 120_000
STRICT_BIG_ENUM = 250
STRICT_BIG_ENUM_CHARS = 15_000


@dataclass(frozen=True)
class Violation:
    pointer: str
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.pointer or '/'}: {self.rule}: {self.message}"


Node = Mapping[str, Any]
NodeRule = Callable[[Node, str], Iterator[Violation]]


def iter_nodes(node: Any, pointer: str = "", skip: set[int] | None = None) -> Iterator[tuple[str, Node]]:
    """Every schema node under `node` (depth first), with its JSON pointer; subtrees in `skip` are left out."""
    stack: list[tuple[str, Any]] = [(pointer, node)]
    while stack:
        at, current = stack.pop()
        if not isinstance(current, dict) or (skip is not None and id(current) in skip):
            continue
        yield at, current
        for (key, name), sub in subschemas(current):
            stack.append((f"{at}/{key}" if name is None else f"{at}/{key}/{token(name)}", sub))


def _v(pointer: str, rule: str, message: str) -> Iterator[Violation]:
    yield Violation(pointer, rule, message)


# --- node rules ---------------------------------------------------------------------------------------------


_SINGLE_SCHEMA = keywords_of(SCHEMA)
_SCHEMA_MAPS = keywords_of(SCHEMA_MAP, DEFINITIONS)
_COMBINATOR_LISTS = keywords_of(SCHEMA_LIST)
_CHECKED_KEYS = _SINGLE_SCHEMA | _SCHEMA_MAPS | _COMBINATOR_LISTS | {"items", "required", "enum", "type"}


def well_formed(node: Node, at: str) -> Iterator[Violation]:
    """§1.3: nodes must be valid JSON Schema (the shapes providers choke on)."""
    for key in node.keys() & _CHECKED_KEYS:
        value = node[key]
        if key == "required":
            if not (isinstance(value, list) and all(isinstance(k, str) for k in value)):
                yield from _v(at, "required-list", "required must be a list of strings")
        elif key == "enum":
            if not (isinstance(value, list) and value):
                yield from _v(at, "enum-list", "enum must be a non-empty list")
        elif key == "type":
            kinds = type_set(node)
            if not kinds or not set(kinds) <= JSON_TYPES:
                yield from _v(at, "type-name", f"unknown type {value!r}")
        elif key in _COMBINATOR_LISTS:
            if not (isinstance(value, list) and value):
                yield from _v(at, f"{key}-list", f"{key} must be a non-empty list")
        elif key == "items":
            if not isinstance(value, dict | bool | list):
                yield from _v(at, "items-schema", "items must be a schema")
        elif key in _SINGLE_SCHEMA:
            if not isinstance(value, dict | bool):
                yield from _v(at, f"{key}-schema", f"{key} must be a schema")
        elif not isinstance(value, dict):
            yield from _v(at, f"{key}-object", f"{key} must be an object")
        elif not all(isinstance(v, dict | bool) or is_data(key, v) for v in value.values()):
            yield from _v(at, f"{key}-schemas", f"every value of {key} must be a schema")


def allow_list(allowed: frozenset[str], rule: str) -> NodeRule:
    def check(node: Node, at: str) -> Iterator[Violation]:
        extra = sorted(set(node) - allowed)
        if extra:
            yield from _v(at, rule, f"keywords not accepted: {', '.join(extra)}")

    return check


def formats(permitted: Mapping[str, frozenset[str]]) -> NodeRule:
    def check(node: Node, at: str) -> Iterator[Violation]:
        if "format" in node:
            ok = set().union(*(permitted.get(kind.lower(), frozenset()) for kind in type_set(node)))
            if node["format"] not in ok:
                yield from _v(at, "format", f"format {node['format']!r} not accepted for {node.get('type')!r}")

    return check


def closed_objects(node: Node, at: str) -> Iterator[Violation]:
    if ("object" in type_set(node) or "properties" in node) and node.get("additionalProperties") is not False:
            yield from _v(at, "additionalProperties-false", "every object needs additionalProperties: false")


def strict_objects(node: Node, at: str) -> Iterator[Violation]:
    """§1.4: properties on every object, required = every key."""
    if "object" in type_set(node) or "properties" in node:
        if not isinstance(node.get("properties"), (dict, Mapping)):
            yield from _v(at, "object-properties", "an object needs properties (even empty)")
        elif sorted(node.get("required", [])) != sorted(node["properties"]):
            yield from _v(at, "required-all", "required must list every key in properties")


def typed_items(node: Node, at: str) -> Iterator[Violation]:
    if "array" in [k.lower() for k in type_set(node)]:
        items = node.get("items")
        if not (isinstance(items, (dict, Mapping)) and items):
            yield from _v(at, "array-items", "an array needs typed items")


def ref_alone(node: Node, at: str) -> Iterator[Violation]:
    if "$ref" in node:
        if len(node) > 1:
            yield from _v(at, "ref-siblings", "a $ref cannot have siblings")
        ref = node["$ref"]
        if not (ref == "#" or (isinstance(ref, str) and ref.startswith(("#/$defs/", "#/definitions/")))):
            yield from _v(at, "ref-target", f"$ref must be # or #/$defs/X, not {ref!r}")


def no_refs(node: Node, at: str) -> Iterator[Violation]:
    if "$ref" in node or "$defs" in node or "definitions" in node:
        yield from _v(at, "no-ref", "$ref/$defs must be inlined")


def local_refs(node: Node, at: str) -> Iterator[Violation]:
    """Shared definitions: every `$ref` points into the root's own `$defs`."""
    ref = node.get("$ref")
    if ref is not None and not (isinstance(ref, str) and ref.startswith("#/$defs/")):
        yield from _v(at, "local-ref", "$ref must point into the schema's own $defs")


def no_type_lists(node: Node, at: str) -> Iterator[Violation]:
    if isinstance(node.get("type"), list):
        yield from _v(at, "single-type", "type must be one value (nullable as anyOf / nullable)")


def min_items_01(node: Node, at: str) -> Iterator[Violation]:
    if node.get("minItems", 0) not in (0, 1):
        yield from _v(at, "minItems-0-1", "strict allows minItems 0 or 1 only")


def primitive_enum(node: Node, at: str) -> Iterator[Violation]:
    if any(isinstance(v, dict | list) for v in node.get("enum", ())):
        yield from _v(at, "enum-primitive", "enum values must be strings, numbers, booleans or null")


def json_ref_siblings(node: Node, at: str) -> Iterator[Violation]:
    if "$ref" in node and not set(node) <= {"$ref", "description", "default"}:
        yield from _v(at, "ref-siblings", "a $ref may carry only description and default")


# --- schema-wide limits -------------------------------------------------------------------------------------


_NOTHING = Totals(0, 0, 0, False)
"""A root that is not a schema object (`iter_nodes` yields nothing there)."""


def _own(node: Node) -> Totals:
    keys = list(node.get("properties") or {})
    values = node.get("enum") or []
    strings = [v for v in values if isinstance(v, str)]
    chars = sum(len(k) for k in keys) + sum(len(v) for v in strings)
    if isinstance(node.get("const"), str):
        chars += len(node["const"])
    return Totals(len(keys), len(values), chars, len(strings) > STRICT_BIG_ENUM)


def _totals(node: Node, memo: LimitMemo) -> Totals:
    """`_own` summed over `node` and every schema node under it (each occurrence of a shared subtree counts)."""
    found = memo.totals.get(node)
    if found is not None:
        return found
    properties, enum_values, chars, big_enum = _own(node)
    for _step, sub in subschemas(node):
        if isinstance(sub, dict):
            more = _totals(sub, memo)
            properties, enum_values = properties + more.properties, enum_values + more.enum_values
            chars, big_enum = chars + more.chars, big_enum or more.big_enum
    return memo.totals.put(node, Totals(properties, enum_values, chars, big_enum))


def _depth(node: Any, memo: LimitMemo) -> int:
    """Object nesting levels of `node` as the strict limit counts them: a property one level deeper, `items` and
    `additionalProperties` one deeper when they are objects, `anyOf` branches at the same level."""
    if not isinstance(node, (dict, Mapping)):  # dict first: no ABC check
        return 0
    found = memo.depths.get(node)
    if found is not None:
        return found
    deepest = 1
    for _name, sub in (node.get("properties") or {}).items():
        deepest = max(deepest, 1 + _depth(sub, memo))
    for key in ("items", "additionalProperties"):
        child = node.get(key)
        if isinstance(child, (dict, Mapping)):
            deepest = max(deepest, _depth(child, memo) + (1 if "object" in type_set(child) else 0))
    for branch in node.get("anyOf") or ():
        deepest = max(deepest, _depth(branch, memo))
    return memo.depths.put(node, deepest)


def strict_limits(schema: Node, memo: LimitMemo | None = None) -> Iterator[Violation]:
    """§1.4 limits: 5000 properties, 10 levels, 1000 enum values, 120,000 chars, big enums ≤ 15,000 chars.
    `memo`: subtrees already measured (a family's, shared by its tools)."""
    memo = memo if memo is not None else LimitMemo()
    properties, enum_values, chars, big_enum = _totals(schema, memo) if isinstance(schema, dict) else _NOTHING
    if big_enum:  # rare: found again node by node, with where each is
        for at, node in iter_nodes(schema):
            strings = [v for v in node.get("enum") or [] if isinstance(v, str)]
            if len(strings) > STRICT_BIG_ENUM and sum(len(v) for v in strings) > STRICT_BIG_ENUM_CHARS:
                yield from _v(at, "limit-big-enum",
                              f"an enum of {len(strings)} strings over {STRICT_BIG_ENUM_CHARS} chars")
    chars += sum(len(k) for k in schema.get("$defs") or {})
    roots = [schema, *(schema.get("$defs") or {}).values()]
    depth = max(_depth(root, memo) for root in roots)
    for name, value, limit in (("properties", properties, STRICT_MAX_PROPERTIES),
                               ("enum-values", enum_values, STRICT_MAX_ENUM_VALUES),
                               ("string-length", chars, STRICT_MAX_STRING_TOTAL),
                               ("depth", depth, STRICT_MAX_DEPTH)):
        if value > limit:
            yield from _v("", f"limit-{name}", f"{value} > {limit}")


def limits_of(schema: Node) -> list[Violation]:
    """`strict_limits`, measured once for the same schema checked again in a row: Chat Completions and Responses
    (one family) check the same lowered parameters one after the other."""
    checked = _CHECKED.get()
    if checked is not None and checked.last_limits is not None and checked.last_limits[0] is schema:
        known: list[Violation] = checked.last_limits[1]
        return known
    found = list(strict_limits(schema, checked.limits if checked is not None else None))
    if checked is not None:
        checked.last_limits = (schema, found)
    return found


# --- definition rules ---------------------------------------------------------------------------------------


def name_rule(definition: Node, caps: Capabilities, at: str) -> Iterator[Violation]:
    name, pattern = definition.get("name"), caps.name_pattern
    if not (isinstance(name, str) and pattern.match(name) and len(name) <= caps.max_name_length):
        yield from _v(at, "name", f"tool name {name!r} must match {pattern.pattern}")


_CHECKED: ContextVar[Checked | None] = ContextVar("toolc_checked", default=None)


def check_nodes(schema: Any, rules: tuple[NodeRule, ...], base: str) -> Iterator[Violation]:
    checked = _CHECKED.get()
    seen: list[int] = []
    clean = True
    for at, node in iter_nodes(schema, skip=checked.ids if checked else None):
        seen.append(id(node))
        where = base + at
        for rule in rules:
            for violation in rule(node, where):
                clean = False
                yield violation
    if checked is not None and clean:
        checked.ids.update(seen)
        checked.pins.append(schema)


def root_object(schema: Any, at: str, *, combinators: bool) -> Iterator[Violation]:
    if not isinstance(schema, (dict, Mapping)) or str(schema.get("type", "")).lower() != "object":
        yield from _v(at, "root-object", "the root must be type: object")
    elif not combinators and {"anyOf", "oneOf", "allOf"} & set(schema):
        yield from _v(at, "root-combinator", "no anyOf/oneOf/allOf at the root")


def malformed(schema: Any) -> list[Violation]:
    """What makes a *source* schema unusable for any lowering (checked before lowering)."""
    found: list[Violation] = []
    for at, node in iter_nodes(schema):
        found.extend(well_formed(node, at))
        if len(found) >= 5:
            break
    return found


@contextmanager
def checking(checked: Checked | None) -> Iterator[None]:
    """Within the block, `check_nodes` skips subtrees `checked` (one per dialect family) saw valid before and
    records the ones it passes."""
    previous = _CHECKED.set(checked)
    try:
        yield
    finally:
        _CHECKED.reset(previous)
