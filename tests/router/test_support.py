"""Shared helpers for the router tests (build a catalog from fixtures, generate the router into a folder), and
tests of what the generator bakes in."""

from __future__ import annotations

import contextlib
import importlib
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from compiler.build import Build, TargetOutput
from compiler.codegen.router import generate_router
from compiler.config import Config, OpenApiConfig, PolicyConfig, ServerConfig, config_from_data
from compiler.diagnostics import CompilerError, Diagnostics
from compiler.ir import Catalog, Source, Tool
from compiler.loading import load_document
from compiler.sources.openapi import read_openapi
from compiler.sources.recording import read_recording
from tests.support.paths import ROOT

FIXTURES = ROOT / "fixtures"
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
                 providers={target: TargetOutput(target, tools={}, names=names, summary={})
                            for target, names in (name_maps or {}).items()})


def name_map(target: str, tools: dict[str, str | dict[str, Any]]) -> dict[str, Any]:
    """A name map in the providers' format 1 (`compiler.providers.namemap`): provider name → a tool id (an entry
    with nothing to rewrite) or a whole entry."""
    return {"format": 1, "target": target, "tools": {
        name: {"tool": entry, "strict": False} if isinstance(entry, str) else entry for name, entry in tools.items()}}


def with_name_maps(build: Build) -> Build:
    """`build` with the providers' real output (name maps included), as `toolc compile` makes them."""
    from compiler.providers.emit import emit_providers
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


def test_tables_bake_tools_servers_and_policy(tmp_path: Path) -> None:
    build = make_build(policy={"deny_tools": ["*delete*"], "admin_min_risk": "high", "audit_db": "audit/a.db"},
                       servers=[TIME_SERVER])
    write_router(build, tmp_path)
    with load_router(tmp_path) as module:
        tables = module._tables if hasattr(module, "_tables") else importlib.import_module("toolc_router._tables")
        assert tables.POLICY.deny_tools == ("*delete*",)
        assert tables.POLICY.admin_min_risk == 2
        assert tables.POLICY.audit_db == "audit/a.db"
        time_tool = tables.TOOLS["mcp:mcp-server-time:get_current_time"]
        assert (time_tool.mcp_tool, time_tool.source, time_tool.risk) == ("get_current_time", "mcp-server-time", 0)
        assert tables.SERVERS["mcp-server-time"].command == (sys.executable, "-m", "mcp_server_time",
                                                             "--local-timezone", "UTC")
        update = tables.TOOLS["openapi:params:updatePet"]
        assert update.http.method == "PUT" and update.http.path == "/pets/{id}"
        assert {(a.location, a.wire_name) for a in update.http.arguments} >= {
            ("path", "id"), ("query", "dryRun"), ("header", "X-Trace-Id"), ("cookie", "session"), ("body", "id")}
        assert tables.HTTP_APIS["params"].base_url == "https://eu.example.test/v1"
        assert tables.NAME_MAPS["anthropic"]["get_current_time"].tool_id == "mcp:mcp-server-time:get_current_time"


def test_output_is_deterministic() -> None:
    first = generate_router(make_build(servers=[TIME_SERVER]))
    second = generate_router(make_build(servers=[TIME_SERVER]))
    assert first == second
    assert sorted(first) == sorted(f"toolc_router/{m}" for m in (
        "__init__.py", "_catalog.json", "_env.py", "_schemas.json", "_tables.py", "_types.py", "audit.py",
        "audit_pg.py", "discovery.py", "http_dispatch.py", "mcp_dispatch.py", "policy.py", "providers.py", "redact.py",
        "router.py", "serve.py", "serve_catalog.py", "serve_http.py", "serve_mcp.py", "_serve.json", "stubs.py",
        "telemetry.py", "validate.py", "wire.py", "requirements.txt", "requirements-postgres.txt", "py.typed"))


def test_literal_secrets_are_not_baked() -> None:
    server = ServerConfig(id="svc", command=("svc",), env={"API_TOKEN": "s3cr3t-value", "MODE": "fast",
                                                           "OTHER": "${OTHER_TOKEN}"},
                          headers={"Authorization": "Bearer abcdef"}, transport="stdio")
    build = make_build(catalog_from(recordings=(), openapi=()), servers=[server])
    files = generate_router(build)
    tables = files["toolc_router/_tables.py"].decode()
    assert "s3cr3t-value" not in tables and "abcdef" not in tables
    assert "'${API_TOKEN}'" in tables and "'${OTHER_TOKEN}'" in tables and "'fast'" in tables
    assert "'${TOOLC_SVC_AUTHORIZATION}'" in tables
    warnings = [d for d in build.diagnostics if d.code == "TC631"]
    assert len(warnings) == 2 and all(d.pointer.startswith("/mcp_servers/svc/") for d in warnings)


def test_bad_policy_is_a_config_error_with_its_location() -> None:
    with pytest.raises(CompilerError) as caught:
        config_from_data({"policy": {"admin_min_risk": "extreme", "max_concurrency": 0}}, root=ROOT,
                         source="toolc.yaml")
    diagnostic = caught.value.diagnostic
    assert diagnostic.code == "TC110" and diagnostic.pointer == "/policy/admin_min_risk"
    assert "2 problem(s)" in diagnostic.message
    with pytest.raises(CompilerError) as caught:
        config_from_data({"policy": {"max_concurrency": 0}}, root=ROOT, source="toolc.yaml")
    assert caught.value.diagnostic.pointer == "/policy/max_concurrency"


def test_provider_name_maps_are_embedded() -> None:
    build = make_build(catalog_from(recordings=("mcp-server-time",), openapi=()), name_maps={
        "openai-chat": name_map("openai-chat", {
            "time__get_current_time": {"tool": "mcp:mcp-server-time:get_current_time", "strict": False,
                                       "arguments": {"rename": {"tz": "timezone"}}}})})
    tables = generate_router(build)["toolc_router/_tables.py"].decode()
    assert ("'time__get_current_time': NameEntry('mcp:mcp-server-time:get_current_time', "
            "arguments={'rename': {'tz': 'timezone'}})") in tables


def test_a_name_map_naming_an_unknown_tool_is_a_bug_not_a_diagnostic() -> None:
    """Name maps are built in the same process from the same catalog: a stray entry can only be toolc's bug."""
    build = make_build(catalog_from(recordings=("mcp-server-time",), openapi=()),
                       name_maps={"openai-chat": name_map("openai-chat", {"ghost": "mcp:nowhere:ghost"})})
    with pytest.raises(AssertionError, match="ghost"):
        generate_router(build)


def test_equal_name_maps_are_baked_once_and_shared(tmp_path: Path) -> None:
    same = {"get_current_time": "mcp:mcp-server-time:get_current_time"}
    maps = {
        "openai-responses": name_map("openai-responses", same),
        "anthropic": name_map("anthropic", same),
        "gemini": name_map("gemini", {"time_now": "mcp:mcp-server-time:get_current_time"}),
    }
    build = make_build(catalog_from(recordings=("mcp-server-time",), openapi=()), name_maps=maps)
    tables = generate_router(build)["toolc_router/_tables.py"].decode()
    assert tables.count("_NAMES_0: Final") == 1 and tables.count("_NAMES_1: Final") == 1
    assert "_NAMES_2" not in tables
    assert tables.count("'get_current_time': NameEntry(") == 1  # one literal for both targets
    assert ("    'anthropic': _NAMES_0,\n    'gemini': _NAMES_1,\n    'openai-responses': _NAMES_0,\n"
            in tables)  # first use in sorted target order, deterministic
    write_router(build, tmp_path)
    with load_router(tmp_path):
        maps = importlib.import_module("toolc_router._tables").NAME_MAPS
        assert maps["anthropic"] is maps["openai-responses"]
        assert maps["anthropic"]["get_current_time"].tool_id == "mcp:mcp-server-time:get_current_time"
        assert maps["gemini"]["time_now"].tool_id == "mcp:mcp-server-time:get_current_time"
        assert "time_now" not in maps["anthropic"]


@pytest.fixture
def router_dir(tmp_path: Path) -> Path:
    return write_router(make_build(servers=[TIME_SERVER]), tmp_path)


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
