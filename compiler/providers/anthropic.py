"""Claude tools: `{"name", "description", "input_schema", "strict"?}` (providers.md §2).

Always: `$ref` inlined (recursion pruned by the resolver) unless the inlined schema would pass the per-tool
budget (`providers.max_inline_nodes`): then its definitions are shared under `$defs` and it goes non-strict (TC451); root `type: object` with no top-level
`anyOf`/`oneOf`/`allOf` (hoisted, alternatives described), nullable written as `anyOf` (no type lists),
top-level property keys matching `^[a-zA-Z0-9_.-]{1,64}$` (renamed, mapped back by the name map).
Strict (only when asked, `providers.anthropic_strict`): `additionalProperties: false` on every object, the
structured-outputs keyword subset (numeric and length constraints described), `minItems` 0/1 only, primitive
enums only; maps and untyped values fall back to non-strict. The per-request budgets are this dialect's `budget`
(`lower.py` applies them over the whole tool list).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from compiler import targets
from compiler.ir import JsonObject, Tool
from compiler.providers import codes, names
from compiler.providers.base import (
    Capabilities,
    Lowering,
    NodePass,
    describe,
    is_object,
    is_typed,
    on,
)
from compiler.providers.dialect import Budget, Deferral, Dialect, Lowered, LowerEnv, tool_description
from compiler.providers.examples import input_examples, validator_for
from compiler.providers.hoist import hoist_root, rename_keys
from compiler.providers.passes import (
    drop_annotations,
    keyword_policy,
    merge_all_of,
    one_of_to_any_of,
    openapi_nullable,
    split_type_list,
)
from compiler.providers.validate import (
    NodeRule,
    Violation,
    allow_list,
    check_nodes,
    closed_objects,
    formats,
    local_refs,
    min_items_01,
    name_rule,
    no_refs,
    no_type_lists,
    primitive_enum,
    root_object,
    well_formed,
)

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
KEY = re.compile(r"^[a-zA-Z0-9_.-]{1,64}$")

STRICT_KEYWORDS = frozenset({
    "type", "description", "title", "properties", "required", "additionalProperties", "items", "anyOf", "allOf",
    "enum", "const", "default", "pattern", "format", "minItems",
})
STRICT_FORMATS = {"string": frozenset({"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4",
                                       "ipv6", "uuid"})}


@on('minItems')
def _strict_min_items(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    value = node.get("minItems")
    if value is not None and value not in (0, 1):
        del node["minItems"]
        describe(node, {"minItems": value})
        ctx.loss(codes.DESCRIBED, pointer, "moved into the description: minItems (strict allows only 0 or 1)")
    return node


@on('enum')
def _strict_enum(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    values = node.get("enum")
    if isinstance(values, list) and any(isinstance(v, dict | list) for v in values):
        del node["enum"]
        describe(node, {"enum": values})
        ctx.loss(codes.ENUM_REWRITTEN, pointer, "enum of objects or arrays moved into the description")
    return node


def _strict_object(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    if not is_object(node):
        return node
    extra = node.get("additionalProperties")
    if "patternProperties" in node or (extra is not None and extra is not False):
        ctx.incompatible(pointer, "an open object (additionalProperties / patternProperties) cannot be strict")
    elif extra is None:
        if not node.get("properties") and pointer:
            ctx.incompatible(pointer, "an object with no declared properties (a free-form map) cannot be strict")
        node["additionalProperties"] = False
        ctx.loss(codes.CLOSED_OBJECT, pointer, "additionalProperties: false added; undeclared keys are refused")
    node.setdefault("type", "object")
    return node


def _strict_typed(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    if not is_typed(node) and "allOf" not in node:
        ctx.incompatible(pointer, "an untyped value (any JSON) cannot be strict")
    return node


LOOSE_PASSES: tuple[NodePass, ...] = (drop_annotations, openapi_nullable, split_type_list)
STRICT_PASSES: tuple[NodePass, ...] = (
    drop_annotations,
    openapi_nullable,
    split_type_list,
    one_of_to_any_of,
    merge_all_of,
    _strict_min_items,
    _strict_enum,
    keyword_policy(STRICT_KEYWORDS, STRICT_FORMATS),
    _strict_object,
    _strict_typed,
)


def _root(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    node = hoist_root(node, pointer, ctx)
    node["type"] = "object"
    return rename_keys(node, KEY, ctx)


TOOL_SEARCH: JsonObject = {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
"""Claude's server-side tool search (a natural-language query over the deferred tools)."""
MAX_DEFERRED_TOOLS = 10_000
"""Tools a tool search catalog may hold (platform.claude.com, tool search tool: limits)."""
MAX_REQUEST_BYTES = 32_000_000
"""The Messages API's request size limit (32 MB)."""


LOOSE_RULES: tuple[NodeRule, ...] = (well_formed, no_refs, no_type_lists)
STRICT_RULES: tuple[NodeRule, ...] = (*LOOSE_RULES, allow_list(STRICT_KEYWORDS, "strict-keywords"),
                                      formats(STRICT_FORMATS), closed_objects, min_items_01, primitive_enum)
SHARED_RULES: tuple[NodeRule, ...] = (well_formed, local_refs, no_type_lists)
"""Over the inline budget (TC451): shared `$defs`, every `$ref` local."""


class AnthropicDialect(Dialect):
    target = targets.ANTHROPIC
    caps = Capabilities(target=target, name_pattern=NAME)
    mangler = names.ANTHROPIC
    resolution = "inline"
    strict_passes = STRICT_PASSES
    strict_root = (_root,)
    loose_passes = LOOSE_PASSES
    loose_root = (_root,)
    budget = Budget(strict_tools=20, optional_parameters=24, union_parameters=16)
    strict_option = "anthropic_strict"
    deferral = Deferral(search_tool=TOOL_SEARCH, max_tools=MAX_DEFERRED_TOOLS, max_bytes=MAX_REQUEST_BYTES)

    def over_budget(self, tool: Tool, env: LowerEnv, ctx: Lowering, budget: int) -> JsonObject:
        return self.share_defs(tool, env, ctx, budget)  # the Messages API accepts $defs (providers.md §2.2)

    def wrap(self, tool: Tool, name: str, parameters: JsonObject, ctx: Lowering, env: LowerEnv, *,
             strict: bool) -> Lowered:
        definition: JsonObject = {"name": name}
        description = tool_description(tool)
        if description:
            definition["description"] = description
        definition["input_schema"] = parameters
        examples = input_examples(parameters, ctx)
        if examples:
            definition["input_examples"] = examples
        if strict:
            definition["strict"] = True
        return Lowered(tool=tool, name=name, definition=definition, parameters=parameters, strict=strict,
                       losses=ctx.losses, problems=ctx.problems, renamed_keys=ctx.renamed_keys)

    def validate(self, definition: Mapping[str, Any]) -> list[Violation]:
        return _validate_tool(definition, self)

    def strict_cost(self, parameters: Mapping[str, object]) -> tuple[int, int]:
        return strict_cost(parameters)


def _validate_tool(definition: Mapping[str, Any], dialect: Dialect) -> list[Violation]:
    found = list(name_rule(definition, dialect.caps, "/name"))
    schema = definition.get("input_schema")
    found += root_object(schema, "/input_schema", combinators=False)
    strict = definition.get("strict", False) is True
    shared = isinstance(schema, Mapping) and "$defs" in schema  # over the inline budget (TC451)
    rules = SHARED_RULES if shared and not strict else STRICT_RULES if strict else LOOSE_RULES
    found += check_nodes(schema, rules, "/input_schema")
    examples = definition.get("input_examples")
    if examples is not None and isinstance(schema, Mapping):
        checker = validator_for(schema)  # only definitions with examples pay for jsonschema
        if not isinstance(examples, list) or not all(isinstance(e, dict) and checker.is_valid(e) for e in examples):
            found.append(Violation("/input_examples", "input-examples", "every input example must be an object that "
                                   "validates against input_schema"))
    for key in (schema or {}).get("properties", {}) if isinstance(schema, Mapping) else ():
        if not KEY.match(key):
            found.append(Violation(f"/input_schema/properties/{key}", "property-key", "key must match "
                                   + KEY.pattern))
    return found


def strict_cost(parameters: Mapping[str, object]) -> tuple[int, int]:
    """(optional parameters, union parameters) of one strict schema, counted the way Anthropic's limits do."""
    optional = unions = 0

    def visit(node: object) -> None:
        nonlocal optional, unions
        if isinstance(node, (dict, Mapping)):
            properties = node.get("properties")
            if isinstance(properties, (dict, Mapping)):
                required = set(node.get("required") or ())
                optional += sum(1 for key in properties if key not in required)
                for sub in properties.values():
                    if isinstance(sub, (dict, Mapping)) and ("anyOf" in sub or isinstance(sub.get("type"), list)):
                        unions += 1
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(parameters)
    return optional, unions


ANTHROPIC = AnthropicDialect()
