"""One rule-based validator per provider (providers.md §1-3, §5): every emitted definition passes it.

`validate(target, definition)` returns violations (empty = valid). Rules are small functions in per-target tables:
definition rules see the whole wrapper, node rules see every schema node. The keyword allow-lists are the same
tables the dialects lower to, so lowering and checking cannot drift apart. Cross-tool limits (tool counts,
Anthropic strict budgets) are applied where the whole tool list is known (`lower.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from compiler.providers import anthropic, gemini, openai
from compiler.providers.base import Capabilities, Checked, token, type_set
from compiler.providers.dialect import Dialect
from compiler.providers.registry import PROVIDERS
from compiler.schema import DEFINITIONS, SCHEMA, SCHEMA_LIST, SCHEMA_MAP, is_data, keywords_of, subschemas

JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
GEMINI_TYPES = JSON_TYPES | {t.upper() for t in JSON_TYPES}

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
        if not isinstance(node.get("properties"), Mapping):
            yield from _v(at, "object-properties", "an object needs properties (even empty)")
        elif sorted(node.get("required", [])) != sorted(node["properties"]):
            yield from _v(at, "required-all", "required must list every key in properties")


def typed_items(node: Node, at: str) -> Iterator[Violation]:
    if "array" in [k.lower() for k in type_set(node)]:
        items = node.get("items")
        if not (isinstance(items, Mapping) and items):
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


def gemini_node(node: Node, at: str) -> Iterator[Violation]:
    """§3.3: one type, string enums (INTEGER with format enum), anyOf alone, items only on arrays."""
    kinds = node.get("type")
    if kinds is not None and not (isinstance(kinds, str) and kinds in GEMINI_TYPES):
        yield from _v(at, "gemini-type", f"type must be one of the Schema types, not {kinds!r}")
    values = node.get("enum")
    if values is not None:
        if not all(isinstance(v, str) and v for v in values):
            yield from _v(at, "gemini-enum", "enum values must be non-empty strings")
        if isinstance(kinds, str) and kinds.lower() != "string" and node.get("format") != "enum":
            yield from _v(at, "gemini-enum-type", "enum only on STRING (or INTEGER with format: enum)")
    if "anyOf" in node and len(node) > 1:
        yield from _v(at, "gemini-anyof-alone", "anyOf must be the only field of its node")
    if "items" in node and not (isinstance(kinds, str) and kinds.lower() == "array"):
        yield from _v(at, "gemini-items-array", "items only on ARRAY")


def json_ref_siblings(node: Node, at: str) -> Iterator[Violation]:
    if "$ref" in node and not set(node) <= {"$ref", "description", "default"}:
        yield from _v(at, "ref-siblings", "a $ref may carry only description and default")


# --- schema-wide limits -------------------------------------------------------------------------------------


def _depth(node: Any, level: int = 1) -> int:
    if not isinstance(node, Mapping):
        return level - 1
    deepest = level
    for _name, sub in (node.get("properties") or {}).items():
        deepest = max(deepest, _depth(sub, level + 1))
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), Mapping):
            deepest = max(deepest, _depth(node[key], level + 1 if "object" in type_set(node[key]) else level))
    for branch in node.get("anyOf") or ():
        deepest = max(deepest, _depth(branch, level))
    return deepest


def strict_limits(schema: Node) -> Iterator[Violation]:
    """§1.4 limits: 5000 properties, 10 levels, 1000 enum values, 120,000 chars, big enums ≤ 15,000 chars."""
    properties = enum_values = chars = 0
    for at, node in iter_nodes(schema):
        keys = list(node.get("properties") or {})
        properties += len(keys)
        chars += sum(len(k) for k in keys)
        values = node.get("enum") or []
        enum_values += len(values)
        strings = [v for v in values if isinstance(v, str)]
        chars += sum(len(v) for v in strings)
        if isinstance(node.get("const"), str):
            chars += len(node["const"])
        if len(strings) > STRICT_BIG_ENUM and sum(len(v) for v in strings) > STRICT_BIG_ENUM_CHARS:
            yield from _v(at, "limit-big-enum", f"an enum of {len(strings)} strings over {STRICT_BIG_ENUM_CHARS} chars")
    chars += sum(len(k) for k in schema.get("$defs") or {})
    roots = [schema, *(schema.get("$defs") or {}).values()]
    depth = max(_depth(root) for root in roots)
    for name, value, limit in (("properties", properties, STRICT_MAX_PROPERTIES),
                               ("enum-values", enum_values, STRICT_MAX_ENUM_VALUES),
                               ("string-length", chars, STRICT_MAX_STRING_TOTAL),
                               ("depth", depth, STRICT_MAX_DEPTH)):
        if value > limit:
            yield from _v("", f"limit-{name}", f"{value} > {limit}")


# --- the tables ---------------------------------------------------------------------------------------------

_STRICT_ALLOWED = openai.STRICT_KEYWORDS - {"x-toolc-optional"}
OPENAI_STRICT: tuple[NodeRule, ...] = (well_formed, allow_list(_STRICT_ALLOWED, "strict-keywords"),
                                       formats(openai.STRICT_FORMATS), closed_objects, strict_objects, typed_items,
                                       ref_alone)
OPENAI_LOOSE: tuple[NodeRule, ...] = (well_formed,)
ANTHROPIC_LOOSE: tuple[NodeRule, ...] = (well_formed, no_refs, no_type_lists)
ANTHROPIC_STRICT: tuple[NodeRule, ...] = (*ANTHROPIC_LOOSE, allow_list(anthropic.STRICT_KEYWORDS, "strict-keywords"),
                                          formats(anthropic.STRICT_FORMATS), closed_objects, min_items_01,
                                          primitive_enum)
ANTHROPIC_SHARED: tuple[NodeRule, ...] = (well_formed, local_refs, no_type_lists)
GEMINI_PARAMETERS: tuple[NodeRule, ...] = (allow_list(gemini.SCHEMA_KEYWORDS, "gemini-keywords"),
                                           formats(gemini.SCHEMA_FORMATS), gemini_node, typed_items)
GEMINI_JSON: tuple[NodeRule, ...] = (well_formed, allow_list(gemini.JSON_SCHEMA_KEYWORDS, "gemini-keywords"),
                                     json_ref_siblings)


def _name(definition: Node, caps: Capabilities, at: str) -> Iterator[Violation]:
    name, pattern = definition.get("name"), caps.name_pattern
    if not (isinstance(name, str) and pattern.match(name) and len(name) <= caps.max_name_length):
        yield from _v(at, "name", f"tool name {name!r} must match {pattern.pattern}")


_CHECKED: ContextVar[Checked | None] = ContextVar("toolc_checked", default=None)


def _nodes(schema: Any, rules: tuple[NodeRule, ...], base: str) -> Iterator[Violation]:
    checked = _CHECKED.get()
    seen: list[int] = []
    clean = True
    for at, node in iter_nodes(schema, skip=checked.ids if checked else None):
        seen.append(id(node))
        for rule in rules:
            for violation in rule(node, base + at):
                clean = False
                yield violation
    if checked is not None and clean:
        checked.ids.update(seen)
        checked.pins.append(schema)


def _root_object(schema: Any, at: str, *, combinators: bool) -> Iterator[Violation]:
    if not isinstance(schema, Mapping) or str(schema.get("type", "")).lower() != "object":
        yield from _v(at, "root-object", "the root must be type: object")
    elif not combinators and {"anyOf", "oneOf", "allOf"} & set(schema):
        yield from _v(at, "root-combinator", "no anyOf/oneOf/allOf at the root")


def validate_openai(definition: Node, dialect: openai.OpenAIDialect) -> list[Violation]:
    wrapped = dialect.wrapped
    body = definition.get("function", {}) if wrapped else definition
    base = "/function" if wrapped else ""
    caps = dialect.caps
    found = list(_name(body, caps, base + "/name"))
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
    found += _root_object(parameters, base + "/parameters", combinators=not strict)
    found += _nodes(parameters, OPENAI_STRICT if strict else OPENAI_LOOSE, base + "/parameters")
    if strict and isinstance(parameters, Mapping):
        found += [Violation(base + "/parameters" + v.pointer, v.rule, v.message) for v in strict_limits(parameters)]
    return found


def validate_anthropic(definition: Node, dialect: Dialect) -> list[Violation]:
    found = list(_name(definition, dialect.caps, "/name"))
    schema = definition.get("input_schema")
    found += _root_object(schema, "/input_schema", combinators=False)
    strict = definition.get("strict", False) is True
    shared = isinstance(schema, Mapping) and "$defs" in schema  # over the inline budget (TC451)
    rules = ANTHROPIC_SHARED if shared and not strict else ANTHROPIC_STRICT if strict else ANTHROPIC_LOOSE
    found += _nodes(schema, rules, "/input_schema")
    examples = definition.get("input_examples")
    if examples is not None and isinstance(schema, Mapping):
        from jsonschema import Draft202012Validator  # only definitions with examples pay for it

        checker = Draft202012Validator(schema)
        if not isinstance(examples, list) or not all(isinstance(e, dict) and checker.is_valid(e) for e in examples):
            found.append(Violation("/input_examples", "input-examples", "every input example must be an object that "
                                   "validates against input_schema"))
    for key in (schema or {}).get("properties", {}) if isinstance(schema, Mapping) else ():
        if not anthropic.KEY.match(key):
            found.append(Violation(f"/input_schema/properties/{key}", "property-key", "key must match "
                                   + anthropic.KEY.pattern))
    return found


def validate_gemini(definition: Node, dialect: Dialect) -> list[Violation]:
    found = list(_name(definition, dialect.caps, "/name"))
    extra = set(definition) - {"name", "description", "parameters", "parametersJsonSchema"}
    if extra or ("parameters" in definition and "parametersJsonSchema" in definition):
        found.append(Violation("", "gemini-declaration", "unknown keys or both parameters and parametersJsonSchema"))
    if "parameters" in definition:
        found += _root_object(definition["parameters"], "/parameters", combinators=False)
        found += _nodes(definition["parameters"], GEMINI_PARAMETERS, "/parameters")
    if "parametersJsonSchema" in definition:
        found += _root_object(definition["parametersJsonSchema"], "/parametersJsonSchema", combinators=True)
        found += _nodes(definition["parametersJsonSchema"], GEMINI_JSON, "/parametersJsonSchema")
    return found


def malformed(schema: Any) -> list[Violation]:
    """What makes a *source* schema unusable for any lowering (checked before lowering)."""
    found: list[Violation] = []
    for at, node in iter_nodes(schema):
        found.extend(well_formed(node, at))
        if len(found) >= 5:
            break
    return found


def validate(target: str | Dialect, definition: Node, checked: Checked | None = None) -> list[Violation]:
    """Violations of `definition` (empty: valid). `checked` (one per dialect family) skips subtrees seen valid
    before. Each dialect's `validate` method picks its rules."""
    dialect = PROVIDERS[target] if isinstance(target, str) else target
    token = _CHECKED.set(checked)
    try:
        return dialect.validate(definition)
    finally:
        _CHECKED.reset(token)
