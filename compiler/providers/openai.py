"""OpenAI function tools: Chat Completions and Responses wrappers over one parameters dialect.

Strict (Structured Outputs subset, providers.md §1.4), from a bundled schema (`$defs` and recursion kept):
optional fields become required and nullable (the name map undoes it), `additionalProperties: false` on every
object, `properties` on every object, typed `items`, `oneOf` → `anyOf`, one-member/mergeable `allOf` folded,
`$ref` with siblings wrapped in `anyOf`, unsupported keywords moved into the description. What cannot be strict
(maps, untyped values, root unions, conflicting allOf, limits) is lowered loose and sent with `strict: false`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar

from compiler import targets
from compiler.infra.diagnostics import Diagnostic
from compiler.ir import JsonObject, Tool
from compiler.providers import codes, names
from compiler.providers.base import (
    MARK_OPTIONAL,
    Capabilities,
    Lowering,
    NodePass,
    NotStrict,
    allows_null,
    describe,
    is_object,
    is_typed,
    on,
    type_set,
)
from compiler.providers.dialect import (
    Deferral,
    Dialect,
    FamilyLowering,
    Lowered,
    LowerEnv,
    NotStrictHere,
    tool_description,
    truncate_description,
)
from compiler.providers.namemap import strict_shapes, without_markers
from compiler.providers.passes import (
    drop_annotations,
    keyword_policy,
    merge_all_of,
    one_of_to_any_of,
    openapi_nullable,
)
from compiler.providers.transforms import MARKERS, infer_enum_type, strict_open_values
from compiler.providers.validate import (
    NodeRule,
    Violation,
    allow_list,
    check_nodes,
    closed_objects,
    formats,
    limits_of,
    name_rule,
    ref_alone,
    root_object,
    strict_objects,
    typed_items,
    well_formed,
)

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ADVICE = "the fit stage writes forms that fit (TC771); schemas/README.md says which file to send"

STRICT_KEYWORDS = frozenset({
    "type", "description", "title", "properties", "required", "additionalProperties", "items", "anyOf", "enum",
    "const", "$ref", "$defs", "pattern", "format", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
    "exclusiveMinimum", "minItems", "maxItems", "minLength", "maxLength", MARK_OPTIONAL, *MARKERS,
})
"""Keywords strict mode accepts (providers.md §1.4); min/maxLength work on OpenAI's own base models."""
STRICT_FORMATS = {"string": frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6",
                                       "uuid"})}
_LOOKAROUND = re.compile(r"\(\?<?[=!]")


@on('pattern')
def _plain_pattern(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    pattern = node.get("pattern")
    if isinstance(pattern, str) and _LOOKAROUND.search(pattern):
        del node["pattern"]
        describe(node, {"pattern": pattern})
        ctx.loss(codes.DESCRIBED, pointer, "moved into the description: pattern (lookaround is not supported)")
    return node


@on('$ref')
def _wrap_ref_siblings(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    """A strict `$ref` cannot have siblings: `{"$ref", description}` → `{"anyOf": [{"$ref"}], description}`."""
    if "$ref" not in node or len(node) == 1:
        return node
    out = {key: value for key, value in node.items() if key != "$ref"}
    if "anyOf" in out:
        out.setdefault("allOf", []).append({"$ref": node["$ref"]})
        ctx.incompatible(pointer, "$ref next to anyOf")
        return out
    out["anyOf"] = [{"$ref": node["$ref"]}]
    return out


def make_nullable(schema: Any) -> Any:
    """The same schema, also accepting null (for an optional property that strict mode makes required)."""
    if not isinstance(schema, dict):
        return schema
    kinds = schema.get("type")
    if isinstance(kinds, str | list) and "anyOf" not in schema and "const" not in schema:
        out = dict(schema)
        out["type"] = [*type_set(schema), "null"]
        if isinstance(out.get("enum"), list):
            out["enum"] = [*out["enum"], None]
        return out
    if isinstance(schema.get("anyOf"), list) and not kinds:
        return {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
    keep = {k: schema[k] for k in ("description", "title") if k in schema}
    inner = {k: v for k, v in schema.items() if k not in keep}
    return {"anyOf": [inner, {"type": "null"}], **keep}


def _strict_object(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    if not is_object(node):
        return node
    if "type" not in node:
        node["type"] = "object"
    extra = node.get("additionalProperties", None)
    properties = node.setdefault("properties", {})
    if "patternProperties" in node or (extra is not None and extra is not False):
        ctx.incompatible(pointer, "an open object (additionalProperties / patternProperties) cannot be strict")
        return node
    if extra is None:
        if not properties and pointer:
            ctx.incompatible(pointer, "an object with no declared properties (a free-form map) cannot be strict")
            return node
        node["additionalProperties"] = False
        ctx.loss(codes.CLOSED_OBJECT, pointer, "additionalProperties: false added; undeclared keys are refused")
    given = node.get("required")
    required: list[Any] = given if isinstance(given, list) else []
    missing = [key for key in required if key not in properties]
    if missing:
        ctx.incompatible(pointer, f"required keys without a property schema: {', '.join(missing)}")
        return node
    optional = [key for key in properties if key not in required]
    for key in optional:
        if allows_null(properties[key]):
            ctx.loss(codes.NULL_IS_OMITTED, f"{pointer}/properties/{key}",
                     "optional and nullable: after strict lowering, null is read as omitted")
        else:
            properties[key] = make_nullable(properties[key])
    node["required"] = list(properties)
    if optional:
        node[MARK_OPTIONAL] = optional
    return node


def _strict_typed(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    if not is_typed(node):
        ctx.incompatible(pointer, "an untyped value (any JSON) cannot be strict")
    elif "array" in type_set(node):
        items = node.get("items")
        if not is_typed(items):
            ctx.incompatible(pointer, "an array without typed items cannot be strict")
    return node


def _strict_root(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    if node.get("type") != "object" or "anyOf" in node:
        ctx.incompatible("", "the root must be a plain object (no anyOf, no null)")
    return node


STRICT_PASSES: tuple[NodePass, ...] = (
    drop_annotations,
    openapi_nullable,
    one_of_to_any_of,
    merge_all_of,
    infer_enum_type,
    strict_open_values,
    _plain_pattern,
    keyword_policy(STRICT_KEYWORDS, STRICT_FORMATS),
    _wrap_ref_siblings,
    _strict_object,
    _strict_typed,
)
LOOSE_PASSES: tuple[NodePass, ...] = (drop_annotations, openapi_nullable)


def _loose_root(node: JsonObject, pointer: str, ctx: Lowering) -> JsonObject:
    node.setdefault("type", "object")
    node.setdefault("properties", {})
    return node


_STRICT_ALLOWED = STRICT_KEYWORDS - {"x-toolc-optional"}
STRICT_RULES: tuple[NodeRule, ...] = (well_formed, allow_list(_STRICT_ALLOWED, "strict-keywords"),
                                      formats(STRICT_FORMATS), closed_objects, strict_objects, typed_items, ref_alone)
LOOSE_RULES: tuple[NodeRule, ...] = (well_formed,)


class OpenAIDialect(Dialect):
    """Chat Completions (`wrapped`) or Responses: the same parameters, lowered once for both, different wrapper."""

    family = "openai"
    tokenizer_exact = True  # GPT-4o and later tokenize with o200k_base
    mangler = names.OPENAI
    resolution = "bundle"
    strict_passes = STRICT_PASSES
    strict_root = (_strict_root,)
    loose_passes = LOOSE_PASSES
    loose_root = (_loose_root,)
    wrapped: ClassVar[bool]

    def _key(self, tool: Tool, name: str, strict: bool) -> tuple[str, str, str, bool]:
        return (self.group, tool.id, name, strict)

    def lower(self, tool: Tool, name: str, env: LowerEnv, *, strict: bool) -> Lowered:
        cached = env.cache.family.get(self._key(tool, name, strict))
        if isinstance(cached, NotStrictHere):
            raise NotStrict(cached.problem)
        if cached is not None:
            return self._wrap(tool, name, cached.parameters, cached.description, strict,
                              [replace(d, provider=self.caps.target) for d in cached.losses], [], cached.shapes)
        try:
            return super().lower(tool, name, env, strict=strict)
        except NotStrict as stop:
            env.cache.family[self._key(tool, name, strict)] = NotStrictHere(stop.problem)
            raise

    def wrap(self, tool: Tool, name: str, parameters: JsonObject, ctx: Lowering, env: LowerEnv, *,
             strict: bool) -> Lowered:
        description = truncate_description(tool_description(tool), ctx)
        if strict:
            shapes = strict_shapes(parameters, env.memo(f"{self.group}-shapes", strict))
            parameters = without_markers(parameters, env.node_memo(f"{self.group}-strip", strict))
        else:
            shapes = ({}, {})
        if not ctx.problems:
            env.cache.family[self._key(tool, name, strict)] = FamilyLowering(parameters, tuple(ctx.losses),
                                                                             description, shapes)
        return self._wrap(tool, name, parameters, description, strict, list(ctx.losses), ctx.problems, shapes)

    def _wrap(self, tool: Tool, name: str, parameters: JsonObject, description: str, strict: bool,
              losses: list[Diagnostic], problems: list[tuple[str, str]],
              shapes: tuple[JsonObject, JsonObject]) -> Lowered:
        body: JsonObject = {"name": name}
        if description:
            body["description"] = description
        body["parameters"] = parameters
        body["strict"] = strict
        definition = {"type": "function", "function": body} if self.wrapped else {"type": "function", **body}
        return Lowered(tool=tool, name=name, definition=definition, parameters=parameters, strict=strict,
                       losses=losses, problems=problems, arg_shape=shapes[0] or None, arg_defs=shapes[1])

    def validate(self, definition: Mapping[str, Any]) -> list[Violation]:
        return _validate_function(definition, self)


def _validate_function(definition: Mapping[str, Any], dialect: OpenAIDialect) -> list[Violation]:
    wrapped = dialect.wrapped
    body = definition.get("function", {}) if wrapped else definition
    base = "/function" if wrapped else ""
    caps = dialect.caps
    found = list(name_rule(body, caps, base + "/name"))
    if definition.get("type") != "function" or not isinstance(body, Mapping):
        found.append(Violation("/type", "wrapper", "expected a function tool"))
        return found
    description = body.get("description", "")
    limit = caps.max_description
    if limit is not None and len(description) > limit:
        found.append(Violation(base + "/description", "description-length", f"{len(description)} > {limit} chars"))
    strict = body.get("strict")
    if not isinstance(strict, bool):
        found.append(Violation(base + "/strict", "strict-explicit", "strict must be true or false"))
    parameters = body.get("parameters")
    found += root_object(parameters, base + "/parameters", combinators=not strict)
    found += check_nodes(parameters, STRICT_RULES if strict else LOOSE_RULES, base + "/parameters")
    if strict and isinstance(parameters, Mapping):
        found += [Violation(base + "/parameters" + v.pointer, v.rule, v.message) for v in limits_of(parameters)]
    return found


class OpenAIChat(OpenAIDialect):
    target = targets.OPENAI_CHAT
    caps = Capabilities(target=target, name_pattern=NAME, max_description=1024, max_tools=128, tools_advice=ADVICE)
    wrapped = True


class OpenAIResponses(OpenAIDialect):
    target = targets.OPENAI_RESPONSES
    caps = Capabilities(target=target, name_pattern=NAME, max_description=1024, max_tools=128, tools_advice=ADVICE)
    wrapped = False
    deferral = Deferral(search_tool={"type": "tool_search"}, group_type="namespace")
    """Responses `tool_search` (gpt-5.4 and later) over `namespace` tools of deferred functions
    (developers.openai.com, tool search guide)."""


CHAT = OpenAIChat()
RESPONSES = OpenAIResponses()
