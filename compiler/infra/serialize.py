"""IR ⇄ JSON, and the canonical JSON encoding every emitted file uses (sorted keys, 2-space indent, LF, UTF-8)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import orjson

from compiler.ir import (
    Annotations,
    Catalog,
    CredentialArgument,
    HttpArgument,
    HttpBinding,
    McpBinding,
    PartialOutputBinding,
    RiskLevel,
    SecurityScheme,
    Source,
    Tool,
)

CATALOG_FORMAT = 1


def canonical_json(data: Any) -> bytes:
    """The one encoding for generated JSON: byte-identical for equal data, whatever the dict order."""
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"


def compact_json(data: Any) -> bytes:
    """Canonical but compact: for hashing and for large files nobody reads by eye."""
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS)


def _drop_none(data: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if value is not None}


def annotations_to_json(annotations: Annotations) -> dict[str, Any]:
    return _drop_none({f.name: getattr(annotations, f.name) for f in dataclasses.fields(annotations)})


_ARGUMENT_FIELDS = tuple(f.name for f in dataclasses.fields(HttpArgument))
_OMIT_FALSE = frozenset({"allow_reserved", "required_in_body"})
"""Later argument fields: written only when set, so catalogs of operations that don't use them keep their bytes."""
_SCHEME_FIELDS = tuple(f.name for f in dataclasses.fields(SecurityScheme))


def _shallow(obj: Any, names: tuple[str, ...]) -> dict[str, Any]:
    # Field by field rather than dataclasses.asdict, which deep-copies and costs ~0.5 s on GitHub's 1,223 tools.
    return {name: value for name in names
            if (value := getattr(obj, name)) is not None and not (value is False and name in _OMIT_FALSE)}


def _argument_to_json(argument: HttpArgument) -> dict[str, Any]:
    data = _shallow(argument, _ARGUMENT_FIELDS)
    if isinstance(argument, CredentialArgument):
        data["credential"] = argument.credential
    return data


def _argument_from_json(data: Mapping[str, Any]) -> HttpArgument:
    return CredentialArgument(**data) if "credential" in data else HttpArgument(**data)


def binding_to_json(binding: McpBinding | HttpBinding,
                    argument: Callable[[HttpArgument], dict[str, Any]] = _argument_to_json) -> dict[str, Any]:
    if isinstance(binding, McpBinding):
        return {"kind": "mcp", "server": binding.server, "tool_name": binding.tool_name}
    return {
        "kind": "http",
        "method": binding.method,
        "path": binding.path,
        "base_url": binding.base_url,
        "body_content_type": binding.body_content_type,
        **({"body_required": True} if binding.body_required else {}),
        **({"output_partial": True} if isinstance(binding, PartialOutputBinding) else {}),
        "arguments": [argument(each) for each in binding.arguments],
        "security": [[_shallow(s, _SCHEME_FIELDS) for s in alternative] for alternative in binding.security],
    }


def tool_to_json(tool: Tool, argument: Callable[[HttpArgument], dict[str, Any]] = _argument_to_json) -> dict[str, Any]:
    return _drop_none(
        {
            "id": tool.id,
            "source": tool.source,
            "name": tool.name,
            "title": tool.title,
            "description": tool.description,
            "input_schema": tool.input_schema,
            "output_schema": tool.output_schema,
            "annotations": annotations_to_json(tool.annotations) or None,
            "risk": tool.risk.label,
            "side_effects": list(tool.side_effects),
            "fixed_params": dict(tool.fixed_params) or None,
            "binding": binding_to_json(tool.binding, argument),
            "extra": dict(tool.extra) or None,
        }
    )


def source_to_json(source: Source) -> dict[str, Any]:
    return {
        "id": source.id,
        "kind": source.kind,
        "location": source.location,
        "info": dict(source.info),
        "definitions": dict(source.definitions),
    }


def catalog_to_json(catalog: Catalog, entry: Callable[[Tool], dict[str, Any]] = tool_to_json) -> dict[str, Any]:
    """`entry`: each tool's entry (`tool_to_json`, or what gives the same, as `catalog_json` does)."""
    return {
        "format": CATALOG_FORMAT,
        "sources": [source_to_json(s) for s in sorted(catalog.sources, key=lambda s: s.id)],
        "tools": [entry(t) for t in sorted(catalog.tools, key=lambda t: t.id)],
    }


class ToolWriter:
    """`tool_to_json` for many tools: an argument object tools share (the OpenAPI reader makes equal arguments one)
    is written once, its dict shared by their entries (Microsoft Graph: 2,702 for 75,641 uses; one dict each was
    a third of the catalog's encoding time and ~30 MB held while the entries live)."""

    def __init__(self) -> None:
        self._arguments: dict[int, tuple[HttpArgument, dict[str, Any]]] = {}

    def tool(self, tool: Tool) -> dict[str, Any]:
        return tool_to_json(tool, self._argument)

    def _argument(self, argument: HttpArgument) -> dict[str, Any]:
        seen = self._arguments.get(id(argument))
        if seen is None:
            seen = self._arguments[id(argument)] = (argument, _argument_to_json(argument))  # pinned: ids stay its
        return seen[1]


def tool_from_json(data: Mapping[str, Any]) -> Tool:
    return ToolReader().tool(data)


class ToolReader:
    """`tool_from_json` for many tools at once: equal arguments, security requirements and annotations become one
    object each, as the OpenAPI reader shares them when it builds tools (Microsoft Graph's 11,422 tools hold 75,641
    arguments, a few thousand distinct: made one by one, they were most of decoding the tools cache)."""

    def __init__(self) -> None:
        self._shared: dict[tuple[Any, ...], Any] = {}
        self._arguments: dict[int, tuple[Mapping[str, Any], HttpArgument]] = {}
        """`id()` of an argument's dict (pinned with it) → its argument: the tools cache shares those dicts."""

    def tool(self, data: Mapping[str, Any]) -> Tool:
        """The tool `data` encodes; TypeError (as the dataclasses raise) for parts of the wrong shape, which the
        readers of a damaged catalog.json or cache catch."""
        try:
            return self._tool(data)
        except AttributeError as exc:  # `.items()` of a part that is not an object
            raise TypeError(f"malformed tool: {exc}") from exc

    def _tool(self, data: Mapping[str, Any]) -> Tool:
        """As `tool_from_json`; a value that cannot be a field raises TypeError, KeyError or ValueError."""
        binding = data["binding"]
        return Tool(
            id=data["id"],
            source=data["source"],
            name=data["name"],
            title=data.get("title"),
            description=data.get("description", ""),
            input_schema=data["input_schema"],
            output_schema=data.get("output_schema"),
            binding=self._binding(binding),
            annotations=self._one(("annotations", *data.get("annotations", {}).items()),
                                  lambda: Annotations(**data.get("annotations", {}))),
            risk=RiskLevel.from_label(data.get("risk", "low")),
            side_effects=tuple(data.get("side_effects", ())),
            fixed_params=data.get("fixed_params", {}),
            extra=data.get("extra", {}),
        )

    def _one(self, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        found = self._shared.get(key)
        if found is None:
            found = self._shared[key] = make()
        return found

    def _argument(self, data: Mapping[str, Any]) -> HttpArgument:
        seen = self._arguments.get(id(data))
        if seen is None:
            argument = self._one(("argument", *data.items()), partial(_argument_from_json, data))
            seen = self._arguments[id(data)] = (data, argument)
        return seen[1]

    def _binding(self, data: Mapping[str, Any]) -> McpBinding | HttpBinding:
        if data["kind"] == "mcp":
            return McpBinding(server=data["server"], tool_name=data["tool_name"])
        binding = PartialOutputBinding if data.get("output_partial") else HttpBinding
        security = data.get("security", [])
        return binding(
            method=data["method"],
            path=data["path"],
            base_url=data["base_url"],
            body_content_type=data.get("body_content_type"),
            body_required=data.get("body_required", False),
            arguments=tuple(self._argument(argument) for argument in data["arguments"]),
            security=self._one(("security", *(tuple(tuple(s.items()) for s in alt) for alt in security)),
                               lambda: tuple(tuple(SecurityScheme(**s) for s in alt) for alt in security)),
        )


def catalog_from_json(data: Mapping[str, Any]) -> Catalog:
    sources = tuple(
        Source(id=s["id"], kind=s["kind"], location=s["location"], info=s.get("info", {}),
               definitions=s.get("definitions", {}))
        for s in data["sources"]
    )
    reader = ToolReader()
    return Catalog(sources=sources, tools=tuple(reader.tool(t) for t in data["tools"]))
