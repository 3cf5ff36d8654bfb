"""`toolc record`, `toolc list`, `toolc health`: the commands that talk to live MCP servers.

    toolc record [ID...] [-c toolc.yaml]                 refresh each server's recording (secrets redacted)
    toolc record --stdio 'CMD ARGS' --id NAME --out F    record one server without a project file
    toolc record --url URL [--transport sse] --id NAME --out F
    toolc list [PATH... | -c toolc.yaml] [--live] [--json]  the catalog's tools with risk and side effects
    toolc health [ID...] [-c toolc.yaml] [--json]        healthy / degraded / unhealthy per server (seed 000)

Exit codes follow `support.py`: 0 fine, 1 a server failed (health: one is unhealthy, or degraded with --strict),
2 usage or project-file error.
"""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import click

from compiler.commands.support import (
    EXIT_FAILED,
    failed,
    guarded,
    inputs_options,
    load_inputs,
    load_project,
    parse_targets,
    print_diagnostics,
)
from compiler.config import DEFAULT_CONFIG_NAME, Config, OpenApiConfig, ServerConfig
from compiler.infra.diagnostics import Diagnostics
from compiler.infra.serialize import canonical_json
from compiler.ir import Tool
from compiler.policy import is_read_only
from compiler.providers.ranking import SearchEntry, SearchIndex
from compiler.sources.openapi.risk import assess
from compiler.sources.recording import read_recording

CANNOT_WRITE = "TC520"
SEARCH_LIMIT = 20

_config_option = click.option("-c", "--config", "config_path", type=click.Path(path_type=Path),
                              default=Path(DEFAULT_CONFIG_NAME), show_default=True,
                              help="The project file (toolc.yaml, mcp_servers.yaml, or an mcpServers JSON).")


def choose_servers(config: Config, ids: tuple[str, ...]) -> list[ServerConfig]:
    """The servers named by ID (any, even disabled), or every enabled one."""
    if not ids:
        return [server for server in config.mcp_servers if server.enabled]
    known = {server.id: server for server in config.mcp_servers}
    unknown = [i for i in ids if i not in known]
    if unknown:
        names = ", ".join(sorted(known)) or "none"
        raise click.UsageError(f"no MCP server {', '.join(unknown)} in the project (known: {names})")
    return [known[i] for i in dict.fromkeys(ids)]


def _adhoc_server(stdio: str | None, url: str | None, transport: Literal["http", "sse"], server_id: str | None,
                  headers: tuple[str, ...], env: tuple[str, ...], timeout_ms: int) -> ServerConfig:
    if server_id is None:
        raise click.UsageError("--stdio/--url need --id NAME")
    if bool(stdio) == bool(url):
        raise click.UsageError("give exactly one of --stdio 'COMMAND ARGS' and --url URL")
    parsed_headers = dict(_pair(h, ":", "--header 'Name: value'") for h in headers)
    parsed_env = dict(_pair(e, "=", "--env NAME=VALUE") for e in env)
    if stdio:
        return ServerConfig(id=server_id, transport="stdio", command=tuple(shlex.split(stdio)), env=parsed_env,
                            timeout_ms=timeout_ms)
    return ServerConfig(id=server_id, transport=transport, url=url,
                        headers=parsed_headers, timeout_ms=timeout_ms)


def _pair(text: str, separator: str, usage: str) -> tuple[str, str]:
    name, found, value = text.partition(separator)
    if not found or not name.strip():
        raise click.UsageError(f"expected {usage}, got {text!r}")
    return name.strip(), value.strip()


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@click.command("record")
@click.argument("ids", nargs=-1)
@_config_option
@click.option("--stdio", help="Record this command instead of the project's servers: 'COMMAND ARGS...'.")
@click.option("--url", help="Record the server at this URL (Streamable HTTP, or --transport sse).")
@click.option("--transport", type=click.Choice(["http", "sse"]), default="http", show_default=True)
@click.option("--id", "server_id", help="The server id for --stdio/--url.")
@click.option("--out", "out_path", type=click.Path(path_type=Path), help="Where --stdio/--url write the recording.")
@click.option("--header", "headers", multiple=True, help="'Name: value' for --url (${ENV} allowed).")
@click.option("--env", "env", multiple=True, help="NAME=VALUE for --stdio (${ENV} allowed).")
@click.option("--timeout-ms", type=click.IntRange(min=1), default=30_000, show_default=True,
              help="For --stdio/--url: bounds connecting and each request.")
@click.option("--strict", is_flag=True, help="Stop at the first failing server, fail on warnings, write nothing.")
@click.option("-v", "--verbose", is_flag=True, help="Print info diagnostics too.")
@guarded
def record_command(ids: tuple[str, ...], config_path: Path, stdio: str | None, url: str | None,
                   transport: Literal["http", "sse"],
                   server_id: str | None, out_path: Path | None, headers: tuple[str, ...], env: tuple[str, ...],
                   timeout_ms: int, strict: bool, verbose: bool) -> None:
    """Ask MCP servers for their tools and write one recording per server (no secrets, no timestamps)."""
    if stdio or url:
        if ids:
            raise click.UsageError("server IDs and --stdio/--url do not mix")
        if out_path is None:
            raise click.UsageError("--stdio/--url need --out FILE")
        servers = [_adhoc_server(stdio, url, transport, server_id, headers, env, timeout_ms)]
        root = Path.cwd()
        destinations = {servers[0].id: out_path}
    else:
        config = load_project(config_path)
        servers = choose_servers(config, ids)
        root = config.root
        destinations = {server.id: config.path(server.recording_path) for server in servers}
    diagnostics = Diagnostics()
    from compiler.sources.mcp_live import list_servers  # the mcp SDK costs ~1 s to import: only when used

    outcomes = list_servers(servers, diagnostics, root=root, strict=strict)
    for outcome in outcomes:
        if outcome.document is not None:
            read_recording(outcome.document, source_id=outcome.server.id, location=outcome.server.id,
                           diagnostics=diagnostics)
    print_diagnostics(diagnostics, verbose=verbose)
    if strict and failed(diagnostics, strict=True):
        click.echo("toolc: record failed (--strict); no recording written", err=True)
        sys.exit(EXIT_FAILED)
    written = 0
    for outcome in outcomes:
        if outcome.document is None:
            continue
        destination = destinations[outcome.server.id]
        try:
            write_atomic(destination, canonical_json(outcome.document))
        except OSError as exc:
            diagnostics.error(CANNOT_WRITE, f"cannot write the recording: {exc.strerror or exc}",
                              source=str(destination))
            click.echo(diagnostics.items[-1].render(), err=True)
            continue
        written += 1
        click.echo(f"toolc: recorded {outcome.server.id}: {outcome.tool_count} tools, {outcome.page_count} page(s) "
                   f"→ {destination}", err=True)
    if written < len(outcomes):
        click.echo(f"toolc: {len(outcomes) - written} of {len(outcomes)} server(s) not recorded", err=True)
        sys.exit(EXIT_FAILED)


@click.command("list")
@inputs_options
@click.option("--live", is_flag=True, help="Ask the MCP servers instead of reading their recordings.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("-v", "--verbose", is_flag=True, help="Print info diagnostics too.")
@click.option("--tokens", is_flag=True,
              help="Also lower for the targets and show each tool's token cost, its toolsets and per-target totals.")
@click.option("--target", "targets", help="With --tokens: comma-separated targets (default: the project's).")
@click.option("--search", "query", metavar="QUERY",
              help="Only the tools that best match QUERY, best first (the ranking of discovery's search).")
@click.option("--limit", type=click.IntRange(min=1), default=SEARCH_LIMIT, show_default=True,
              help="With --search: how many tools.")
@guarded
def list_command(paths: tuple[Path, ...], config_path: Path, live: bool, as_json: bool, verbose: bool, tokens: bool,
                 targets: str | None, query: str | None, limit: int) -> None:
    """List the tools of the project (recordings, OpenAPI documents, or --live servers) or of the documents given
    as PATHs, with risk and side effects (and, with --tokens, what each costs per target; with --search, only
    the best matches of a query)."""
    from compiler.pipeline import openapi_settings, project_inputs, read_catalog
    from compiler.refs import RefResolver

    config, inputs = load_inputs(paths, config_path)
    if tokens:
        _list_tokens(config, inputs, live=live, as_json=as_json, verbose=verbose, targets=parse_targets(targets))
        return
    diagnostics = Diagnostics()
    resolver = RefResolver(diagnostics, max_depth=config.resolver.max_depth, node_budget=config.resolver.node_budget)
    items = inputs if inputs is not None else project_inputs(config)
    catalog = read_catalog(config, items, resolver, diagnostics, live=live)
    print_diagnostics(diagnostics, verbose=verbose)
    tools = sorted(catalog.tools, key=lambda t: t.id) if query is None else search_tools(catalog.tools, query, limit)
    settings = openapi_settings(items)
    rows = [_row(tool, settings.get(tool.source)) for tool in tools]
    if as_json:
        click.echo(canonical_json(rows).decode(), nl=False)
    else:
        _table(rows)
    click.echo(f"toolc: {len(rows)} tools from {len(catalog.sources)} sources", err=True)
    if diagnostics.has_errors:
        sys.exit(EXIT_FAILED)


def search_tools(tools: Sequence[Tool], query: str, limit: int) -> list[Tool]:
    """The `limit` tools that best match `query`, best first: the ranking `toolc_search_tools` serves."""
    by_id = {tool.id: tool for tool in tools}
    index = SearchIndex([SearchEntry(key=tool.id, name=tool.name, description=tool.description,
                                     parameters=tuple(sorted(tool.input_schema.get("properties") or {})))
                         for tool in tools])
    return [by_id[tool_id] for tool_id in index.search(query, limit)]


def _list_tokens(config: Config, inputs: Any, *, live: bool, as_json: bool, verbose: bool,
                 targets: tuple[str, ...] | None) -> None:
    """`toolc list --tokens`: compile in memory (no code generation) and read the toolset index."""
    import orjson

    from compiler.pipeline import compile_project

    build = compile_project(config.model_copy(update={"codegen": False}), inputs, targets=targets, live=live)
    print_diagnostics(build.diagnostics, verbose=verbose)
    index_file = build.files.get("schemas/toolsets/index.json")
    if build.diagnostics.has_errors or index_file is None:
        sys.exit(EXIT_FAILED)
    index = orjson.loads(index_file)
    rows = [{"id": tool_id, "toolsets": entry["toolsets"], "tokens": entry["tokens"]}
            for tool_id, entry in sorted(index["tools"].items())]
    totals = {target: {"tokens": row["files"]["all"]["all_tools_tokens"], "tools": row["files"]["all"]["tools"],
                       "fits_one_request": row["files"]["all"]["fits"], "budget": row["budget"],
                       "method": row["tokens_method"], "forms": row["forms"]}
              for target, row in index["targets"].items()}
    if as_json:
        click.echo(canonical_json({"tools": rows, "targets": totals,
                                   "toolsets": {name: {target: {"tools": t["tools"], "tokens": t["tokens"]}
                                                       for target, t in entry["targets"].items()}
                                                for name, entry in index["toolsets"].items()}}).decode(), nl=False)
        return
    chosen = list(totals)
    width = max((len(row["id"]) for row in rows), default=4)
    click.echo(f"{'TOOL':<{width}}  " + "  ".join(f"{target:>16}" for target in chosen) + "  TOOLSETS")
    for row in rows:
        costs = "  ".join(f"{row['tokens'].get(target, '-'):>16}" for target in chosen)
        click.echo(f"{row['id']:<{width}}  {costs}  {', '.join(row['toolsets'])}")
    for target, total in totals.items():
        budget = f", budget {total['budget']}" if total["budget"] is not None else ""
        fits = "" if total["fits_one_request"] else " (over the request limit: send a toolset)"
        click.echo(f"{target}: {total['tools']} tools, {total['tokens']} tokens{budget}{fits}; {total['method']}")
    _forms_table(totals)
    click.echo(f"toolc: {len(rows)} tools in {len(index['toolsets'])} toolsets", err=True)


def _row(tool: Tool, settings: OpenApiConfig | None) -> dict[str, Any]:
    row: dict[str, Any] = {"id": tool.id, "name": tool.name, "source": tool.source, "risk": tool.risk.label,
                           "read_only": is_read_only(tool), "side_effects": list(tool.side_effects)}
    assessment = assess(tool, settings)
    if assessment is not None and assessment.reason:
        row["risk_reason"] = assessment.reason
    return row
FORMS = {"all": "every tool", "toolsets": "toolsets", "deferred": "native deferral", "discovery": "discovery"}


def _forms_table(totals: dict[str, Any]) -> None:
    """Per target, what each form costs at the start of a request (the model sees nothing else of the API until
    it searches or calls), so the cheapest form that fits can be chosen."""
    click.echo(f"\n{'TARGET':<18}{'FORM':<17}{'START TOKENS':>13}  SEND")
    for target, total in totals.items():
        for form, label in FORMS.items():
            row = total["forms"].get(form)
            if row is None:
                continue
            tokens = f"{row['start_tokens']:,}"
            if form == "toolsets":
                send = f"one of {row['files']} files (median {row['median_tokens']:,}; the largest shown)"
            elif not row["sendable"]:
                send = "no: over a request's limits" if form != "all" else "no: over the request's tool limit"
            else:
                send = row["file"] or "not written (toolsets.discovery: true writes it)"
            click.echo(f"{target:<18}{label:<17}{tokens:>13}  {send}")


def _table(rows: list[dict[str, Any]]) -> None:
    """One line per tool; where the risk is not the evidence's alone (an operation's words, the project file), the
    reason on an indented line below it."""
    width = max((len(row["id"]) for row in rows), default=4)
    click.echo(f"{'TOOL':<{width}}  {'RISK':<8}  {'READ-ONLY':<9}  SIDE EFFECTS")
    for row in rows:
        effects = ", ".join(row["side_effects"]) or "-"
        read_only = "yes" if row["read_only"] else "no"
        click.echo(f"{row['id']:<{width}}  {row['risk']:<8}  {read_only:<9}  {effects}")
        if "risk_reason" in row:
            click.echo(f"  ↳ {row['risk_reason']}")


@click.command("health")
@click.argument("ids", nargs=-1)
@_config_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("--strict", is_flag=True, help="Exit 1 when a server is degraded, not only when one is unhealthy.")
@click.option("-v", "--verbose", is_flag=True, help="Print every diagnostic, infos included.")
@guarded
def health_command(ids: tuple[str, ...], config_path: Path, as_json: bool, strict: bool, verbose: bool) -> None:
    """Connect to each MCP server and report it healthy, degraded or unhealthy (exit 1 if any is unhealthy)."""
    config = load_project(config_path)
    servers = choose_servers(config, ids)
    diagnostics = Diagnostics()
    from compiler.sources.mcp_health import HEALTHY, UNHEALTHY, assess
    from compiler.sources.mcp_live import list_servers

    outcomes = list_servers(servers, diagnostics, root=config.root)
    reports = [assess(outcome) for outcome in outcomes]
    if verbose:
        print_diagnostics(diagnostics, verbose=True)
    if as_json:
        click.echo(canonical_json({r.server: r.to_json() for r in reports}).decode(), nl=False)
    else:
        width = max((len(r.server) for r in reports), default=6)
        for r in reports:
            click.echo(f"{r.server:<{width}}  {r.status:<9}  {r.summary()}")
    statuses = {r.status for r in reports}
    if UNHEALTHY in statuses or (strict and statuses - {HEALTHY}):
        sys.exit(EXIT_FAILED)
