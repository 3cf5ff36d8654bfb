"""Helpers shared by the provider tests (no tests here)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from compiler.config import Config, NamesConfig, ProvidersConfig
from compiler.infra.diagnostics import Diagnostics
from compiler.ir import Catalog, JsonObject, McpBinding, Source, Tool
from compiler.providers.lower import TargetResult, lower_target
from compiler.refs import RefResolver
from tests.support.paths import ROOT

TARGETS = ("openai-chat", "openai-responses", "anthropic", "gemini")


def make_tool(schema: JsonObject, name: str = "tool", source: str = "srv", description: str = "A tool.") -> Tool:
    return Tool(id=f"mcp:{source}:{name}", source=source, name=name, description=description, input_schema=schema,
                binding=McpBinding(server=source, tool_name=name))


def catalog_of(*tools: Tool, definitions: dict[str, Any] | None = None) -> Catalog:
    sources = sorted({t.source for t in tools})
    return Catalog(sources=tuple(Source(id=s, kind="mcp", location=s, definitions=definitions or {}) for s in sources),
                   tools=tuple(sorted(tools, key=lambda t: t.id)))


def config(**providers: Any) -> Config:
    names = providers.pop("names", None)
    return Config(root=ROOT, providers=ProvidersConfig(**providers), names=names or NamesConfig())


def lower(catalog: Catalog, target: str, cfg: Config | None = None) -> TargetResult:
    return lower_target(catalog, RefResolver(Diagnostics()), target, cfg or config())


def lower_one(schema: JsonObject, target: str, cfg: Config | None = None, **tool: Any) -> TargetResult:
    return lower(catalog_of(make_tool(schema, **tool)), target, cfg)


def parameters_of(target: str, definition: JsonObject) -> Any:
    if target == "openai-chat":
        return definition["function"]["parameters"]
    if target == "openai-responses":
        return definition["parameters"]
    if target == "anthropic":
        return definition["input_schema"]
    return definition.get("parameters", definition.get("parametersJsonSchema"))


def resolve(data: Any, pointer: str) -> Any:
    from compiler.refs import resolve_pointer

    return resolve_pointer(data, "#" + pointer)


json_documents = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20)
"""Any JSON value orjson writes (64-bit integers, finite floats, any text): the token-count properties' input."""
