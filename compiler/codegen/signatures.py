"""The typed signature of one stub: parameters from the input schema, annotations from the generated models.

Annotations are taken from the pydantic model datamodel-code-generator wrote for the tool's input (so stub
and model agree exactly) and rewritten for `tools.py`, where the models module is imported as `_models` and
every name the models module imports is imported again under a leading underscore (`Any` → `_Any`). Since
generated function and parameter names never start with an underscore, no tool or property name can shadow
anything a stub refers to. A name the rewrite does not know makes the annotation fall back to `_Any`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import libcst

from compiler.codegen.identifiers import snake_name, unique_names
from compiler.codegen.models import ModelsModule

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


class _Rewrite(libcst.CSTTransformer):
    def __init__(self, models: ModelsModule) -> None:
        self.models = models
        self.unknown = False
        self.aliases: dict[str, tuple[str, str]] = {}
        self._attr_names: set[int] = set()

    def visit_Attribute(self, node: libcst.Attribute) -> bool:
        self._attr_names.add(id(node.attr))
        return True

    def leave_Name(self, original: libcst.Name, updated: libcst.Name) -> libcst.BaseExpression:
        if id(original) in self._attr_names:
            return updated
        name = original.value
        if name in self.models.local_names:
            return libcst.Attribute(value=libcst.Name("_models"), attr=libcst.Name(name))
        if name in self.models.imports:
            self.aliases["_" + name] = self.models.imports[name]
            return libcst.Name("_" + name)
        if name not in _BUILTIN_TYPES:
            self.unknown = True
        return updated


def rewrite_annotation(annotation: str | None, models: ModelsModule, imports: Imports) -> str:
    """The annotation as `tools.py` must spell it, or `_Any` when it cannot be carried over."""
    fallback = "_Any"
    if annotation is not None:
        try:
            expression = libcst.parse_expression(annotation)
        except libcst.ParserSyntaxError:
            expression = None
        if expression is not None:
            rewrite = _Rewrite(models)
            new = expression.visit(rewrite)
            if not rewrite.unknown and isinstance(new, libcst.BaseExpression):
                imports.needed.update(rewrite.aliases)
                return libcst.Module([]).code_for_node(new)
    imports.needed["_Any"] = ("typing", "Any")
    return fallback


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
