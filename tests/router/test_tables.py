"""What the router generator bakes into `toolc_router._tables`: tools, servers, policy, name maps; deterministic
output; no literal secrets; bad policy and bad name maps refused."""

from __future__ import annotations

import dataclasses
import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from compiler.codegen.router.router_package import generate_router, router_context
from compiler.config import ServerConfig, config_from_data
from compiler.infra.diagnostics import CompilerError
from tests.support.paths import ROOT
from tests.support.router import TIME_SERVER, catalog_from, load_router, make_build, name_map, write_router


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


def test_tool_tables_are_read_on_first_use_and_round_trip(tmp_path: Path) -> None:
    """`TOOLS`/`NAME_MAPS` come from `_tables.json` when first used (importing the router reads nothing), and every
    row becomes the spec it describes."""
    build = make_build(servers=[TIME_SERVER])
    write_router(build, tmp_path)
    rows = json.loads((tmp_path / "toolc_router" / "_tables.json").read_text())
    context_rows: Any = router_context(build)["tools"]
    full = {row["id"]: json.loads(json.dumps(row)) for row in context_rows}
    assert len(json.dumps(rows["tools"])) < len(json.dumps(full))  # defaults are left out of the file
    with load_router(tmp_path):
        tables = importlib.import_module("toolc_router._tables")
        assert tables._data.cache_info().currsize == 0  # imported (by the router too), not read yet
        assert "mcp:nowhere:ghost" not in tables.TOOLS and tables.TOOLS.get("mcp:nowhere:ghost") is None
        assert tables._data.cache_info().currsize == 1
        assert sorted(tables.TOOLS) == sorted(rows["tools"]) and len(tables.TOOLS) == len(rows["tools"])
        for tool_id in rows["tools"]:
            spec = tables.TOOLS[tool_id]
            assert spec is tables.TOOLS[tool_id]  # made once, then kept
            assert json.loads(json.dumps(dataclasses.asdict(spec))) == full[tool_id]
        assert sorted(tables.NAME_MAPS) == sorted(rows["name_maps"])
        for target, index in rows["name_maps"].items():
            for name, entry in rows["name_tables"][index].items():
                assert dataclasses.asdict(tables.NAME_MAPS[target][name]) == entry


def test_output_is_deterministic() -> None:
    first = generate_router(make_build(servers=[TIME_SERVER]))
    second = generate_router(make_build(servers=[TIME_SERVER]))
    assert first == second
    assert sorted(first) == sorted(f"toolc_router/{m}" for m in (
        "__init__.py", "_catalog.json", "_env.py", "_schemas.json", "_tables.json", "_tables.py", "_types.py", "audit.py",
        "audit_pg.py", "discovery.py", "environment.py", ".env.example", "guards.py", "http_dispatch.py", "mcp_dispatch.py",
        "policy.py", "providers.py", "ranking.py", "rate_limits.py", "redact.py", "result_budget.py", "scope.py",
        "router.py", "serve.py", "serve_catalog.py", "serve_http.py", "serve_limits.py", "serve_mcp.py", "_serve.json",
        "shapes.py",
        "stubs.py",
        "telemetry.py", "validate.py", "wire.py", "wire_bodies.py", "wire_keys.py", "wire_styles.py",
        "requirements.txt", "requirements-postgres.txt", "py.typed"))


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
    assert [found.pointer for found in caught.value.diagnostics] == ["/policy/admin_min_risk",
                                                                      "/policy/max_concurrency"]
    with pytest.raises(CompilerError) as caught:
        config_from_data({"policy": {"max_concurrency": 0}}, root=ROOT, source="toolc.yaml")
    assert caught.value.diagnostic.pointer == "/policy/max_concurrency"


def test_provider_name_maps_are_embedded() -> None:
    build = make_build(catalog_from(recordings=("mcp-server-time",), openapi=()), name_maps={
        "openai-chat": name_map("openai-chat", {
            "time__get_current_time": {"tool": "mcp:mcp-server-time:get_current_time", "strict": False,
                                       "arguments": {"rename": {"tz": "timezone"}}}})})
    tables = json.loads(generate_router(build)["toolc_router/_tables.json"])
    table = tables["name_tables"][tables["name_maps"]["openai-chat"]]
    assert table["time__get_current_time"] == {"tool_id": "mcp:mcp-server-time:get_current_time",
                                               "arguments": {"rename": {"tz": "timezone"}}, "defs": {}}


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
    tables = json.loads(generate_router(build)["toolc_router/_tables.json"])
    assert len(tables["name_tables"]) == 2  # one table for both equal targets
    # first use in sorted target order, deterministic
    assert tables["name_maps"] == {"anthropic": 0, "gemini": 1, "openai-responses": 0}
    write_router(build, tmp_path)
    with load_router(tmp_path):
        maps = importlib.import_module("toolc_router._tables").NAME_MAPS
        assert maps["anthropic"] is maps["openai-responses"]
        assert maps["anthropic"]["get_current_time"].tool_id == "mcp:mcp-server-time:get_current_time"
        assert maps["gemini"]["time_now"].tool_id == "mcp:mcp-server-time:get_current_time"
        assert "time_now" not in maps["anthropic"]


def test_defaults_left_out_of_the_tables_file_are_the_router_dataclasses_own() -> None:
    """The compiler leaves a value out of `_tables.json` when it equals its field's default, and the router's loader
    takes the dataclass default for what is missing: the two default lists must agree field for field (a changed
    default in `templates/router/static/_types.py` would otherwise silently change what a tool does)."""
    from compiler.codegen.router import tables as router_tables

    with load_router(ROOT / "generated" / "python"):
        types = importlib.import_module("toolc_router._types")
        for spec, defaults in ((types.ToolSpec, router_tables._TOOL_DEFAULTS),
                               (types.HttpSpec, router_tables._HTTP_DEFAULTS),
                               (types.HttpArg, router_tables._ARG_DEFAULTS),
                               (types.AuthScheme, router_tables._SCHEME_DEFAULTS)):
            own = {}
            for item in dataclasses.fields(spec):
                if item.default is not dataclasses.MISSING:
                    own[item.name] = item.default
                elif item.default_factory is not dataclasses.MISSING:
                    own[item.name] = item.default_factory()
            as_json = {name: list(value) if isinstance(value, tuple) else value for name, value in own.items()}
            assert as_json == defaults, spec.__name__


@pytest.mark.parametrize(("risk", "baked", "value"), [("critical", "CRITICAL", 3), ("high", "HIGH", 2), ("low", "LOW", 0),
                                                       (None, "None", None)])
def test_the_admin_risk_is_baked_by_name(tmp_path: Path, risk: str | None, baked: str, value: int | None) -> None:
    """`admin_min_risk=CRITICAL`, not `3`: the baked policy reads as the configuration says it."""
    files = generate_router(make_build(servers=[TIME_SERVER], policy={"admin_min_risk": risk}))
    source = files["toolc_router/_tables.py"].decode()
    assert f"    admin_min_risk={baked},\n" in source
    with load_router(write_router(make_build(servers=[TIME_SERVER], policy={"admin_min_risk": risk}), tmp_path)) as rt:
        assert importlib.import_module("toolc_router._tables").POLICY.admin_min_risk == value
        assert rt is not None


def test_the_requirements_list_the_type_stubs_mypy_needs() -> None:
    requirements = generate_router(make_build(servers=[TIME_SERVER]))["toolc_router/requirements.txt"].decode()
    assert "types-jsonschema" in requirements.splitlines()
