"""Gemini function declarations (providers.md §3): `parameters` (the OpenAPI 3.0 `Schema` subset, default) or,
with `providers.gemini_schema: json-schema`, `parametersJsonSchema` (bundled JSON Schema).

`parameters`: inlined (recursion pruned), one `type` plus `nullable`, string enums (integer enums as
`format: enum`), string formats only `enum`/`date-time`, `items` on every array, `anyOf` alone in its node,
no `additionalProperties`/`const`/`$ref`/`oneOf`/`allOf`, root OBJECT; a tool without arguments has no
`parameters`. Gemini has no per-tool strict flag (strictness is the request's VALIDATED mode).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from compiler import targets
from compiler.ir import JsonObject, Tool
from compiler.providers import codes, names
from compiler.providers.base import Capabilities, Lowering, NodePass, describe, on, type_set
from compiler.providers.dialect import Dialect, Lowered, LowerEnv, tool_description
from compiler.providers.hoist import hoist_root
from compiler.providers.passes import (
    drop_annotations,
    keyword_policy,
    merge_all_of,
    one_of_to_any_of,
    openapi_nullable,
    split_type_list,
)
from compiler.providers.validate import (
    JSON_TYPES,
    NodeRule,
    Violation,
    allow_list,
    check_nodes,
    formats,
    json_ref_siblings,
    name_rule,
    root_object,
    typed_items,
    well_formed,
)
from compiler.schema import IdentityMemo

NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$")
MAX_DECLARATIONS = 512

SCHEMA_KEYWORDS = frozenset({
    "type", "format", "title", "description", "nullable", "enum", "items", "properties", "required", "minItems",
    "maxItems", "minLength", "maxLength", "pattern", "minimum", "maximum", "minProperties", "maxProperties",
    "anyOf", "default", "propertyOrdering",
})
"""The fields of `google.genai.types.Schema` we emit (providers.md §3.3)."""
SCHEMA_FORMATS = {"string": frozenset({"enum", "date-time"}), "number": frozenset({"float", "double"}),
                  "integer": frozenset({"int32", "int64", "enum"})}
JSON_SCHEMA_KEYWORDS = frozenset({
    "type", "format", "title", "description", "default", "items", "minItems", "maxItems", "enum", "properties",
    "required", "minProperties", "maxProperties", "minimum", "maximum", "minLength", "maxLength", "pattern",
    "additionalProperties", "anyOf", "oneOf", "uniqueItems", "$ref", "$defs",
})
"""The fields of `google.genai.types.JSONSchema` (providers.md §3.4)."""


@on('const')
def _const_to_enum(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    if "const" not in node:
        return node
    value = node.pop("const")
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        node["enum"] = [value]
        node.setdefault("type", "string" if isinstance(value, str) else "integer")
    elif value is None:
        node["type"] = "null"
    else:
        describe(node, {"const": value})
        ctx.loss(codes.ENUM_REWRITTEN, pointer, "const that is not a string or integer moved into the description")
    return node


@on('type')
def _one_type(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    """`type: [t, "null"]` → `type: t, nullable: true`; several non-null types → `anyOf` of typed branches."""
    kinds = node.get("type")
    if not isinstance(kinds, list):
        return node
    real = [k for k in kinds if k != "null"]
    if len(real) == len(kinds) and len(real) > 1:
        return split_type_list(node, pointer, ctx)
    if len(real) > 1:
        node = split_type_list({**node, "type": real}, pointer, ctx)
        node["nullable"] = True
        return node
    node["type"] = real[0] if real else "null"
    if len(real) < len(kinds) and real:
        node["nullable"] = True
    return node


@on('anyOf')
def _null_branches(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    branches = node.get("anyOf")
    if not isinstance(branches, list):
        return node
    kept = [b for b in branches if not (isinstance(b, Mapping) and b.get("type") == "null" and len(b) == 1)]
    if len(kept) == len(branches):
        return node
    node["nullable"] = True
    if len(kept) == 1 and isinstance(kept[0], Mapping):
        rest = {k: v for k, v in node.items() if k != "anyOf"}
        merged = {**rest, **kept[0]}
        if "description" in rest and "description" in kept[0]:
            merged["description"] = f"{rest['description']} {kept[0]['description']}"
        merged["nullable"] = True
        return merged
    node["anyOf"] = kept
    return node


@on('enum')
def _enum(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    values = node.get("enum")
    if not isinstance(values, list):
        return node
    if None in values:
        values = [v for v in values if v is not None]
        node["nullable"] = True
    if all(isinstance(v, str) for v in values) and "" not in values:
        node["enum"] = values
        return node
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values) and \
            set(type_set(node)) <= {"integer", "number"}:
        node.update(type="integer", format="enum", enum=[str(v) for v in values])
        ctx.loss(codes.ENUM_REWRITTEN, pointer, "integer enum written as INTEGER with format: enum (string values)")
        return node
    del node["enum"]
    describe(node, {"enum": values})
    ctx.loss(codes.ENUM_REWRITTEN, pointer, "enum with non-string values (or an empty string) moved into the description")
    return node


@on('exclusiveMinimum', 'exclusiveMaximum')
def exclusive_bounds(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    """Integers: `exclusiveMinimum: 5` is `minimum: 6` (lossless). Other numbers: described."""
    for key, plain, step in (("exclusiveMinimum", "minimum", 1), ("exclusiveMaximum", "maximum", -1)):
        bound = node.get(key)
        if bound is None:
            continue
        if isinstance(bound, bool):  # draft-04 / OpenAPI 3.0 style: a flag on `minimum`/`maximum`
            bound = node.get(plain) if bound else None
            if bound is None:
                del node[key]
                continue
        if type_set(node) == ["integer"] and isinstance(bound, int | float):
            edge = (math.floor(bound) + 1) if step > 0 else (math.ceil(bound) - 1)
            del node[key]
            current = node.get(plain)
            node[plain] = edge if current is None else (max(current, edge) if step > 0 else min(current, edge))
        else:
            del node[key]
            describe(node, {key: bound})
            ctx.loss(codes.DESCRIBED, pointer, f"moved into the description: {key}")
    return node


@on('additionalProperties', 'patternProperties', 'propertyNames')
def _open_object(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    gone = [k for k in ("additionalProperties", "patternProperties", "propertyNames") if k in node]
    if gone:
        for key in gone:
            del node[key]
        ctx.loss(codes.OPEN_OBJECT, pointer, f"dropped {', '.join(gone)}: extra keys are neither refused nor checked")
    return node


def _arrays(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    kinds = type_set(node)
    if "items" in node and not kinds:
        node["type"] = "array"
    elif "items" in node and kinds != ["array"]:
        del node["items"]
        ctx.loss(codes.DROPPED, pointer, "dropped items on a node that is not an array")
    if type_set(node) == ["array"] and not (isinstance(node.get("items"), Mapping) and node["items"]):
        node["items"] = {"type": "string"}
        ctx.loss(codes.ITEMS_TYPED, pointer, "array without typed items: items written as string")
    if "properties" in node and not type_set(node) and "anyOf" not in node:
        node["type"] = "object"
    return node


def _objects(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    properties = node.get("properties")
    if isinstance(properties, (dict, Mapping)):
        if not properties:
            del node["properties"]
        required = node.get("required")
        if isinstance(required, list):
            kept = [key for key in required if key in properties]
            gone = [str(key) for key in required if key not in properties]
            if gone:  # Gemini would drop them silently: say so
                ctx.loss(codes.GEMINI_REQUIRED_DROPPED, pointer,
                         f"dropped required {', '.join(gone)}: no property of that name")
            if kept:
                node["required"] = kept
            else:
                del node["required"]
    elif "required" in node:
        del node["required"]
        ctx.loss(codes.DROPPED, pointer, "dropped required on a node without properties")
    return node


@on('anyOf')
def _any_of_alone(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    """Vertex: "when using any_of, it must be the only field set": siblings move into every branch."""
    branches = node.get("anyOf")
    if not isinstance(branches, list) or len(node) == 1:
        return node
    siblings = {k: v for k, v in node.items() if k != "anyOf"}
    pushed: list[JsonObject] = []
    for branch in branches:
        merged = dict(branch) if isinstance(branch, Mapping) else {}
        for key, value in siblings.items():
            if key == "type" and merged.get("type", value) != value:
                continue
            merged.setdefault(key, value)
        pushed.append(merged)
    return {"anyOf": pushed}


def _upper(node: Any, cache: IdentityMemo[Any]) -> Any:
    if not isinstance(node, dict):
        return node
    hit = cache.get(node)
    if hit is not None:
        return hit
    out = dict(node)
    if isinstance(out.get("type"), str):
        out["type"] = out["type"].upper()
    if isinstance(out.get("properties"), dict):
        out["properties"] = {key: _upper(sub, cache) for key, sub in out["properties"].items()}
    if isinstance(out.get("anyOf"), list):
        out["anyOf"] = [_upper(sub, cache) for sub in out["anyOf"]]
    if isinstance(out.get("items"), dict):
        out["items"] = _upper(out["items"], cache)
    return cache.put(node, out)


def _upper_types(root: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    """`Schema.type` is the proto enum (STRING, OBJECT, ...): written the way the SDK sends it. A root pass on a
    copy (subtrees lowered once are shared between tools and must keep JSON Schema's lower-case names)."""
    upper: JsonObject = _upper(root, ctx.root_memo if ctx.root_memo is not None else IdentityMemo())
    return upper


PARAMETERS_PASSES: tuple[NodePass, ...] = (
    drop_annotations,
    openapi_nullable,
    one_of_to_any_of,
    merge_all_of,
    _const_to_enum,
    _one_type,
    _null_branches,
    _enum,
    exclusive_bounds,
    _open_object,
    keyword_policy(SCHEMA_KEYWORDS, SCHEMA_FORMATS),
    _arrays,
    _objects,
    _any_of_alone,
)


@on('const')
def _json_const(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    if "const" in node:
        node["enum"] = [node.pop("const")]
    return node


@on('$ref')
def _json_ref_siblings(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    """A `$ref` may carry only `description` and `default`; other siblings go next to an `anyOf` wrapper."""
    if "$ref" not in node or set(node) <= {"$ref", "description", "default"}:
        return node
    out = {k: v for k, v in node.items() if k != "$ref"}
    if "anyOf" in out:
        describe(out, {"anyOf": out.pop("anyOf")})
        ctx.loss(codes.DESCRIBED, pointer, "moved into the description: anyOf next to a $ref")
    out["anyOf"] = [{"$ref": node["$ref"]}]
    return out


JSON_SCHEMA_PASSES: tuple[NodePass, ...] = (
    drop_annotations,
    openapi_nullable,
    merge_all_of,
    _json_const,
    exclusive_bounds,
    keyword_policy(JSON_SCHEMA_KEYWORDS),
    _json_ref_siblings,
)


def _root(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    node = hoist_root(node, pointer, ctx)
    node["type"] = "object"
    node.pop("nullable", None)
    return _upper_types(_objects(node, pointer, ctx), pointer, ctx)


def _json_root(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    node["type"] = "object"
    return node


GEMINI_TYPES = JSON_TYPES | {t.upper() for t in JSON_TYPES}


def gemini_node(node: Mapping[str, Any], at: str) -> Iterator[Violation]:
    """§3.3: one type, string enums (INTEGER with format enum), anyOf alone, items only on arrays."""
    kinds = node.get("type")
    if kinds is not None and not (isinstance(kinds, str) and kinds in GEMINI_TYPES):
        yield Violation(at, "gemini-type", f"type must be one of the Schema types, not {kinds!r}")
    values = node.get("enum")
    if values is not None:
        if not all(isinstance(v, str) and v for v in values):
            yield Violation(at, "gemini-enum", "enum values must be non-empty strings")
        if isinstance(kinds, str) and kinds.lower() != "string" and node.get("format") != "enum":
            yield Violation(at, "gemini-enum-type", "enum only on STRING (or INTEGER with format: enum)")
    if "anyOf" in node and len(node) > 1:
        yield Violation(at, "gemini-anyof-alone", "anyOf must be the only field of its node")
    if "items" in node and not (isinstance(kinds, str) and kinds.lower() == "array"):
        yield Violation(at, "gemini-items-array", "items only on ARRAY")


PARAMETERS_RULES: tuple[NodeRule, ...] = (allow_list(SCHEMA_KEYWORDS, "gemini-keywords"), formats(SCHEMA_FORMATS),
                                          gemini_node, typed_items)
JSON_RULES: tuple[NodeRule, ...] = (well_formed, allow_list(JSON_SCHEMA_KEYWORDS, "gemini-keywords"), json_ref_siblings)


class GeminiDialect(Dialect):
    target = targets.GEMINI
    caps = Capabilities(target=target, name_pattern=NAME, max_tools=MAX_DECLARATIONS, strict_field=False,
                        tools_advice="the fit stage writes forms that fit (TC771); schemas/README.md says which file to send")
    mangler = names.GEMINI
    resolution = "inline"
    loose_passes = PARAMETERS_PASSES
    loose_root = (_root,)
    recursion_code = codes.GEMINI_RECURSION_PRUNED
    over_budget_advice = ("set providers.gemini_schema: json-schema to send it with shared $defs, or raise "
                          "providers.max_inline_nodes")

    @staticmethod
    def _json_schema(env: LowerEnv) -> bool:
        return env.options.gemini_schema == "json-schema"

    def resolution_for(self, env: LowerEnv) -> Literal["bundle", "inline"]:
        return "bundle" if self._json_schema(env) else "inline"

    def passes(self, strict: bool, env: LowerEnv) -> tuple[tuple[NodePass, ...], tuple[NodePass, ...]]:
        # No per-tool strict flag (strictness is the request's VALIDATED mode): one lowering per schema option.
        return (JSON_SCHEMA_PASSES, (_json_root,)) if self._json_schema(env) else (PARAMETERS_PASSES, (_root,))

    def lower(self, tool: Tool, name: str, env: LowerEnv, *, strict: bool) -> Lowered:
        return super().lower(tool, name, env, strict=False)

    def wrap(self, tool: Tool, name: str, parameters: JsonObject, ctx: Lowering, env: LowerEnv, *,
             strict: bool) -> Lowered:
        definition: JsonObject = {"name": name}
        description = tool_description(tool)
        if description:
            definition["description"] = description
        emitted: JsonObject | None = parameters
        if self._json_schema(env):
            definition["parametersJsonSchema"] = parameters
        elif parameters.get("properties"):
            definition["parameters"] = parameters
        else:
            emitted = None  # a tool without arguments has no `parameters`
        return Lowered(tool=tool, name=name, definition=definition, parameters=emitted, strict=False,
                       losses=ctx.losses, problems=ctx.problems)

    def validate(self, definition: Mapping[str, Any]) -> list[Violation]:
        return _validate_declaration(definition, self)

    def tools_array(self, definitions: list[JsonObject]) -> list[JsonObject]:
        """One Tool holding every declaration."""
        return [{"functionDeclarations": definitions}] if definitions else []

    def definitions_of(self, tools: list[JsonObject]) -> list[JsonObject]:
        return list(tools[0]["functionDeclarations"]) if tools else []


def _validate_declaration(definition: Mapping[str, Any], dialect: Dialect) -> list[Violation]:
    found = list(name_rule(definition, dialect.caps, "/name"))
    extra = set(definition) - {"name", "description", "parameters", "parametersJsonSchema"}
    if extra or ("parameters" in definition and "parametersJsonSchema" in definition):
        found.append(Violation("", "gemini-declaration", "unknown keys or both parameters and parametersJsonSchema"))
    if "parameters" in definition:
        found += root_object(definition["parameters"], "/parameters", combinators=False)
        found += check_nodes(definition["parameters"], PARAMETERS_RULES, "/parameters")
    if "parametersJsonSchema" in definition:
        found += root_object(definition["parametersJsonSchema"], "/parametersJsonSchema", combinators=True)
        found += check_nodes(definition["parametersJsonSchema"], JSON_RULES, "/parametersJsonSchema")
    return found


GEMINI = GeminiDialect()
