"""Claude `input_examples` from the document's own examples: only those that validate against the tool's
`input_schema` as sent (Claude refuses a request whose example does not, providers.md §2.1).

Candidates, in order: the root schema's `examples` (whole argument objects), then one example composed from the
properties' first valid `examples` (parameter and schema examples; nested objects composed the same way), which is
a candidate only when every required property has one. Within limits toolc sets itself, since Claude documents
none: at most `MAX_EXAMPLES`, each at most `MAX_EXAMPLE_CHARS` of compact JSON. A candidate that fails validation
or the limits is left out and reported (TC426).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from compiler.infra.serialize import compact_json
from compiler.ir import JsonObject
from compiler.providers import codes
from compiler.providers.base import Lowering

MAX_EXAMPLES = 3
MAX_EXAMPLE_CHARS = 2048
_MISSING = object()


def _compose(schema: Any, depth: int = 0) -> Any:
    """A value built from `examples` under `schema`, or _MISSING."""
    if not isinstance(schema, Mapping) or depth > 8:
        return _MISSING
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        own = {key: value for key, value in schema.items() if key != "examples"}
        return next((example for example in examples if _valid(own, example)), _MISSING)
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return _MISSING
    out: dict[str, Any] = {}
    for key, sub in properties.items():
        value = _compose(sub, depth + 1)
        if value is not _MISSING:
            out[key] = value
    required = schema.get("required")
    if not out or (isinstance(required, list) and any(key not in out for key in required)):
        return _MISSING
    return out


_EXAMPLE_CHECKS: dict[bytes, bool] = {}
"""A property's schema and one of its examples, as compact JSON → whether the example validates. Tools share
their properties (the same parameter, the same definition inlined), and making a validator costs jsonschema far
more than encoding the pair."""


def _valid(schema: Mapping[str, Any], value: Any) -> bool:
    try:
        key = compact_json([schema, value])
    except orjson.JSONEncodeError:  # not plain JSON (an integer past 64 bits): checked, not remembered
        return _validates(schema, value)
    found = _EXAMPLE_CHECKS.get(key)
    if found is None:
        found = _EXAMPLE_CHECKS[key] = _validates(schema, value)
    return found


def _validates(schema: Mapping[str, Any], value: Any) -> bool:
    # jsonschema is imported where an example is checked (here and in `input_examples`): a compile whose
    # schemas have no examples, and every command that loads the providers without lowering, skip its 0.05 s.
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        return bool(Draft202012Validator(schema).is_valid(value))
    except (SchemaError, ValueError, TypeError):  # a schema jsonschema cannot evaluate: no example from it
        return False


def candidates(schema: Mapping[str, Any]) -> list[Any]:
    found: list[Any] = []
    whole = schema.get("examples")
    if isinstance(whole, list):
        found.extend(whole)
    composed = _compose({key: value for key, value in schema.items() if key != "examples"})
    if composed is not _MISSING:
        found.append(composed)
    unique: list[Any] = []
    for item in found:
        if item not in unique:
            unique.append(item)
    return unique


_SCHEMA_CHECKS: dict[bytes, bool] = {}
"""A schema's compact JSON → whether it is a valid JSON Schema (draft 2020-12). Checking one against the
metaschema takes jsonschema ~3 ms however small it is, and tools share schemas (Microsoft Graph: 310 checks of
214 schemas)."""


def _valid_schema(schema: JsonObject) -> bool:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        key = compact_json(schema)
    except orjson.JSONEncodeError:  # not plain JSON (an integer past 64 bits): checked, not remembered
        key = b""
    valid = _SCHEMA_CHECKS.get(key) if key else None
    if valid is None:
        try:
            Draft202012Validator.check_schema(schema)
            valid = True
        except SchemaError:
            valid = False
        if key:
            _SCHEMA_CHECKS[key] = valid
    return valid


class _LastValidator:
    """The validator made for the last `input_schema` that had examples: the definition's validation
    (`anthropic._validate_tool`) checks the kept examples against the same schema object right after
    `input_examples` chose them, and making a jsonschema validator costs more than checking a small example."""

    schema: Mapping[str, Any] | None = None
    validator: Any = None


def validator_for(schema: Mapping[str, Any]) -> Any:
    """A draft 2020-12 validator of `schema` (the last one made, when `schema` is the same object)."""
    from jsonschema import Draft202012Validator

    if _LastValidator.schema is not schema:
        _LastValidator.schema, _LastValidator.validator = schema, Draft202012Validator(schema)
    return _LastValidator.validator


def input_examples(schema: JsonObject, ctx: Lowering) -> list[JsonObject]:
    """The examples to send beside `schema` (the lowered `input_schema`); rejected ones are reported."""
    found = candidates(schema)
    if not found:
        return []
    if not _valid_schema(schema):
        return []
    validator = validator_for(schema)
    kept: list[JsonObject] = []
    for index, example in enumerate(found):
        why = ""
        if not isinstance(example, dict):
            why = "not an object"
        elif len(compact_json(example)) > MAX_EXAMPLE_CHARS:
            why = f"over {MAX_EXAMPLE_CHARS} characters"
        elif len(kept) >= MAX_EXAMPLES:
            why = f"more than {MAX_EXAMPLES} examples"
        else:
            error = next(iter(validator.iter_errors(example)), None)
            if error is not None:
                why = f"does not validate: {error.message[:120]}"
        if why:
            ctx.loss(codes.EXAMPLE_DROPPED, "", f"input example {index + 1} left out: {why}")
            continue
        assert isinstance(example, dict)
        kept.append(example)
    return kept
