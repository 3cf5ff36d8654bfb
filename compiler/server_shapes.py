"""Other people's MCP server lists → toolc's `mcp_servers` entries.

Accepted, besides toolc's own list of entries (seed 000's `mcp_servers.yaml`):

- the `mcpServers` object of Claude Desktop, Claude Code and Cursor (`.mcp.json`, `claude_desktop_config.json`,
  `~/.cursor/mcp.json`): `{"mcpServers": {"name": {"command", "args", "env", "cwd"} | {"url", "type", "headers"}}}`;
- VS Code's `.vscode/mcp.json`: `{"servers": {"name": {"type": "stdio"|"http"|"sse", ...}}, "inputs": [...]}`;
- toolc's own `mcp_servers:` written as such an object (`{name: {...}}`) instead of a list.

`${VAR}` and VS Code's `${env:VAR}` are kept as written; `sources.mcp_env` expands them at connect time only.
Keys those clients use for their own UI (`autoApprove`, `disabled`, ...) are understood or ignored; anything else
is refused, like every unknown key in a toolc project file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_HTTP_TYPES = {"http": "http", "streamable-http": "http", "streamablehttp": "http", "streamable_http": "http",
               "sse": "sse", "stdio": "stdio"}
_FOREIGN_KEYS = frozenset({"command", "args", "env", "cwd", "url", "headers", "type", "transportType", "transport",
                           "disabled", "enabled", "timeout", "autoApprove", "alwaysAllow", "envFile", "description",
                           "gallery", "version", "dev", "name", "id", "allow_tools", "deny_tools", "timeout_ms",
                           "recording", "secrets", "deny_side_effect_tags", "fixed_params"})
_IGNORED_KEYS = frozenset({"autoApprove", "alwaysAllow", "envFile", "description", "gallery", "version", "dev",
                           "name"})


class ShapeError(ValueError):
    """A server list in a foreign shape that cannot be read; the message names the entry."""


def normalize_server_shapes(data: dict[str, Any]) -> dict[str, Any]:
    """Return `data` with `mcpServers` / VS Code `servers` / a `mcp_servers` mapping turned into a list of entries."""
    foreign = [key for key in ("mcpServers", "servers") if isinstance(data.get(key), Mapping)]
    if not foreign and not isinstance(data.get("mcp_servers"), Mapping):
        return data
    result = {key: value for key, value in data.items() if key not in ("mcpServers", "servers", "inputs")}
    entries: list[Any] = []
    existing = data.get("mcp_servers")
    if isinstance(existing, Mapping):
        entries.extend(_entry(str(name), spec, "mcp_servers") for name, spec in existing.items())
    elif existing is not None:
        entries.extend(existing if isinstance(existing, list) else [existing])
    for key in foreign:
        entries.extend(_entry(str(name), spec, key) for name, spec in data[key].items())
    result["mcp_servers"] = entries
    return result


def _entry(name: str, spec: Any, key: str) -> dict[str, Any]:
    where = f"{key}/{name}"
    if not isinstance(spec, Mapping):
        raise ShapeError(f"{where}: a server must be an object")
    unknown = sorted(set(spec) - _FOREIGN_KEYS)
    if unknown:
        raise ShapeError(f"{where}: unknown key(s) {', '.join(unknown)}")
    entry: dict[str, Any] = {k: v for k, v in spec.items()
                             if k not in _IGNORED_KEYS and k not in ("type", "transportType", "disabled", "timeout")}
    entry["id"] = str(spec.get("id") or name)
    kind = spec.get("type", spec.get("transportType", spec.get("transport")))
    if kind is None:
        kind = "http" if "url" in spec else "stdio"
    transport = _HTTP_TYPES.get(str(kind).lower())
    if transport is None:
        raise ShapeError(f"{where}: unknown transport type {kind!r} (stdio, http, sse)")
    entry["transport"] = transport
    if isinstance(spec.get("command"), str) and "args" in spec:
        # Claude/Cursor/VS Code: `command` is one executable, `args` its arguments (no shell splitting).
        entry["command"] = [spec["command"]]
    if spec.get("disabled") is True:
        entry["enabled"] = False
    timeout = spec.get("timeout")
    if isinstance(timeout, int | float) and not isinstance(timeout, bool) and "timeout_ms" not in spec:
        # Cline and Claude Code write seconds when small, milliseconds otherwise.
        entry["timeout_ms"] = int(timeout * 1000) if timeout < 1000 else int(timeout)
    return entry
