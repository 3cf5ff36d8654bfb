"""The one JSON-Schema vocabulary every stage shares: which keywords hold subschemas, how to visit and rebuild
them, the `allOf` merge drift compares with, and a memo keyed on node identity.

Schemas stay plain dicts (the resolver's results are shared and read-only); this module only says where the
subschemas are. Anything not listed in `KEYWORDS` (`enum`, `const`, `default`, `examples`, unknown keywords) is
data: a `$ref` inside it is not a reference.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

SCHEMA = 1
"""The value is one subschema."""
SCHEMA_LIST = 2
"""The value is a list of subschemas."""
SCHEMA_MAP = 3
"""The value maps names to subschemas."""
ITEMS = 4
"""`items`: one subschema (2020-12) or a list of them (draft-07 tuples)."""
DEFINITIONS = 5
"""`$defs` / `definitions`: a map of subschemas reachable by pointer only (outputs of the resolver drop them)."""
DYNAMIC = 6
"""`$dynamicRef` / `$recursiveRef`: a reference toolc does not follow (reported as unsupported)."""

KEYWORDS: dict[str, int] = {
    "additionalProperties": SCHEMA,
    "additionalItems": SCHEMA,
    "contains": SCHEMA,
    "propertyNames": SCHEMA,
    "not": SCHEMA,
    "if": SCHEMA,
    "then": SCHEMA,
    "else": SCHEMA,
    "unevaluatedItems": SCHEMA,
    "unevaluatedProperties": SCHEMA,
    "contentSchema": SCHEMA,
    "allOf": SCHEMA_LIST,
    "anyOf": SCHEMA_LIST,
    "oneOf": SCHEMA_LIST,
    "prefixItems": SCHEMA_LIST,
    "properties": SCHEMA_MAP,
    "patternProperties": SCHEMA_MAP,
    "dependentSchemas": SCHEMA_MAP,
    "dependencies": SCHEMA_MAP,
    "items": ITEMS,
    "$defs": DEFINITIONS,
    "definitions": DEFINITIONS,
    "$dynamicRef": DYNAMIC,
    "$recursiveRef": DYNAMIC,
}
"""Keywords whose values hold subschemas (draft-04 to 2020-12 and OpenAPI's schema objects)."""

PROPERTY_DEPENDENCIES = "dependencies"
"""Draft-04..07 `dependencies`: each value is a subschema or a list of property names (data, not a schema)."""


def keywords_of(*kinds: int) -> frozenset[str]:
    """The keywords of the given kinds, e.g. `keywords_of(SCHEMA_LIST)` = allOf, anyOf, oneOf, prefixItems."""
    return frozenset(key for key, kind in KEYWORDS.items() if kind in kinds)


def is_data(key: str, value: Any) -> bool:
    """A value in a subschema position that is data by definition (a property-dependency list)."""
    return key == PROPERTY_DEPENDENCIES and isinstance(value, list)


Step = tuple[str, str | int | None]
"""Where a subschema sits in its parent: (keyword, name or index, or None for a single subschema)."""


def subschemas(node: Any, *, definitions: bool = True) -> list[tuple[Step, Any]]:
    """The subschemas directly under `node`, in keyword order, each with its step. Values of the wrong shape
    (a `properties` that is a list) are not descended into; callers check shapes (`providers.validate`).
    A list, not a generator: validators call this on every node of every emitted schema."""
    found: list[tuple[Step, Any]] = []
    if not isinstance(node, (dict, Mapping)):  # dict first: no ABC check
        return found
    kind_of = KEYWORDS.get
    for key, value in node.items():
        kind = kind_of(key)
        if kind is None or kind == DYNAMIC:
            continue
        if kind in (SCHEMA_MAP, DEFINITIONS):
            if isinstance(value, Mapping) and (definitions or kind != DEFINITIONS):
                for name, sub in value.items():
                    if not is_data(key, sub):
                        found.append(((key, name), sub))
        elif isinstance(value, list):
            if kind in (SCHEMA_LIST, ITEMS):
                for index, sub in enumerate(value):
                    found.append(((key, index), sub))
            else:
                found.append(((key, None), value))
        elif kind != SCHEMA_LIST:
            found.append(((key, None), value))
    return found


def map_subschemas(node: Mapping[str, Any], fn: Callable[[Any, Step], Any]) -> dict[str, Any]:
    """A shallow copy of `node` with `fn(subschema, step)` in place of every subschema (see `subschemas`);
    every other value is kept as it is. (One pass: the provider walker calls this on every node.)"""
    out: dict[str, Any] = {}
    for key, value in node.items():
        kind = KEYWORDS.get(key)
        if kind is None or kind == DYNAMIC:
            out[key] = value
        elif kind in (SCHEMA_MAP, DEFINITIONS):
            if isinstance(value, Mapping):
                out[key] = {name: sub if is_data(key, sub) else fn(sub, (key, name)) for name, sub in value.items()}
            else:
                out[key] = value
        elif isinstance(value, list):
            if kind in (SCHEMA_LIST, ITEMS):
                out[key] = [fn(sub, (key, index)) for index, sub in enumerate(value)]
            else:
                out[key] = fn(value, (key, None))
        elif kind == SCHEMA_LIST:
            out[key] = value
        else:
            out[key] = fn(value, (key, None))
    return out


def merge_all_of(node: Mapping[str, Any], resolve: Callable[[Any], Any]) -> Mapping[str, Any]:
    """`node` with its `allOf` folded into one node: its own keywords first, then each branch's (`resolve`d: the
    caller follows `$ref`s and nested `allOf`s); `properties` merged, `required` united, any other keyword taken
    from the first that has it. Returns `node` unchanged when it has no `allOf` list or a branch is not an object
    schema (a boolean `false` branch cannot be merged)."""
    branches = node.get("allOf")
    if not isinstance(branches, list):
        return node
    merged = {key: value for key, value in node.items() if key != "allOf"}
    properties = dict(merged.get("properties") or {})
    required = list(merged.get("required") or [])
    for branch in branches:
        part = resolve(branch)
        if not isinstance(part, Mapping):
            return node
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
    return merged


# -- keywords with no validation effect -------------------------------------------------------------------

ANNOTATIONS = frozenset({"title", "description", "default", "examples", "example", "deprecated", "readOnly",
                         "writeOnly", "$comment", "discriminator", "xml", "externalDocs"})
"""Keywords with no validation effect: they may be merged into a referenced schema as they are."""


def is_annotation(key: str) -> bool:
    return key in ANNOTATIONS or key.startswith("x-")


LEGACY_DIALECTS = ("draft-07", "draft-06", "draft-04", "draft-03")


def is_legacy(schema: Any) -> bool:
    """Drafts before 2019-09 ignore every keyword next to `$ref` and spell anchors as `$id: "#name"`."""
    dialect = schema.get("$schema") if isinstance(schema, Mapping) else None
    return isinstance(dialect, str) and any(name in dialect for name in LEGACY_DIALECTS)


# -- memo by identity -------------------------------------------------------------------------------------

V = TypeVar("V")


class IdentityMemo(Generic[V]):
    """Results keyed by a node's identity, for read-only trees whose equal-but-distinct subtrees need not share a
    result. Each entry pins its node, so its `id` cannot be reused by another object while the entry lives."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: dict[int, tuple[object, V]] = {}

    def get(self, node: object) -> V | None:
        hit = self._items.get(id(node))
        return hit[1] if hit is not None and hit[0] is node else None

    def __contains__(self, node: object) -> bool:
        hit = self._items.get(id(node))
        return hit is not None and hit[0] is node

    def put(self, node: object, value: V) -> V:
        self._items[id(node)] = (node, value)
        return value

    def __len__(self) -> int:
        return len(self._items)
