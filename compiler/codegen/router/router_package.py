"""The generated, policy-checked router: `generate_router(build)` → the files of the `toolc_router` package.

Only `_tables.py` carries project data (project name, servers, HTTP APIs, policy, targets, audit DSN as Python
literals, rendered from `templates/router/_tables.py.jinja`), with `_tables.json` beside it: the per-tool tables
and provider name maps, read on first use (`router_tables.tables_file`). Every other module is
the same for every project: real Python files under `templates/router/static/`, linted, formatted and
type-checked in this repository and copied byte for byte (`STATIC`), plus `shapes.py`, the name-map rules the
compiler runs too (`compiler.providers.shapes`). `stubs.py` is the runtime support of the typed stubs
(`codegen.stubs.stub_packages`), one copy for every source package; `_schemas.json` holds the input schemas the router
validates arguments against (`router_guard`); `requirements.txt` lists what it needs at run time,
`requirements-postgres.txt` adds the optional PostgreSQL audit driver (`router_audit`). Generated code imports the
`mcp` SDK, httpx2, jsonschema and opentelemetry-api (psycopg only when a DSN is used), never `compiler`. See
`router_tables`, `router_names` and `router_guard` for what is baked and its diagnostics.
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import orjson

from compiler.build import Build
from compiler.codegen.env import render, templates_dir
from compiler.codegen.router.audit import audit_dsn
from compiler.codegen.router.env import env_example
from compiler.codegen.router.gateway import budget_rows, rate_limit_rows, retry_rows
from compiler.codegen.router.guard import policy_aliases, schemas_file, secret_env
from compiler.codegen.router.names import AMBIGUOUS_NAME, NameMaps, ambiguous_names, name_maps
from compiler.codegen.router.serve import mcp_names, serve_file
from compiler.codegen.router.tables import (
    api_rows,
    overridden_url,
    policy_table,
    recording_only_servers,
    server_rows,
    tables_file,
    tool_rows,
)
from compiler.fit.forms import toolsets_of
from compiler.infra.diagnostics import Diagnostics
from compiler.infra.serialize import compact_json
from compiler.ir import HttpBinding, McpBinding, Tool
from compiler.refs import RefResolver

PACKAGE = "toolc_router"
RENDER_FAILED = "TC636"

TEMPLATE = "router/_tables.py.jinja"
# Files in `templates/router/static/` that are not copied: typed stand-ins for generated modules (mypy only) and
# the folder's ruff settings.
_NOT_COPIED = (".pyi", ".toml")
SHARED_MODULES = ("ranking.py", "shapes.py")
"""`compiler/providers/` modules the router runs too, copied verbatim: the name-map rules and discovery's ranking."""


def static_files() -> dict[str, Path]:
    """Module name → the repository file copied verbatim into every generated router, sorted by name."""
    folder = templates_dir() / "router" / "static"
    files = {path.name: path for path in folder.iterdir() if path.is_file() and path.suffix not in _NOT_COPIED}
    for name in SHARED_MODULES:
        files[name] = Path(str(resources.files("compiler.providers") / name))
    return dict(sorted(files.items()))


def router_context(build: Build) -> dict[str, object]:
    tools = [t for t in build.catalog.tools if isinstance(t.binding, McpBinding | HttpBinding)]
    apis = api_rows(build, tools)
    bases = {api["id"]: None if overridden_url(build, api["id"]) else api["base_url"] for api in apis}
    rows = tool_rows(list(build.catalog.tools), build.diagnostics, bases)
    servers = server_rows(build.config.mcp_servers, build.diagnostics)
    recording_only_servers(tools, servers, build.diagnostics)
    maps = name_maps(build.providers, tools, build.targets)
    provider_names: dict[str, set[str]] = {}
    for table in maps.tables:
        for name, entry in table:
            provider_names.setdefault(entry["tool_id"], set()).add(name)
    aliases = policy_aliases(tools, provider_names)
    for row in rows:
        row["aliases"] = aliases.get(row["id"], ())
    policy = policy_table(build.config.policy, build.diagnostics)
    dsn = audit_dsn(build.config.audit, build.diagnostics)
    return {
        "project": build.config.name,
        "policy": policy,
        "secret_env": secret_env(servers, apis, policy["admin_token_env"], rows),
        "servers": servers,
        "apis": apis,
        "tools": rows,
        "name_maps": maps,
        "uses_http": any(row["http"] is not None for row in rows),
        "uses_auth": any(row["http"] is not None and row["http"]["security"] for row in rows),
        "audit_dsn": dsn,
        "rate_limits": rate_limit_rows(build.config.gateway.rate_limits),
        "result_budgets": budget_rows(build.config.gateway.result_budget),
        "retries": retry_rows(build.config.gateway.retries),
        "env_example": env_example(apis, servers, rows, policy, dsn),
        "targets": tuple(sorted(build.targets)),
        "tables_json": tables_file(rows, maps),
    }


def generate_router(build: Build) -> dict[str, bytes]:
    """`{"toolc_router/<module>": source}`; a template failure is a TC636 error and no router is emitted."""
    context = router_context(build)
    try:
        tables = render(TEMPLATE, **context)
    except jinja2.TemplateError as exc:
        build.diagnostics.error(RENDER_FAILED, f"cannot render the router's _tables.py: {exc}",
                                source=f"templates/{TEMPLATE}")
        return {}
    files = {f"{PACKAGE}/{name}": path.read_bytes() for name, path in static_files().items()}
    files[f"{PACKAGE}/_tables.py"] = tables.encode()
    files[f"{PACKAGE}/py.typed"] = b""
    example = context["env_example"]
    assert isinstance(example, bytes)
    files[f"{PACKAGE}/.env.example"] = example
    tables_json = context["tables_json"]
    assert isinstance(tables_json, bytes)
    files[f"{PACKAGE}/_tables.json"] = tables_json
    routed = [tool for tool in build.catalog.tools if isinstance(tool.binding, McpBinding | HttpBinding)]
    files[f"{PACKAGE}/_schemas.json"] = schemas_file(build.catalog, routed, build.diagnostics)
    files[f"{PACKAGE}/_catalog.json"] = discovery_catalog(build, routed)
    files[f"{PACKAGE}/_serve.json"] = serve_file(build.catalog, routed, build.config.names)
    maps = context["name_maps"]
    assert isinstance(maps, NameMaps)
    report_ambiguous_names(build, routed, maps)
    return files


def report_ambiguous_names(build: Build, routed: list[Tool], maps: NameMaps) -> None:
    """TC640 for each name the served endpoint would refuse without `?provider=` (it means two tools)."""
    served = mcp_names(sorted(routed, key=lambda tool: tool.id), build.config.names)
    for name, tool_ids in ambiguous_names(served, maps).items():
        build.diagnostics.warning(
            AMBIGUOUS_NAME, f"served name {name!r} means {len(tool_ids)} tools ({', '.join(tool_ids)}): "
            f"`POST /tools/{name}/call` refuses it without ?provider= (call by tool id, or rename one)",
            tool=tool_ids[0])


def discovery_catalog(build: Build, routed: list[Tool]) -> bytes:
    """`_catalog.json`: what the discovery meta-tools serve (full descriptions, toolsets, self-contained schemas)."""
    index_file = build.files.get("schemas/toolsets/index.json")
    index = orjson.loads(index_file) if index_file else {}
    # A resolver of its own: bundling what the providers stage already resolved reports nothing new to the build.
    resolver = RefResolver(Diagnostics(), max_depth=build.config.resolver.max_depth,
                           node_budget=build.config.resolver.node_budget)
    tools: dict[str, Any] = {}
    for tool in sorted(routed, key=lambda item: item.id):
        schema = resolver.bundle(tool.input_schema, build.catalog.definitions_for(tool), source=tool.source,
                                       tool=tool.id)
        tools[tool.id] = {"name": tool.name, "description": tool.description or tool.title or "",
                          "toolsets": toolsets_of(index, tool.id), "input_schema": schema}
    return compact_json({"format": 1, "tools": tools}) + b"\n"
