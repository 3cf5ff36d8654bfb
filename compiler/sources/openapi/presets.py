"""Presets (`fixed_params`) of one operation → the values the router pins on the wire, by location and wire name.

A preset is final: the argument it pins leaves the model-facing schema, and the router sends the preset's value
exactly once, whatever the model passes. Two forms, mixable in one entry:

- flat, by argument name (`{"tenant": "acme"}`): the argument's own location and wire name. A name that a
  collision rename made ambiguous (`owner` pins the body's `owner` while the query's `owner` became `owner_query`)
  is an error listing the candidates: pin `owner_query`, or say `{"query": {"owner": ...}}`.
- layered, by location (`{"header": {"X-Org": "acme"}, "query": {...}, "cookie": {...}, "path": {...},
  "body": {...}}`), when the key is a location and the tool has no argument of that name. A declared parameter
  (or body property) of that location and wire name is pinned; an undeclared header, query or cookie parameter,
  or a field of an object body, is added; an undeclared path parameter cannot be (error).

Always errors: a preset naming nothing (TC312), an ambiguous one (TC316), one that cannot be applied (TC317):
an unknown path variable, a body field without an object body, a key that a credential of the operation uses,
a header or cookie value with CR/LF, an object or array where the schema says a primitive, or a value that is not
JSON-like data.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from compiler.ir import SecurityScheme
from compiler.sources.openapi.codes import AMBIGUOUS_PRESET, BAD_PRESET, UNKNOWN_FIXED_PARAM
from compiler.sources.openapi.document import Context
from compiler.sources.openapi.parameters import Field

LOCATIONS = ("path", "query", "header", "cookie", "body")
_PLAIN = (str, int, float, bool, type(None))


def resolve_presets(ctx: Context, fields: list[Field], fixed: Mapping[str, Any],
                    security: tuple[tuple[SecurityScheme, ...], ...], has_object_body: bool, tool: str,
                    where: str) -> tuple[dict[str, dict[str, Any]], set[int]]:
    """The presets by location and wire name, and the `id()`s of the fields they pin (hidden from the model)."""
    pinned: dict[str, dict[str, Any]] = {}
    hidden: set[int] = set()
    names = {field.name for field in fields}

    def error(code: str, message: str) -> None:
        ctx.diagnostics.report(code, message, source=ctx.location, tool=tool, pointer=where)

    def pin(location: str, wire_name: str, value: Any, field: Field | None, label: str) -> None:
        problem = _problem(location, wire_name, value, field, security, has_object_body)
        if problem:
            error(BAD_PRESET, f"preset {label} cannot be applied: {problem}")
            return
        pinned.setdefault(location, {})[wire_name] = value
        if field is not None:
            hidden.add(id(field))

    for key, value in fixed.items():
        if key in LOCATIONS and key not in names and isinstance(value, Mapping):
            for wire_name, item in value.items():
                wire_name = str(wire_name)
                field = next((f for f in fields if f.location == key and f.wire_name == wire_name), None)
                if field is None and key == "body" and any(f.whole_body for f in fields):
                    field = next(f for f in fields if f.whole_body)
                    if wire_name != field.wire_name:
                        field = None
                pin(key, wire_name, item, field, f"{key}.{wire_name}")
            continue
        owners = [f for f in fields if f.name == key]
        twins = [f for f in fields if f.wire_name == key and f.name != key]
        if not owners:
            hint = f" (a location: {', '.join(LOCATIONS)} takes a mapping)" if key in LOCATIONS else ""
            error(UNKNOWN_FIXED_PARAM, f"preset {key!r} names no argument of the tool{hint}")
            continue
        if twins:
            candidates = ", ".join(f"{f.name!r} ({f.location} {f.wire_name!r})" for f in (*owners, *twins))
            error(AMBIGUOUS_PRESET, f"preset {key!r} is ambiguous after a collision rename: candidates {candidates};"
                  f" pin one by its argument name or by location ({{{owners[0].location}: {{{key}: ...}}}})")
            continue
        field = owners[0]
        pin(field.location, field.wire_name, value, field, repr(key))
    return pinned, hidden


def _problem(location: str, wire_name: str, value: Any, field: Field | None,
             security: tuple[tuple[SecurityScheme, ...], ...], has_object_body: bool) -> str | None:
    if not _json_like(value):
        return "its value is not JSON data"
    primitive = field is not None and field.kind in ("string", "integer", "number", "boolean")
    if primitive and isinstance(value, Mapping | list | tuple):
        return f"a {type(value).__name__} where the schema says {field.kind if field else ''}"
    if field is None and location == "path":
        return f"the path has no variable {{{wire_name}}}"
    if field is None and location == "body" and not has_object_body:
        return "the operation has no object request body to add a field to"
    for alternative in security:
        for scheme in alternative:
            if credential_key(scheme) == (location, wire_name.lower() if location == "header" else wire_name):
                return f"{location} {wire_name!r} carries the credential {scheme.name!r}"
    if location in ("header", "cookie") and _has_line_break(value):
        return "a header or cookie value cannot hold CR or LF"
    return None


def credential_key(scheme: SecurityScheme) -> tuple[str, str]:
    """Where a scheme's credential goes: (location, name), header names lower-cased."""
    if scheme.type == "apiKey" and scheme.param_name and scheme.location in ("query", "cookie"):
        return scheme.location, scheme.param_name
    if scheme.type == "apiKey" and scheme.param_name:
        return "header", scheme.param_name.lower()
    return "header", "authorization"


def _json_like(value: Any, depth: int = 0) -> bool:
    if depth > 32:
        return False
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _json_like(v, depth + 1) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_json_like(v, depth + 1) for v in value)
    return isinstance(value, _PLAIN)


def _has_line_break(value: Any) -> bool:
    if isinstance(value, str):
        return "\r" in value or "\n" in value
    if isinstance(value, Mapping):
        return any(_has_line_break(k) or _has_line_break(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_has_line_break(v) for v in value)
    return False



SOURCE_WIDE = "*"
"""The `fixed_params` key whose presets apply to every operation of the source."""
_ADDABLE = ("header", "query", "cookie")


@dataclasses.dataclass
class SourceWidePresets:
    """`fixed_params["*"]` of one source, and the entries some operation took (`with_source_wide`)."""

    presets: Mapping[str, Any]
    applied: set[str] = dataclasses.field(default_factory=set)


def with_source_wide(own: Mapping[str, Any], every: Mapping[str, Any], fields: list[Field],
                     applied: set[str]) -> dict[str, Any]:
    """The operation's own presets plus the source-wide ones (`fixed_params: {"*": ...}`) that fit it: a layered
    header, query or cookie goes to every operation; a layered path or body entry, or a flat one by argument name,
    only where the operation has that parameter or argument. The operation's own preset for the same key wins.
    `applied` collects the source-wide entries that fit somewhere (`unapplied_source_wide` names the others)."""
    merged = {key: dict(value) if _layered(key, value, fields) else value for key, value in own.items()}
    if not every:
        return merged
    taken = _targets(own, fields)
    for key, value in every.items():
        if _layered(key, value, fields):
            for wire_name, item in value.items():
                wire = str(wire_name)
                declared = any(f.location == key and f.wire_name == wire for f in fields)
                if key in _ADDABLE or declared:
                    applied.add(f"{key}.{wire}")
                    if (key, _fold(key, wire)) not in taken:
                        merged.setdefault(key, {})[wire] = item
            continue
        owner = next((f for f in fields if f.name == key), None)
        if owner is None:
            continue
        applied.add(key)
        if key not in own and (owner.location, _fold(owner.location, owner.wire_name)) not in taken:
            merged[key] = value
    return merged


def unapplied_source_wide(every: Mapping[str, Any], applied: set[str]) -> list[str]:
    """The source-wide entries no operation took (a preset is never dropped silently: TC312)."""
    missing: list[str] = []
    for key, value in every.items():
        if key in LOCATIONS and isinstance(value, Mapping):
            missing.extend(f"{key}.{wire}" for wire in map(str, value) if f"{key}.{wire}" not in applied)
        elif key not in applied:
            missing.append(key)
    return missing


def _layered(key: str, value: Any, fields: list[Field]) -> bool:
    return key in LOCATIONS and isinstance(value, Mapping) and all(f.name != key for f in fields)


def _fold(location: str, wire_name: str) -> str:
    return wire_name.lower() if location == "header" else wire_name


def _targets(own: Mapping[str, Any], fields: list[Field]) -> set[tuple[str, str]]:
    """(location, wire name) of everything the operation's own presets pin."""
    targets: set[tuple[str, str]] = set()
    for key, value in own.items():
        if _layered(key, value, fields):
            targets.update((key, _fold(key, str(wire))) for wire in value)
        else:
            targets.update((f.location, _fold(f.location, f.wire_name)) for f in fields if f.name == key)
    return targets
