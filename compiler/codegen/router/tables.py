"""IR + config → the data tables baked into the generated router: `toolc_router/_tables.py` (policy, servers, HTTP
APIs, as Python literals) and `toolc_router/_tables.json` (the per-tool tables, `tables_chunks`, which `_tables.py`
reads on first use).

Everything returned here is plain data (str, int, bool, None, tuples, dicts) that the template writes with
`pyrepr`; nothing from the input becomes an identifier. Problems are TC63x diagnostics, never exceptions:

    TC630 error    a tool whose binding the router cannot call (skipped)
    TC631 warning  a literal secret in a server's env or headers: not baked, replaced by an `${ENV}` reference
    TC632 info     MCP tools whose server has no launch details (recordings): `Router.set_server_factory` needed
    TC633 warning  an HTTP API without a base URL, or with a relative one: `TOOLC_BASE_URL_<API>` must be set at
                   run time (the origin a relative server URL is resolved against)
    TC634 error    an invalid router policy setting (`policy:` in the project file)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import orjson

from compiler.build import Build
from compiler.codegen.router.names import NameMaps
from compiler.codegen.router.reuse import FilePieces, piece_key
from compiler.config import PolicyConfig, ServerConfig
from compiler.infra.diagnostics import Diagnostics
from compiler.infra.serialize import compact_json
from compiler.ir import CredentialArgument, HttpBinding, McpBinding, RiskLevel, Tool
from compiler.sources.mcp_env import looks_secret

UNROUTABLE_TOOL = "TC630"
LITERAL_SECRET = "TC631"
NO_LAUNCH_DETAILS = "TC632"
NO_BASE_URL = "TC633"
BAD_POLICY = "TC634"

_ABSOLUTE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_REFERENCE = re.compile(r"\$\{(?:env:)?[A-Za-z_][A-Za-z0-9_]*\}")
_NOT_ENV = re.compile(r"[^A-Z0-9]+")

DEFAULT_AUDIT_DB = "toolc_audit.sqlite3"
DEFAULT_MAX_CONCURRENCY = 10


def env_name(*parts: str) -> str:
    """`TOOLC_` + upper-case parts joined by `_`, anything else squeezed to `_` (a valid env var name)."""
    return "_".join(["TOOLC", *(_NOT_ENV.sub("_", part.upper()).strip("_") for part in parts)])


def _plain(value: Any) -> Any:
    """Mappings and sequences as dicts and tuples/lists of plain values, so `pyrepr` gives a literal."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def policy_table(policy: PolicyConfig, diagnostics: Diagnostics) -> dict[str, Any]:
    """The baked `PolicySpec`. Every field is typed and validated when the project file is loaded."""
    return {
        "allow_tools": tuple(policy.allow_tools),
        "deny_tools": tuple(policy.deny_tools),
        "deny_side_effect_tags": tuple(policy.deny_side_effect_tags),
        "admin_tools": tuple(policy.admin_tools),
        "admin_token_env": policy.admin_token_env,
        "admin_min_risk": None if policy.admin_min_risk is None else RiskLevel.from_label(policy.admin_min_risk).value,
        "max_concurrency": policy.max_concurrency,
        "audit_db": policy.audit_db,
    }


def _keep_secrets_out(server: ServerConfig, kind: str, values: Mapping[str, str],
                      diagnostics: Diagnostics) -> dict[str, str]:
    """Bake `${ENV}` references and harmless literals; a literal secret becomes a reference to an env var."""
    baked: dict[str, str] = {}
    for name, value in sorted(values.items()):
        secret = name in server.secrets or looks_secret(name)
        if secret and not _REFERENCE.search(value):
            variable = name if kind == "env" and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else env_name(
                server.id, name)
            diagnostics.report(LITERAL_SECRET, f"{kind} {name!r} holds a literal secret: the router reads it from "
                               f"${{{variable}}} at run time instead", source=server.id,
                               pointer=f"/mcp_servers/{server.id}/{kind}/{name}")
            baked[name] = f"${{{variable}}}"
        else:
            baked[name] = value
    return baked


def server_rows(servers: tuple[ServerConfig, ...], diagnostics: Diagnostics) -> list[dict[str, Any]]:
    rows = []
    for server in sorted(servers, key=lambda s: s.id):
        if not server.enabled:
            continue
        rows.append({
            "id": server.id,
            "transport": server.transport,
            "command": (*server.command, *server.args),
            "env": _keep_secrets_out(server, "env", server.env, diagnostics),
            "cwd": server.cwd,
            "url": server.url,
            "headers": _keep_secrets_out(server, "headers", server.headers, diagnostics),
            "timeout_ms": server.timeout_ms,
            "deny_side_effect_tags": tuple(server.deny_side_effect_tags),
        })
    return rows


def api_rows(build: Build, tools: list[Tool]) -> list[dict[str, Any]]:
    """One row per OpenAPI source that has tools: the base URL from config, else the document's (its root
    `servers`), else the env. A relative server URL is resolved against the origin in `TOOLC_BASE_URL_<API>`."""
    rows = []
    by_source: dict[str, list[Tool]] = {}
    for tool in tools:
        if isinstance(tool.binding, HttpBinding):
            by_source.setdefault(tool.source, []).append(tool)
    for source_id, source_tools in sorted(by_source.items()):
        bindings = [tool.binding for tool in source_tools if isinstance(tool.binding, HttpBinding)]
        base_url = source_base_url(build, source_id)
        variable = env_name("BASE_URL", source_id)
        if not base_url:
            build.diagnostics.report(NO_BASE_URL, f"no base URL: the router reads it from ${{{variable}}}",
                                     source=source_id)
        elif resolved_url(base_url, source_id) != base_url:
            build.diagnostics.report(NO_BASE_URL, f"relative server URL {base_url!r}: the router resolves it "
                                     f"against the origin in ${{{variable}}}", source=source_id)
        described = {scheme.name: {"type": scheme.type, "scheme": scheme.scheme, "location": scheme.location,
                                   "param_name": scheme.param_name}
                     for binding in bindings for alternative in binding.security for scheme in alternative}
        schemes = sorted(described)
        rows.append({
            "id": source_id,
            "base_url": resolved_url(base_url, source_id),
            "timeout_ms": 30_000,
            "deny_side_effect_tags": (),
            "auth": {scheme: f"${{{env_name(source_id, scheme)}}}" for scheme in schemes},
            "base_url_env": variable,
            "schemes": {name: described[name] for name in schemes},
        })
    return rows


def overridden_url(build: Build, source_id: str) -> str | None:
    """The project file's `base_url` for the source, if it sets one."""
    for settings in build.config.openapi:
        if (settings.id or settings.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]) == source_id and settings.base_url:
            return settings.base_url
    return None


def source_base_url(build: Build, source_id: str) -> str:
    override = overridden_url(build, source_id)
    if override is not None:
        return override
    try:
        servers = build.catalog.source(source_id).info.get("servers") or []
    except KeyError:
        servers = []
    return str(servers[0]) if servers else ""


def resolved_url(url: str, source_id: str) -> str:
    """An absolute URL (or `${ENV}` reference) as it is; a relative one after the run-time origin."""
    if _ABSOLUTE.match(url) or url.startswith("${"):
        return url
    return f"${{{env_name('BASE_URL', source_id)}}}" + (("/" + url.lstrip("/")) if url.strip("/") else "")


def _http_row(binding: HttpBinding, api_base: str | None, source_id: str) -> dict[str, Any]:
    own = resolved_url(binding.base_url, source_id) if binding.base_url and api_base is not None else None
    return {
        "method": binding.method.upper(),
        "path": binding.path,
        "arguments": [
            {"name": a.name, "wire_name": a.wire_name, "location": a.location, "required": a.required,
             "style": a.style, "explode": a.explode, "whole_body": a.whole_body, "content_type": a.content_type,
             "allow_reserved": a.allow_reserved, "required_in_body": a.required_in_body, "kind": a.kind,
             "credential": a.credential if isinstance(a, CredentialArgument) else None}
            for a in binding.arguments
        ],
        "body_content_type": binding.body_content_type,
        "body_required": binding.body_required,
        "base_url": own if own is not None and own != api_base else None,
        "security": [
            [{"name": s.name, "type": s.type, "scheme": s.scheme, "location": s.location, "param_name": s.param_name}
             for s in alternative]
            for alternative in binding.security
        ],
    }


def tool_rows(tools: list[Tool], diagnostics: Diagnostics,
              api_bases: Mapping[str, str | None] | None = None) -> list[dict[str, Any]]:
    """`api_bases`: each HTTP API's baked base URL, so a tool's own server is baked only where it differs; None
    for an API whose URL the project file overrides (the override wins for every operation)."""
    rows = []
    for tool in sorted(tools, key=lambda t: t.id):
        row: dict[str, Any] = {
            "id": tool.id,
            "name": tool.name,
            "source": tool.source,
            "risk": int(tool.risk),
            "side_effects": tuple(tool.side_effects),
            "fixed_params": _plain(tool.fixed_params),
            "mcp_tool": None,
            "http": None,
            "idempotent": False,
        }
        if isinstance(tool.binding, McpBinding):
            row["mcp_tool"] = tool.binding.tool_name
            row["source"] = tool.binding.server
            row["idempotent"] = tool.annotations.idempotent_hint is True  # only lets a lost call be sent again
        elif isinstance(tool.binding, HttpBinding):
            row["http"] = _http_row(tool.binding, (api_bases or {}).get(tool.source, ""), tool.source)
        else:
            diagnostics.report(UNROUTABLE_TOOL, "the router cannot call this tool: unknown binding", source=tool.source,
                               tool=tool.id)
            continue
        rows.append(row)
    return rows


def recording_only_servers(tools: list[Tool], servers: list[dict[str, Any]], diagnostics: Diagnostics) -> None:
    launchable = {row["id"] for row in servers}
    missing = sorted({t.binding.server for t in tools if isinstance(t.binding, McpBinding)} - launchable)
    for server in missing:
        diagnostics.report(NO_LAUNCH_DETAILS, "tools come from a recording with no launch details: the router reaches "
                           "this server only through Router.set_server_factory", source=server)


TABLES_FORMAT = 1
_TOOL_DEFAULTS: dict[str, Any] = {"side_effects": [], "fixed_params": {}, "mcp_tool": None, "http": None, "aliases": [],
                                  "idempotent": False}
_HTTP_DEFAULTS: dict[str, Any] = {"body_content_type": None, "security": [], "base_url": None, "body_required": False}
_ARG_DEFAULTS: dict[str, Any] = {"required": False, "style": None, "explode": None, "whole_body": False,
                                 "content_type": None, "allow_reserved": False, "required_in_body": False, "kind": None,
                                 "credential": None}
_SCHEME_DEFAULTS: dict[str, Any] = {"scheme": None, "location": None, "param_name": None}
"""The defaults of `ToolSpec`, `HttpSpec`, `HttpArg` and `AuthScheme` (templates/router/static/_types.py): a value
equal to its field's default is left out of `_tables.json` (tests/router/test_tables.py checks the two agree)."""


def _without_defaults(row: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    def default(key: str, value: Any) -> bool:
        value = list(value) if isinstance(value, tuple) else value
        return key in defaults and type(value) is type(defaults[key]) and value == defaults[key]

    return {key: value for key, value in row.items() if not default(key, value)}


def _compact_tool(row: Mapping[str, Any]) -> dict[str, Any]:
    out = _without_defaults(row, _TOOL_DEFAULTS)
    http = row["http"]
    if http is not None:
        http = _without_defaults(http, _HTTP_DEFAULTS)
        http["arguments"] = [_without_defaults(argument, _ARG_DEFAULTS) for argument in http["arguments"]]
        if "security" in http:
            http["security"] = [[_without_defaults(scheme, _SCHEME_DEFAULTS) for scheme in alternative]
                                for alternative in http["security"]]
        out["http"] = http
    return out


def tables_chunks(tools: list[dict[str, Any]], maps: NameMaps, pieces: FilePieces, *,
                  tool_hash: Callable[[Mapping[str, Any]], str]) -> Iterator[bytes]:
    """`_tables.json`: tool rows by id (`tool_rows`, plus their policy `aliases`; values equal to their field's
    default left out), each distinct provider name table once (`name_tables`) and every target's index into them
    (`name_maps`). Compact: a big API's is megabytes. The bytes of `compact_json` of that object (keys sorted, as
    the rows are by id) + a newline, one tool's row a piece (`router.reuse`), keyed by what the row is made from
    (`tool_hash`: the row's tool's IR hash) and the row itself but for the tool's own fields."""
    yield pieces.frame(b'{"format":' + compact_json(TABLES_FORMAT) + b',"name_maps":' + compact_json(dict(maps.targets))
                       + b',"name_tables":[' + b",".join(maps.encoded) + b'],"tools":{')
    for position, row in enumerate(tools):
        if position:
            yield pieces.frame(b",")
        key = piece_key("tables", row["id"], tool_hash(row), _row_context(row))
        yield pieces.piece(key, lambda: (orjson.dumps(row["id"]) + b":" + compact_json(_compact_tool(row)), []))  # noqa: B023
    yield pieces.frame(b"}}\n")


def _row_context(row: Mapping[str, Any]) -> list[Any]:
    """What a tool's row holds besides what its IR hash covers: its aliases (from the names of every target and
    of its source's other tools) and, for an HTTP tool, whether its own base URL differs from its API's."""
    http = row["http"]
    return [row["aliases"], http["base_url"] if http is not None else None]
