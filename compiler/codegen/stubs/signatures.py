"""The typed signature of one stub: parameters from the input schema, annotations from the generated models.

Annotations are taken from the pydantic model datamodel-code-generator wrote for the tool's input (so stub
and model agree exactly) and rewritten for `tools.py`, where the models module is imported as `_models` and
every name the models module imports is imported again under a leading underscore (`Any` → `_Any`). Since
generated function and parameter names never start with an underscore, no tool or property name can shadow
anything a stub refers to. A name the rewrite does not know makes the annotation fall back to `_Any`.
When a big source's models are split into chunk modules (`codegen.stubs.model_chunks`), a name `models.py` does not
re-export is spelt through its chunk, which `models.py` does export: `_models._models_3.Body12`.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from compiler.codegen.stubs.identifiers import snake_name, unique_names
from compiler.codegen.stubs.models import ModelsModule

_BUILTIN_TYPES = frozenset({"None", "list", "dict", "set", "frozenset", "tuple", "str", "int", "float", "bool",
                            "bytes", "type", "object"})
PARAMETER_RESERVED = frozenset({"context"})
"""`context` is every stub's last keyword (the router's InvocationContext)."""


@dataclass(frozen=True)
class Param:
    name: str
    wire: str
    annotation: str
    required: bool
    description: str


@dataclass
class Imports:
    """`from <module> import <name> as _<name>` lines the rewritten annotations need, collected per module."""

    needed: dict[str, tuple[str, str]] = field(default_factory=dict)

    def lines(self) -> list[str]:
        return [f"from {module} import {name} as {alias}"
                for alias, (module, name) in sorted(self.needed.items(), key=lambda item: (item[1], item[0]))]


def _spelling(name: str, models: ModelsModule, aliases: dict[str, tuple[str, str]]) -> str | None:
    """How tools.py spells a name the models module uses, or None when the rewrite does not know it."""
    if name in models.local_names:
        module = models.module
        # A name of a split source's chunk that models.py does not re-export goes through the chunk module,
        # which models.py exports; an import of the chunk in tools.py could not be placed where ruff wants it.
        return f"_models.{name}" if not module or name in models.exported else f"_models.{module}.{name}"
    if name in models.imports:
        aliases["_" + name] = models.imports[name]
        return "_" + name
    return name if name in _BUILTIN_TYPES else None


_LINE_END = re.compile(rb"\r\n|\r|\n")


@functools.lru_cache(maxsize=65536)
def _names(annotation: str) -> tuple[tuple[int, int, str], ...] | None:
    """(start, stop, name) of every name in the annotation, as UTF-8 byte offsets, or None when it does not parse.
    Cached: a big source repeats a few thousand distinct annotations over its tens of thousands of fields."""
    try:
        tree = ast.parse(annotation, mode="eval")
    except (SyntaxError, ValueError):
        return None
    data = annotation.encode("utf-8")
    line_starts = [0, *(match.end() for match in _LINE_END.finditer(data))]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            end_line = node.end_lineno or node.lineno
            found.append((line_starts[node.lineno - 1] + node.col_offset,
                          line_starts[end_line - 1] + (node.end_col_offset or 0), node.id))
    return tuple(sorted(found, reverse=True))


def _rewrite(annotation: str, models: ModelsModule, aliases: dict[str, tuple[str, str]]) -> str | None:
    """Every name in the annotation respelt in place (the rest of the text stays as written), or None.

    `ast` positions are UTF-8 byte columns, so the splicing is done on bytes. (This used libcst, which was
    the slowest part of writing tools.py for a big source.)"""
    names = _names(annotation)
    if names is None:
        return None
    data = annotation.encode("utf-8")
    for start, stop, name in names:
        new = _spelling(name, models, aliases)
        if new is None:
            return None
        data = data[:start] + new.encode("utf-8") + data[stop:]
    return data.decode("utf-8")


def rewrite_annotation(annotation: str | None, models: ModelsModule, imports: Imports) -> str:
    """The annotation as `tools.py` must spell it, or `_Any` when it cannot be carried over."""
    if annotation is not None:
        aliases: dict[str, tuple[str, str]] = {}
        new = _rewrite(annotation, models, aliases)
        if new is not None:
            imports.needed.update(aliases)
            return new
    imports.needed["_Any"] = ("typing", "Any")
    return "_Any"


def _optional(annotation: str) -> str:
    if annotation in ("_Any", "None") or annotation.endswith("| None") or annotation.startswith("None |"):
        return annotation
    return f"{annotation} | None"


def parameters(schema: Mapping[str, Any], fields: Mapping[str, str] | None, models: ModelsModule,
               imports: Imports) -> list[Param]:
    """Keyword-only parameters: required ones first, each group in the schema's property order."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required_raw = schema.get("required")
    required = [k for k in required_raw if isinstance(k, str)] if isinstance(required_raw, list) else []
    wires = list(dict.fromkeys([*properties, *required]))
    names = unique_names(wires, lambda raw: snake_name(raw, fallback="arg", prefix="p", reserved=PARAMETER_RESERVED))
    params: list[Param] = []
    for wire in wires:
        prop = properties.get(wire)
        description = prop.get("description") if isinstance(prop, Mapping) else None
        annotation = rewrite_annotation((fields or {}).get(wire), models, imports)
        is_required = wire in required
        params.append(Param(
            name=names[wire],
            wire=wire,
            annotation=annotation if is_required else _optional(annotation),
            required=is_required,
            description=description if isinstance(description, str) else "",
        ))
    return sorted(params, key=lambda p: not p.required)
