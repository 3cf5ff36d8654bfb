"""Reversible strict-mode transforms: shapes OpenAI strict cannot say, rewritten into ones it can, and back.

OpenAI strict refuses open objects (providers.md §1.4): every object must list its keys. So, in strict lowering:

- a **map** (an object with no declared properties whose values follow `additionalProperties: {schema}` or
  `patternProperties`) becomes an array of `{"key": string, "value": <value schema>}` entries (TC422);
- a **free-form** object (no properties, any keys and values) or an **untyped** value (any JSON) becomes a string
  holding the value as JSON text (TC423).

Each rewritten node carries a private marker (removed before output, like `x-toolc-optional`); the name map
turns it into a shape key (`entries` / `json`, see `namemap.py`) so the router converts the model's value back
before it validates and calls: the wire and the stubs see the original object. Also here: a `const`/`enum`
without a `type` gets the type its values share (lossless; strict refuses a typeless node).
"""

from __future__ import annotations

from typing import Any

from compiler.ir import JsonObject
from compiler.providers import codes
from compiler.providers.base import Lowering, is_typed, on, type_set

MARK_ENTRIES = "x-toolc-entries"
"""Private marker: this array holds a map's `{key, value}` entries (the router builds the object back)."""
MARK_JSON = "x-toolc-json"
"""Private marker: this string holds a JSON-encoded value (the router decodes it)."""
MARKERS = frozenset({MARK_ENTRIES, MARK_JSON})

_JSON_TYPES: dict[type, str] = {str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null",
                                dict: "object", list: "array"}
_KEEP = ("description", "title")
_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "deprecated", "readOnly", "writeOnly",
                          "$comment"})
"""Keywords that leave a node accepting any JSON value (a node with a constraint such as `required` is not "any
value", even without a type: it stays as it is)."""


def _kind(value: Any) -> str:
    return _JSON_TYPES.get(type(value), "string")


@on("const", "enum")
def infer_enum_type(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    """`{"const": "page_id"}` → `{"const": "page_id", "type": "string"}` when the values share one type."""
    if "type" in node or "anyOf" in node or "$ref" in node:
        return node
    values = [node["const"]] if "const" in node else node.get("enum")
    if not isinstance(values, list) or not values:
        return node
    kinds = sorted({_kind(value) for value in values})
    if "integer" in kinds and "number" in kinds:
        kinds.remove("integer")
    solid = [kind for kind in kinds if kind != "null"]
    if len(solid) != 1:
        return node
    return {**node, "type": solid[0] if solid == kinds else [solid[0], "null"]}


def _nullable(node: JsonObject) -> bool:
    return "null" in type_set(node)


def _is_open_object(node: JsonObject) -> bool:
    kinds = type_set(node)
    if kinds and "object" not in kinds:
        return False
    if kinds and set(kinds) - {"object", "null"}:
        return False
    if node.get("properties"):
        return False
    if node.get("additionalProperties") is False and not node.get("patternProperties"):
        return False
    if not kinds and not ({"additionalProperties", "patternProperties"} & node.keys()):
        return False
    return "anyOf" not in node and "$ref" not in node and "enum" not in node and "const" not in node


def _json_string(node: JsonObject, what: str, pointer: str, ctx: Lowering) -> JsonObject:
    out: JsonObject = {key: node[key] for key in _KEEP if key in node}
    note = f"{what}, encoded as a JSON string"
    description = out.get("description")
    out["description"] = f"{description} ({note})" if isinstance(description, str) and description else note
    out["type"] = ["string", "null"] if _nullable(node) else "string"
    out[MARK_JSON] = True
    ctx.loss(codes.JSON_ENCODED, pointer, f"{what} sent as a JSON-encoded string; the router decodes it before the "
                                          "call (reversible)")
    return out


def _entries(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    patterns = node.get("patternProperties")
    extra = node.get("additionalProperties")
    values: list[Any] = []
    key: JsonObject = {"type": "string"}
    if isinstance(patterns, dict) and patterns:
        values.extend(patterns.values())
        if len(patterns) == 1 and not isinstance(extra, dict):
            key["pattern"] = next(iter(patterns))
    if isinstance(extra, dict):
        values.append(extra)
    value: Any = values[0] if len(values) == 1 else {"anyOf": values}
    entry: JsonObject = {"type": "object", "properties": {"key": key, "value": value}, "required": ["key", "value"],
                         "additionalProperties": False}
    out: JsonObject = {key_: node[key_] for key_ in _KEEP if key_ in node}
    out["type"] = ["array", "null"] if _nullable(node) else "array"
    out["items"] = entry
    for source, target in (("minProperties", "minItems"), ("maxProperties", "maxItems")):
        if isinstance(node.get(source), int):
            out[target] = node[source]
    note = "a map written as a list of {key, value} entries"
    description = out.get("description")
    out["description"] = f"{description} ({note})" if isinstance(description, str) and description else note
    out[MARK_ENTRIES] = True
    ctx.loss(codes.MAP_ENTRIES, pointer, "map (additionalProperties / patternProperties) sent as an array of "
                                         "{key, value} entries; the router builds the object back (reversible)")
    return out


def strict_open_values(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    """Maps → `{key, value}` entries; free-form objects and untyped values → JSON-encoded strings (not the root,
    which must stay an object)."""
    if not pointer:
        return node
    if _is_open_object(node):
        extra = node.get("additionalProperties")
        typed_values = isinstance(extra, dict) and extra and not extra.get(MARK_JSON)
        if typed_values or node.get("patternProperties"):
            return _entries(node, pointer, ctx)
        return _json_string(node, "a free-form JSON object", pointer, ctx)
    if "array" in type_set(node) and "items" not in node and "prefixItems" not in node:
        items = _json_string({}, "any JSON value", f"{pointer}/items", ctx)
        return {**node, "items": items}
    if not is_typed(node) and all(key in _ANNOTATIONS or key.startswith("x-") for key in node):
        return _json_string(node, "any JSON value", pointer, ctx)
    return node
