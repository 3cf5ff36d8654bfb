"""`gateway.pinning` → `_pins.json`, the pinned definitions of MCP tools the generated router checks each live
server's `tools/list` against (`templates/router/static/pinning.py`); `toolc check --live` compares the same.

    TC642 warning  `gateway.pinning.off` names a server that is not in `mcp_servers`
"""

from __future__ import annotations

from typing import Any

from compiler.config import Config
from compiler.infra.diagnostics import Diagnostics
from compiler.infra.serialize import compact_json
from compiler.ir import McpBinding, Tool
from compiler.sources.mcp_pins import pin_hash, pinned_form

UNKNOWN_PINNED_SERVER = "TC642"
PINS_FORMAT = 1
_HINTS = {"read_only_hint": "readOnlyHint", "destructive_hint": "destructiveHint",
          "idempotent_hint": "idempotentHint", "open_world_hint": "openWorldHint"}


def listed_entry(tool: Tool) -> dict[str, Any]:
    """The `tools/list` entry an MCP tool's IR stands for (presets already hidden from its input schema)."""
    annotations: dict[str, Any] = {wire: value for field, wire in _HINTS.items()
                                   if (value := getattr(tool.annotations, field)) is not None}
    if tool.annotations.title is not None:
        annotations["title"] = tool.annotations.title
    return {"name": tool.name, "title": tool.title, "description": tool.description,
            "inputSchema": tool.input_schema, "outputSchema": tool.output_schema, "annotations": annotations}


def pinned_servers(config: Config, diagnostics: Diagnostics) -> set[str]:
    """The MCP servers whose tools are pinned: every enabled one of `mcp_servers` not switched off."""
    configured = {server.id for server in config.mcp_servers if server.enabled}
    for server_id in config.gateway.pinning.off:
        if server_id not in {server.id for server in config.mcp_servers}:
            diagnostics.report(UNKNOWN_PINNED_SERVER, f"gateway.pinning.off names {server_id!r}, which is not "
                                "an MCP server of this project", source="gateway.pinning")
    return configured - set(config.gateway.pinning.off)


def tool_pins(tools: list[Tool], servers: set[str]) -> dict[str, dict[str, Any]]:
    """Server id → tool name → {hash, definition, presets} for the MCP tools of pinned servers."""
    pins: dict[str, dict[str, Any]] = {}
    for tool in sorted(tools, key=lambda item: item.id):
        binding = tool.binding
        if isinstance(binding, McpBinding) and binding.server in servers:
            form = pinned_form(listed_entry(tool))
            pins.setdefault(binding.server, {})[binding.tool_name] = {
                "hash": pin_hash(form), "definition": form, "presets": sorted(tool.fixed_params)}
    return pins


def pins_file(tools: list[Tool], config: Config, diagnostics: Diagnostics) -> bytes:
    """`_pins.json`: what `toolc_router.pinning` checks each pinned server's live `tools/list` against."""
    servers = tool_pins(tools, pinned_servers(config, diagnostics))
    return compact_json({"format": PINS_FORMAT, "servers": servers}) + b"\n"
