"""`pattern`s checked the way the generated models will compile them, before the models are generated.

pydantic v2 compiles a string's `pattern` when the model class is created (at import of `models.py`), with
the Rust `regex` crate unless the model's config says `regex_engine="python-re"`, which the pinned
datamodel-code-generator writes when a pattern needs it (a lookaround, or syntax the Rust engine refuses:
`needs_python_engine`). A pattern neither engine accepts would make the generated package raise on import,
so here each one (and each `patternProperties` key) is compiled by pydantic-core itself with the engine the
generator will choose; one that fails is dropped from the schema the models are generated from (the stub
still sends whatever the caller gives, and the server still validates), with a warning (TC611).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic_core import SchemaError, SchemaValidator, core_schema

_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "dependentSchemas"})
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_SCHEMA_ONE = frozenset({
    "items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
    "unevaluatedItems", "unevaluatedProperties", "additionalItems",
})


@dataclass(frozen=True)
class DroppedPattern:
    pointer: str
    pattern: str
    reason: str


def _engine(pattern: str) -> str:
    from datamodel_code_generator._regex_syntax import needs_python_engine  # pinned: decides the model config

    return "python-re" if needs_python_engine(pattern, row="model") else "rust-regex"


@functools.lru_cache(maxsize=4096)
def pattern_problem(pattern: str) -> str | None:
    """Why pydantic would refuse `pattern` in a generated model, or None when it compiles."""
    engine = _engine(pattern)
    config = core_schema.CoreConfig(regex_engine="python-re") if engine == "python-re" else None
    try:
        SchemaValidator(core_schema.str_schema(pattern=pattern), config)
    except SchemaError as exc:
        detail = " ".join(str(exc).split())
        return f"{engine}: {detail[-160:]}"
    except (ValueError, OverflowError, RecursionError, MemoryError) as exc:
        return f"{engine}: {type(exc).__name__}"
    return None


def _token(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def drop_bad_patterns(schema: Any, pointer: str = "") -> tuple[Any, list[DroppedPattern]]:
    """`schema` without the patterns pydantic would refuse (copied where changed; the input is read-only)."""
    dropped: list[DroppedPattern] = []
    return _clean(schema, pointer, dropped), dropped


def _clean(node: Any, pointer: str, dropped: list[DroppedPattern]) -> Any:
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    changed = False
    for key, value in node.items():
        here = f"{pointer}/{_token(key)}"
        new = value
        if key == "pattern" and isinstance(value, str):
            problem = pattern_problem(value)
            if problem is not None:
                dropped.append(DroppedPattern(here, value, problem))
                changed = True
                continue
        elif key == "patternProperties" and isinstance(value, Mapping):
            kept = {}
            differs = False
            for name, sub in value.items():
                problem = pattern_problem(name) if isinstance(name, str) else "not a string"
                if problem is not None:
                    dropped.append(DroppedPattern(f"{here}/{_token(str(name))}", str(name), problem))
                    differs = True
                    continue
                kept[name] = _clean(sub, f"{here}/{_token(name)}", dropped)
                differs = differs or kept[name] is not sub
            new = kept if differs else value
        elif key in _SCHEMA_MAPS and isinstance(value, Mapping):
            mapped = {name: _clean(sub, f"{here}/{_token(str(name))}", dropped) for name, sub in value.items()}
            new = mapped if any(mapped[n] is not value[n] for n in mapped) else value
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            items = [_clean(sub, f"{here}/{i}", dropped) for i, sub in enumerate(value)]
            new = items if any(a is not b for a, b in zip(items, value, strict=True)) else value
        elif key in _SCHEMA_ONE and isinstance(value, Mapping):
            new = _clean(value, here, dropped)
        if new is not value:
            changed = True
        out[key] = new
    return out if changed else node
