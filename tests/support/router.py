"""Shared helpers for the router tests: build a catalog from fixtures, generate the router into a folder and import
it, and an in-process MCP server with tools at every risk level."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from compiler.build import Build, Layout, TargetOutput
from compiler.codegen.router.router_package import generate_router
from compiler.config import Config, OpenApiConfig, PolicyConfig, ServerConfig
from compiler.infra.diagnostics import Diagnostics
from compiler.infra.loading import load_document
from compiler.ir import Catalog, Source, Tool
from compiler.sources.openapi import read_openapi
from compiler.sources.recording import read_recording
from tests.support.paths import FIXTURES, ROOT

DEFAULT_RECORDINGS = tuple(sorted(p.stem for p in (FIXTURES / "mcp").glob("*.json")))


def catalog_from(recordings: Iterable[str] = DEFAULT_RECORDINGS, openapi: Iterable[str] = ("params",),
                 diagnostics: Diagnostics | None = None,
                 openapi_configs: dict[str, OpenApiConfig] | None = None) -> Catalog:
    diagnostics = diagnostics if diagnostics is not None else Diagnostics()
    read: list[tuple[Source, list[Tool]]] = []
    for stem in recordings:
        document = json.loads((FIXTURES / "mcp" / f"{stem}.json").read_text())
        read.append(read_recording(document, source_id=stem, location=f"fixtures/mcp/{stem}.json",
                                   diagnostics=diagnostics))
    for stem in openapi:
        path = FIXTURES / "openapi" / f"{stem}.yaml"
        read.append(read_openapi(load_document(path), source_id=stem, location=str(path),
                                 diagnostics=diagnostics, config=(openapi_configs or {}).get(stem)))
    tools = sorted((tool for _, source_tools in read for tool in source_tools), key=lambda t: t.id)
    return Catalog(sources=tuple(sorted((s for s, _ in read), key=lambda s: s.id)), tools=tuple(tools))


def make_build(catalog: Catalog | None = None, *, policy: dict[str, Any] | None = None,
               servers: Iterable[ServerConfig] = (), openapi: Iterable[OpenApiConfig] = (),
               name_maps: dict[str, dict[str, Any]] | None = None, root: Path = ROOT) -> Build:
    config = Config(root=root, policy=PolicyConfig(**(policy or {})), mcp_servers=tuple(servers),
                    openapi=tuple(openapi))
    return Build(config=config, catalog=catalog if catalog is not None else catalog_from(), resolver=None,  # type: ignore[arg-type]
                 diagnostics=Diagnostics(), targets=("anthropic", "gemini", "openai-chat", "openai-responses"),
                 providers={target: TargetOutput(target, tools={}, names=names, summary={}, array=Path(os.devnull),
                                                 layout=Layout(target, {}), fits_one_request=True)
                            for target, names in (name_maps or {}).items()})


def name_map(target: str, tools: dict[str, str | dict[str, Any]]) -> dict[str, Any]:
    """A name map in the providers' format 1 (`compiler.providers.namemap`): provider name → a tool id (an entry
    with nothing to rewrite) or a whole entry."""
    return {"format": 1, "target": target, "tools": {
        name: {"tool": entry, "strict": False} if isinstance(entry, str) else entry for name, entry in tools.items()}}


def with_name_maps(build: Build) -> Build:
    """`build` with the providers' real output (name maps included), as `toolc compile` makes them."""
    from compiler.providers.schemas import emit_providers
    from compiler.refs import RefResolver

    build.resolver = RefResolver(build.diagnostics)  # make_build has none; the providers stage resolves refs
    build.providers = emit_providers(build)
    return build


def write_router(build: Build, folder: Path) -> Path:
    files = generate_router(build)
    assert files, [d.render() for d in build.diagnostics]
    for relative, content in files.items():
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return folder


@contextlib.contextmanager
def load_router(folder: Path) -> Iterator[Any]:
    """Import the generated package from `folder` (fresh), yield it, then forget it."""
    sys.path.insert(0, str(folder))
    for name in [m for m in sys.modules if m == "toolc_router" or m.startswith("toolc_router.")]:
        del sys.modules[name]
    try:
        yield importlib.import_module("toolc_router")
    finally:
        sys.path.remove(str(folder))
        for name in [m for m in sys.modules if m == "toolc_router" or m.startswith("toolc_router.")]:
            del sys.modules[name]


TIME_SERVER = ServerConfig(id="mcp-server-time", command=(sys.executable, "-m", "mcp_server_time"),
                           args=("--local-timezone", "UTC"), timeout_ms=20_000)



# An in-process MCP server with tools at every risk level (hand-made IR below matches it).
def probe_server() -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("probe", version="1.0")

    @server.tool()
    def echo(text: str) -> dict[str, str]:
        return {"text": text}

    @server.tool()
    def fetch_page(url: str) -> str:
        return f"fetched {url}"

    @server.tool()
    def write_note(text: str, folder: str = "") -> str:
        return f"wrote {text} in {folder}"

    @server.tool()
    def delete_note(note_id: str) -> str:
        return f"deleted {note_id}"

    return server


def probe_tools(server: str = "probe") -> list[Tool]:
    from compiler.ir import McpBinding, RiskLevel

    def tool(name: str, risk: RiskLevel, effects: tuple[str, ...], argument: str, **extra: Any) -> Tool:
        # The input schemas of probe_server's tools, as a listing gives them (a preset is hidden from the schema).
        schema = {"type": "object", "properties": {argument: {"type": "string"}}, "required": [argument]}
        return Tool(id=f"mcp:{server}:{name}", source=server, name=name, description=name, input_schema=schema,
                    binding=McpBinding(server=server, tool_name=name), risk=risk, side_effects=effects, **extra)

    return [
        tool("echo", RiskLevel.LOW, (), "text"),
        tool("fetch_page", RiskLevel.MEDIUM, ("network.http",), "url"),
        tool("write_note", RiskLevel.HIGH, ("fs.write",), "text", fixed_params={"folder": "inbox"}),
        tool("delete_note", RiskLevel.CRITICAL, ("fs.delete",), "note_id"),
    ]


def probe_catalog() -> Catalog:
    return Catalog(sources=(Source(id="probe", kind="mcp", location="probe"),), tools=tuple(probe_tools()))


class BrokenAuditSink:
    """An audit sink whose every write fails (a full disk): the router must refuse the call, fail closed."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error if error is not None else OSError("disk full")

    def emit(self, event: Any) -> None:
        raise self.error

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None
