"""The generated, policy-checked router: `generate_router(build)` → the files of the `toolc_router` package.

Only `_tables.py` carries project data (project name, servers, HTTP APIs, policy, targets, audit DSN, OAuth
callers (`router.callers`) as Python literals, rendered from `templates/router/_tables.py.jinja`), with
`_tables.json` beside it: the per-tool tables and provider name maps, read on first use
(`router_tables.tables_file`). Every other module is the same for every project: real Python files under
`templates/router/static/`, linted, formatted and type-checked in this repository and copied byte for byte
(`STATIC`), plus `shapes.py`, the name-map rules the compiler runs too (`compiler.providers.shapes`). `stubs.py` is the runtime support of the typed stubs
(`codegen.stubs.stub_packages`), one copy for every source package; `_schemas.json` holds the input schemas the router
validates arguments against (`router_guard`); `_codemode.json` the functions code mode offers (`router.codemode`);
`requirements.txt` lists what it needs at run time, `requirements-postgres.txt` adds the optional PostgreSQL audit
driver (`router_audit`), `requirements-codemode.txt` code mode's sandbox. The optional parts (the server, the
PostgreSQL sink) are copied only when the project file's `router:` asks for them, and `_parts.py` is the one module
that differs by which are (`codegen.router.parts`). Generated code imports the `mcp` SDK, httpx2, jsonschema and
opentelemetry-api (psycopg only when a DSN is used, pydantic-monty only in code mode), never `compiler`. See
`router_tables`, `router_names` and `router_guard` for what is baked and its diagnostics.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import orjson

from compiler.build import Build
from compiler.codegen.env import render, templates_dir
from compiler.codegen.router.approvals import approvals_table
from compiler.codegen.router.audit import audit_dsn
from compiler.codegen.router.callers import caller_auth
from compiler.codegen.router.codemode import codemode_chunks
from compiler.codegen.router.env import env_example
from compiler.codegen.router.gateway import budget_rows, rate_limit_rows, retry_rows
from compiler.codegen.router.guard import policy_aliases, schemas_chunks, secret_env
from compiler.codegen.router.names import AMBIGUOUS_NAME, NameMaps, ambiguous_names, name_maps
from compiler.codegen.router.parts import PARTS_MODULE, included_parts, left_out_files, parts_module
from compiler.codegen.router.pins import pins_file
from compiler.codegen.router.reuse import PACKAGE, FilePieces, RouterFiles, RouterReuse, piece_key
from compiler.codegen.router.serve import mcp_names, serve_chunks
from compiler.codegen.router.tables import (
    api_rows,
    overridden_url,
    policy_table,
    recording_only_servers,
    server_rows,
    tables_chunks,
    tool_rows,
)
from compiler.codegen.stubs.stub_names import StubNames
from compiler.fit.forms import toolsets_of
from compiler.incremental import store
from compiler.incremental.ir_hash import tool_hashes
from compiler.infra.collector import collector_paused
from compiler.infra.diagnostics import Diagnostics
from compiler.infra.output import SpooledFile, spool_file
from compiler.infra.parallel import Once
from compiler.infra.serialize import compact_json
from compiler.ir import HttpBinding, McpBinding, Tool
from compiler.refs import RefResolver

RENDER_FAILED = "TC636"

TEMPLATE = "router/_tables.py.jinja"
# Files in `templates/router/static/` that are not copied: typed stand-ins for generated modules (mypy only) and
# the folder's ruff settings.
_NOT_COPIED = (".pyi", ".toml")
SHARED_MODULES = {"ranking.py": "compiler.providers", "shapes.py": "compiler.providers",
                  "mcp_pins.py": "compiler.sources"}
"""Compiler modules the router runs too, copied verbatim: the name-map rules, discovery's ranking and the pinned
form of an MCP tool's definition."""


def static_files() -> dict[str, Path]:
    """Module name → the repository file copied verbatim into every generated router, sorted by name."""
    folder = templates_dir() / "router" / "static"
    files = {path.name: path for path in folder.iterdir() if path.is_file() and path.suffix not in _NOT_COPIED}
    for name, package in SHARED_MODULES.items():
        files[name] = Path(str(resources.files(package) / name))
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
        "approvals": approvals_table(build.config.gateway.approvals),
        "secret_env": secret_env(servers, apis, policy["admin_token_env"], rows),
        "servers": servers,
        "apis": apis,
        "tools": rows,
        "name_maps": maps,
        "uses_http": any(row["http"] is not None for row in rows),
        "uses_auth": any(row["http"] is not None and row["http"]["security"] for row in rows),
        "audit_dsn": dsn,
        "gateway_auth": caller_auth(build.config, build.diagnostics),
        "rate_limits": rate_limit_rows(build.config.gateway.rate_limits),
        "result_budgets": budget_rows(build.config.gateway.result_budget),
        "retries": retry_rows(build.config.gateway.retries),
        "env_example": env_example(apis, servers, rows, policy, dsn, included_parts(build.config)),
        "targets": tuple(sorted(build.targets)),
    }


def generate_router(build: Build) -> dict[str, bytes]:
    """`{"toolc_router/<module>": source}`; a template failure is a TC636 error and no router is emitted."""
    return _router_files(build, None).files


def generate_router_spooled(build: Build, spool: Path, names: StubNames | None = None,
                            catalog: Once | None = None) -> RouterFiles:
    """`generate_router`, but its data files are written to `spool` as they are made, never held: Microsoft
    Graph's are 234 MB, `_catalog.json` 168 MB of them, which encoded as one `bytes` took twice that (the
    encoder's buffer, then the result) in the process making the router, beside the compile's own memory. Each
    data file's pieces are reused from the output folder where they provably cannot differ (`router.reuse`)."""
    return _router_files(build, spool, names, catalog)


class _Output:
    """The router's files as they are made: its JSON data files go to the spool folder when there is one."""

    def __init__(self, spool: Path | None, files: dict[str, bytes], reuse: RouterReuse) -> None:
        self.spool, self.files, self.reuse = spool, files, reuse
        self.spooled: dict[str, SpooledFile] = {}

    def data(self, name: str, chunks: Iterable[bytes]) -> None:
        self.pieced(name, lambda _pieces: chunks)

    def pieced(self, name: str, chunks_of: Callable[[FilePieces], Iterable[bytes]]) -> None:
        """A data file made of pieces the last compile may have made already (`router.reuse`)."""
        with self.reuse.pieces(name) as pieces:
            if self.spool is None:
                self.files[f"{PACKAGE}/{name}"] = b"".join(chunks_of(pieces))
            else:
                self.spooled[f"{PACKAGE}/{name}"] = spool_file(self.spool / f"router-{name.lstrip('_')}",
                                                               chunks_of(pieces))


def _router_files(build: Build, spool: Path | None, names: StubNames | None = None,
                  catalog: Once | None = None) -> RouterFiles:
    # The collector paused: making the router allocates millions of small acyclic containers (rows, bundled
    # schemas, entries) whose allocation sets off collections that scan them over and over (Microsoft Graph's
    # changed compile: 1.9 -> 1.55 s of CPU); what the block leaves is collected once as it ends.
    with collector_paused(collect_after=True):
        return _make_router_files(build, spool, names, catalog)


def _make_router_files(build: Build, spool: Path | None, names: StubNames | None, catalog: Once | None) -> RouterFiles:
    context = router_context(build)
    try:
        tables = render(TEMPLATE, **context)
    except jinja2.TemplateError as exc:
        build.diagnostics.report(RENDER_FAILED, f"cannot render the router's _tables.py: {exc}",
                                 source=f"templates/{TEMPLATE}")
        return RouterFiles({}, {}, None)
    parts = included_parts(build.config)
    folder = build.out_dir / "python" / PACKAGE if build.out_dir is not None else None
    reuse = RouterReuse(build.out_dir, folder, build.diagnostics)
    out = _Output(spool, {f"{PACKAGE}/{name}": path.read_bytes() for name, path in static_files().items()}, reuse)
    out.files[f"{PACKAGE}/_tables.py"] = tables.encode()
    out.files[f"{PACKAGE}/{PARTS_MODULE}"] = parts_module(parts)
    out.files[f"{PACKAGE}/py.typed"] = b""
    example, rows, maps = context["env_example"], context["tools"], context["name_maps"]
    assert isinstance(example, bytes) and isinstance(rows, list) and isinstance(maps, NameMaps)
    out.files[f"{PACKAGE}/.env.example"] = example
    hashes = _tool_hashes(build, reuse.keeps)
    by_id = {tool.id: tool for tool in build.catalog.tools}
    out.pieced("_tables.json", partial(tables_chunks, rows, maps, tool_hash=lambda row: hashes(by_id[row["id"]])))
    del context, tables, rows  # the tool rows (Microsoft Graph: ~90 MB) are done with
    routed = [tool for tool in build.catalog.tools if isinstance(tool.binding, McpBinding | HttpBinding)]
    out.pieced("_schemas.json", partial(schemas_chunks, build.catalog, routed, build.diagnostics, tool_hash=hashes))
    schemas = BundledInputs(build)
    out.pieced("_codemode.json", partial(codemode_chunks, build, routed, schemas, tool_hash=hashes, stub_names=names))
    out.data("_pins.json", [pins_file(routed, build.config, build.diagnostics)])
    if "serve" in parts:
        served = mcp_names(sorted(routed, key=lambda tool: tool.id), build.config.names)
        out.pieced("_serve.json", partial(serve_chunks, build.catalog, routed, served, tool_hash=hashes))
        report_ambiguous_names(build, served, maps)
    if catalog is None or catalog.take():  # last: the process that made the stubs may be done first and take it
        out.pieced("_catalog.json", partial(discovery_catalog_chunks, build, routed, schemas, tool_hash=hashes))
    del schemas
    left_out = {f"{PACKAGE}/{name}" for name in left_out_files(parts)}
    return RouterFiles({path: content for path, content in out.files.items() if path not in left_out},
                       {path: file for path, file in out.spooled.items() if path not in left_out},
                       reuse.entry())


def spooled_catalog(build: Build, spool: Path) -> RouterFiles:
    """`_catalog.json` alone (as `generate_router_spooled` makes it, its pieces reused alike), for the process
    that made the stubs and took it (`Once`) before the router's child came to it: the child has the most
    work of the two after a small change (Microsoft Graph: a third of the router's is this file's). The child
    reports what is wrong with the pieces' cache; nothing is reported here (making the catalog reports nothing)."""
    with collector_paused(collect_after=True):
        folder = build.out_dir / "python" / PACKAGE if build.out_dir is not None else None
        reuse = RouterReuse(build.out_dir, folder, Diagnostics())
        out = _Output(spool, {}, reuse)
        routed = [tool for tool in build.catalog.tools if isinstance(tool.binding, McpBinding | HttpBinding)]
        out.pieced("_catalog.json", partial(discovery_catalog_chunks, build, routed, BundledInputs(build),
                                            tool_hash=_tool_hashes(build, reuse.keeps)))
        left_out = {f"{PACKAGE}/{name}" for name in left_out_files(included_parts(build.config))}
        return RouterFiles({}, {path: file for path, file in out.spooled.items() if path not in left_out},
                           reuse.entry())


def with_catalog(router: RouterFiles, catalog: RouterFiles) -> RouterFiles:
    """The router's files with `_catalog.json` made apart (`spooled_catalog`), its pieces kept with the others';
    none when the router was not made (its `_tables.py` failed to render: TC636)."""
    if not router.files:
        return router
    cache = router.cache
    if cache is not None and catalog.cache is not None:
        cache = store.Entry(cache.key, {**cache.payload, **catalog.cache.payload}, cache.blob)
    return RouterFiles(router.files, dict(sorted({**router.spooled, **catalog.spooled}.items())), cache)


def _tool_hashes(build: Build, keeps: bool) -> Callable[[Tool], str]:
    """Each tool's IR hash (the key of its pieces), made before the providers stage; without a cache to keep,
    none is needed."""
    if not keeps:
        return lambda tool: ""
    hashes = build.ir_hashes if build.ir_hashes is not None else tool_hashes(build.catalog)
    return lambda tool: hashes[tool.id]


def report_ambiguous_names(build: Build, served: Mapping[str, str], maps: NameMaps) -> None:
    """TC640 for each name the served endpoint would refuse without `?provider=` (it means two tools);
    `served`: tool id → its MCP name."""
    for name, tool_ids in ambiguous_names(served, maps).items():
        build.diagnostics.report(
            AMBIGUOUS_NAME, f"served name {name!r} means {len(tool_ids)} tools ({', '.join(tool_ids)}): "
            f"`POST /tools/{name}/call` refuses it without ?provider= (call by tool id, or rename one)",
            tool=tool_ids[0])


class BundledInputs:
    """Tool → its self-contained input schema, as discovery describes it and code mode types it; made on first
    use (a recompile reuses most tools' pieces, which need none)."""

    def __init__(self, build: Build) -> None:
        # A resolver of its own: bundling what the providers stage already resolved reports nothing new to the build.
        self._resolver = RefResolver(Diagnostics(), max_depth=build.config.resolver.max_depth,
                                     node_budget=build.config.resolver.node_budget)
        self._catalog = build.catalog
        self.settings = [build.config.resolver.max_depth, build.config.resolver.node_budget]
        """What bundling reads besides the tool and the definitions it reaches: part of every key using it."""
        self._made: dict[str, Any] = {}

    def __getitem__(self, tool: Tool) -> Any:
        if tool.id not in self._made:
            self._made[tool.id] = self._resolver.bundle(tool.input_schema, self._catalog.definitions_for(tool),
                                                        source=tool.source, tool=tool.id)
        return self._made[tool.id]


def discovery_catalog_chunks(build: Build, routed: list[Tool], schemas: BundledInputs, pieces: FilePieces, *,
                             tool_hash: Callable[[Tool], str]) -> Iterator[bytes]:
    """`_catalog.json`: what the discovery meta-tools serve (full descriptions, toolsets, self-contained schemas),
    tool by tool: the bytes of `compact_json({"format": 1, "tools": {tool id: entry}}) + b"\n"` (its keys sorted,
    as the tool ids are here), never one object of every entry nor one `bytes` of the file."""
    index_file = build.files.get("schemas/toolsets/index.json")
    index = orjson.loads(index_file) if index_file else {}
    by_id = {tool.id: tool for tool in routed}

    def entry(tool: Tool, toolsets: list[str]) -> bytes:
        made = {"name": tool.name, "description": tool.description or tool.title or "", "toolsets": toolsets,
                "input_schema": schemas[tool]}
        return orjson.dumps(tool.id) + b":" + compact_json(made)

    yield pieces.frame(b'{"format":1,"tools":{')
    for position, tool_id in enumerate(sorted(by_id)):
        tool = by_id[tool_id]
        toolsets = toolsets_of(index, tool.id)
        if position:
            yield pieces.frame(b",")
        key = piece_key("catalog", tool_id, tool_hash(tool), toolsets, schemas.settings)
        yield pieces.piece(key, lambda: (entry(tool, toolsets), []))  # noqa: B023 (called at once)
    yield pieces.frame(b"}}\n")
