"""Deterministic example arguments for a tool's input schema (the wire judge sends one call per operation).

Every property is filled, at every depth (so that each parameter, body field and nested deepObject key is
serialised), maps (`additionalProperties`) get one key, arrays two items. Strings follow `format`,
`pattern` (through hypothesis' `from_regex`, derandomised) and length bounds. The result is checked against the
input schema with `jsonschema`; optional arguments that do not validate are dropped, and a call whose required
arguments cannot be made valid is reported as not judged (the judge counts those, they are not toolc's wire).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import jsonschema
from hypothesis import HealthCheck, find, settings
from hypothesis import strategies as st

_FORMATS = {
    "date-time": "2024-01-02T03:04:05Z", "date": "2024-01-02", "time": "03:04:05Z", "email": "a@example.com",
    "uri": "https://example.com/x", "url": "https://example.com/x", "uuid": "123e4567-e89b-42d3-a456-426614174000",
    "hostname": "example.com", "ipv4": "192.0.2.1", "ipv6": "2001:db8::1", "byte": "aGVsbG8=",
    "binary": "bytes", "int-or-string": "1", "uri-reference": "/x", "password": "pw-1", "unix-time": "1700000000",
}


@functools.lru_cache(maxsize=1024)
def _from_regex(pattern: str) -> str | None:
    try:
        return find(st.from_regex(pattern, fullmatch=True), lambda _: True,
                    settings=settings(database=None, derandomize=True, max_examples=50,
                                      suppress_health_check=list(HealthCheck)))
    except Exception:  # an unsupported or unsatisfiable pattern: no example
        return None


class Examples:
    def __init__(self, definitions: Mapping[str, Any]) -> None:
        self.definitions = definitions

    def resolve(self, schema: Any) -> Any:
        for _ in range(32):
            if not (isinstance(schema, dict) and isinstance(schema.get("$ref"), str)):
                break
            name = schema["$ref"].rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**self.definitions.get(name, {}), **rest}
        return schema

    def value(self, schema: Any, depth: int = 0) -> Any:
        schema = self.resolve(schema)
        if not isinstance(schema, dict) or depth > 6:
            return "x"
        if "const" in schema:
            return schema["const"]
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return next((item for item in schema["enum"] if item not in ("", None)), schema["enum"][0])
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                branches = [self.resolve(b) for b in schema[key]]
                usable = [b for b in branches if not (isinstance(b, dict) and (b.get("type") == "null" or
                                                                               b.get("enum") == [""]))]
                return self.value({**{k: v for k, v in schema.items() if k != key}, **(usable or branches)[0]},
                                  depth + 1)
        if isinstance(schema.get("allOf"), list):
            merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
            for member in schema["allOf"]:
                member = self.resolve(member)
                if isinstance(member, dict):
                    merged.setdefault("properties", {}).update(member.get("properties", {}))
                    merged["required"] = [*merged.get("required", []), *member.get("required", [])]
                    for key, item in member.items():
                        if key not in ("properties", "required"):
                            merged.setdefault(key, item)
            return self.value(merged, depth + 1)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind is None:
            kind = "object" if "properties" in schema or "additionalProperties" in schema else \
                "array" if "items" in schema else "string"
        if kind == "object":
            return self.object(schema, depth, fill=True)
        if kind == "array":
            count = max(int(schema.get("minItems", 2)), 1) if schema.get("maxItems", 2) >= 2 else 1
            items = [self.value(schema.get("items", {}), depth + 1) for _ in range(count)]
            if schema.get("uniqueItems") and count > 1 and items[0] == items[1]:
                items = items[:1]
            return items
        if kind == "integer":
            return self.number(schema, 1)
        if kind == "number":
            return self.number(schema, 1.5)
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        return self.string(schema)

    def object(self, schema: dict[str, Any], depth: int, *, fill: bool) -> dict[str, Any]:
        properties = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        result = {name: self.value(sub, depth + 1) for name, sub in properties.items() if fill or name in required}
        extra = schema.get("additionalProperties")
        if not properties and isinstance(extra, dict):
            result["key1"] = self.value(extra, depth + 1)
        return result

    @staticmethod
    def number(schema: dict[str, Any], fallback: float) -> Any:
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        high = schema.get("maximum", schema.get("exclusiveMaximum"))
        value: float = fallback
        if isinstance(low, int | float) and not isinstance(low, bool):
            value = low + (1 if "exclusiveMinimum" in schema and "minimum" not in schema else 0)
        if isinstance(high, int | float) and not isinstance(high, bool) and value > high:
            value = high
        return int(value) if isinstance(fallback, int) else value

    @staticmethod
    def string(schema: dict[str, Any]) -> str:
        text = _FORMATS.get(str(schema.get("format")), "abc")
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            text = _from_regex(pattern) or text
        low, high = schema.get("minLength"), schema.get("maxLength")
        if isinstance(low, int) and len(text) < low:
            text += "a" * (low - len(text))
        if isinstance(high, int) and len(text) > high:
            text = text[:high]
        return text


def arguments_for(input_schema: dict[str, Any], definitions: Mapping[str, Any]) -> dict[str, Any] | None:
    """Valid example arguments for a tool, or None if its required arguments could not be made valid."""
    examples = Examples(definitions)
    arguments = examples.object(input_schema, 0, fill=True)
    validator = jsonschema.Draft202012Validator({**input_schema, "$defs": dict(definitions)})
    required = set(input_schema.get("required") or ())
    for _ in range(len(arguments) + 1):
        errors = list(validator.iter_errors(arguments))
        if not errors:
            return arguments
        bad = {str(error.absolute_path[0]) for error in errors if error.absolute_path}
        if not bad or bad & required:
            return None
        for name in bad:
            arguments.pop(name, None)
    return None


def required_only(arguments: dict[str, Any], input_schema: dict[str, Any],
                  definitions: Mapping[str, Any]) -> dict[str, Any] | None:
    """The same call with only the required arguments (optional bodies and parameters left out), if it differs and
    is valid."""
    required = set(input_schema.get("required") or ())
    minimal = {name: value for name, value in arguments.items() if name in required}
    validator = jsonschema.Draft202012Validator({**input_schema, "$defs": dict(definitions)})
    return minimal if minimal != arguments and validator.is_valid(minimal) else None
