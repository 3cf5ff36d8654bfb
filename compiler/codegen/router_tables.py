"""IR + config → the data tables baked into the generated router (`toolc_router/_tables.py`).

Everything returned here is plain data (str, int, bool, None, tuples, dicts) that the template writes with
`pyrepr`; nothing from the input becomes an identifier. Problems are TC63x diagnostics, never exceptions:

    TC630 error    a tool whose binding the router cannot call (skipped)
    TC631 warning  a literal secret in a server's env or headers: not baked, replaced by an `${ENV}` reference
    TC632 info     MCP tools whose server has no launch details (recordings): `Router.set_server_factory` needed
    TC633 warning  an HTTP API without a base URL: `TOOLC_BASE_URL_<API>` must be set at run time
    TC634 error    an invalid router policy setting (`policy:` in the project file)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from compiler.build import Build
from compiler.config import OpenApiConfig, PolicyConfig, ServerConfig
from compiler.diagnostics import Diagnostics
from compiler.ir import HttpBinding, McpBinding, RiskLevel, Tool
from compiler.sources.mcp_env import looks_secret

UNROUTABLE_TOOL = "TC630"
LITERAL_SECRET = "TC631"
NO_LAUNCH_DETAILS = "TC632"
NO_BASE_URL = "TC633"
BAD_POLICY = "TC634"

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
            diagnostics.warning(LITERAL_SECRET, f"{kind} {name!r} holds a literal secret: the router reads it from "
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
    """One row per OpenAPI source that has tools: base URL from config, else the document's, else the env."""
    configured: dict[str, OpenApiConfig] = {}
    for settings in build.config.openapi:
        configured[settings.id or settings.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]] = settings
    rows = []
    by_source: dict[str, list[Tool]] = {}
    for tool in tools:
        if isinstance(tool.binding, HttpBinding):
            by_source.setdefault(tool.source, []).append(tool)
    for source_id, source_tools in sorted(by_source.items()):
        entry = configured.get(source_id)
        bindings = [tool.binding for tool in source_tools if isinstance(tool.binding, HttpBinding)]
        base_url = (entry.base_url if entry and entry.base_url else bindings[0].base_url) or ""
        if not base_url:
            variable = env_name("BASE_URL", source_id)
            build.diagnostics.warning(NO_BASE_URL, f"no base URL: the router reads it from ${{{variable}}}",
                                      source=source_id)
            base_url = f"${{{variable}}}"
        schemes = sorted({scheme.name for binding in bindings for alternative in binding.security
                          for scheme in alternative})
        rows.append({
            "id": source_id,
            "base_url": base_url,
            "timeout_ms": 30_000,
            "deny_side_effect_tags": (),
            "auth": {scheme: f"${{{env_name(source_id, scheme)}}}" for scheme in schemes},
        })
    return rows


def _http_row(binding: HttpBinding) -> dict[str, Any]:
    return {
        "method": binding.method.upper(),
        "path": binding.path,
        "arguments": [
            {"name": a.name, "wire_name": a.wire_name, "location": a.location, "required": a.required,
             "style": a.style, "explode": a.explode, "whole_body": a.whole_body}
            for a in binding.arguments
        ],
        "body_content_type": binding.body_content_type,
        "security": [
            [{"name": s.name, "type": s.type, "scheme": s.scheme, "location": s.location, "param_name": s.param_name}
             for s in alternative]
            for alternative in binding.security
        ],
    }


def tool_rows(tools: list[Tool], diagnostics: Diagnostics) -> list[dict[str, Any]]:
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
        }
        if isinstance(tool.binding, McpBinding):
            row["mcp_tool"] = tool.binding.tool_name
            row["source"] = tool.binding.server
        elif isinstance(tool.binding, HttpBinding):
            row["http"] = _http_row(tool.binding)
        else:
            diagnostics.error(UNROUTABLE_TOOL, "the router cannot call this tool: unknown binding", source=tool.source,
                              tool=tool.id)
            continue
        rows.append(row)
    return rows


def recording_only_servers(tools: list[Tool], servers: list[dict[str, Any]], diagnostics: Diagnostics) -> None:
    launchable = {row["id"] for row in servers}
    missing = sorted({t.binding.server for t in tools if isinstance(t.binding, McpBinding)} - launchable)
    for server in missing:
        diagnostics.info(NO_LAUNCH_DETAILS, "tools come from a recording with no launch details: the router reaches "
                         "this server only through Router.set_server_factory", source=server)
