"""Recorded MCP listings → IR.

Accepted shapes (the kind is detected, not declared):
- a capture: `{"server", "initialize": {protocolVersion, capabilities, serverInfo}, "tools_list_pages": [{"tools", "nextCursor"?}]}`
  (what `toolc record` writes and what `corpus/mcp/*.json` holds);
- a bare `tools/list` result: `{"tools": [...]}`.

Every field of a tool is kept: the IR has slots for name, title, description, inputSchema, outputSchema and
annotations; anything else (`_meta`, `icons`, `execution`, future fields) goes to `Tool.extra` verbatim.
Draft-07 and 2020-12 `$schema` are both accepted; schemas are not rewritten here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compiler.config import RecordingConfig
from compiler.infra.diagnostics import Diagnostics
from compiler.ir import Annotations, McpBinding, Source, Tool
from compiler.policy import (
    UNMATCHED_POLICY_PATTERN,
    infer_risk,
    is_selected,
    plain_name,
    unmatched_source_names,
)
from compiler.sources.lost_refs import without_lost_refs

NOT_A_LISTING = "TC350"
BAD_TOOL = "TC351"
DUPLICATE_TOOL = "TC352"
BAD_PAGE = "TC353"
TOOL_DESELECTED = "TC354"
ODD_TOOL_NAME = "TC690"

_KNOWN_TOOL_FIELDS = frozenset({"name", "title", "description", "inputSchema", "outputSchema", "annotations"})
_ANNOTATION_FIELDS = {
    "readOnlyHint": "read_only_hint",
    "destructiveHint": "destructive_hint",
    "idempotentHint": "idempotent_hint",
    "openWorldHint": "open_world_hint",
}


def listing_pages(document: Any) -> list[Any] | None:
    """The pages of a listing, or None when the document is not a listing at all."""
    if not isinstance(document, Mapping):
        return None
    if "tools_list_pages" in document:
        pages = document["tools_list_pages"]
        return pages if isinstance(pages, list) else None
    if isinstance(document.get("tools"), list):
        return [document]
    return None


def _annotations(raw: Any) -> Annotations:
    if not isinstance(raw, Mapping):
        return Annotations()
    hints = {attr: raw[key] for key, attr in _ANNOTATION_FIELDS.items() if isinstance(raw.get(key), bool)}
    title = raw.get("title")
    return Annotations(title=title if isinstance(title, str) else None, **hints)


def _tool_problem(raw: Any) -> str | None:
    """Why a raw tool cannot be compiled, or None. MCP requires a name and an object inputSchema."""
    if not isinstance(raw, Mapping):
        return "a tool must be a JSON object"
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        return "a tool needs a non-empty string `name`"
    schema = raw.get("inputSchema")
    if not isinstance(schema, Mapping):
        return "`inputSchema` must be a JSON object"
    if schema.get("type") != "object":
        return "`inputSchema` must have `type: object` at its root"
    for key in ("description", "title"):
        if key in raw and not isinstance(raw[key], str | None):
            return f"`{key}` must be a string"
    if "outputSchema" in raw and not isinstance(raw["outputSchema"], Mapping | None):
        return "`outputSchema` must be a JSON object"
    return None


def _tool_from_raw(raw: Mapping[str, Any], server: str, config: RecordingConfig | None) -> Tool:
    name: str = raw["name"]
    description = raw.get("description") or ""
    annotations = _annotations(raw.get("annotations"))
    risk, side_effects = infer_risk(name, description, annotations, trusted=bool(config and config.trusted))
    output = raw.get("outputSchema")
    fixed = dict(config.fixed_params.get(name, {})) if config else {}
    return Tool(
        id=f"mcp:{server}:{name}",
        source=server,
        name=name,
        title=raw.get("title") or annotations.title,
        description=description,
        input_schema=_hide_fixed(dict(raw["inputSchema"]), fixed),
        output_schema=dict(output) if isinstance(output, Mapping) else None,
        binding=McpBinding(server=server, tool_name=name),
        annotations=annotations,
        risk=risk,
        side_effects=side_effects,
        fixed_params=fixed,
        extra={key: value for key, value in raw.items() if key not in _KNOWN_TOOL_FIELDS},
    )


def _hide_fixed(schema: dict[str, Any], fixed: Mapping[str, Any]) -> dict[str, Any]:
    """Preset arguments are not the model's to choose: drop them from the schema it sees (seed 004)."""
    if not fixed:
        return schema
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        schema["properties"] = {k: v for k, v in properties.items() if k not in fixed}
    required = schema.get("required")
    if isinstance(required, list):
        schema["required"] = [k for k in required if k not in fixed]
    return schema


def read_recording(
    document: Any,
    *,
    source_id: str | None,
    location: str,
    diagnostics: Diagnostics,
    config: RecordingConfig | None = None,
) -> tuple[Source, list[Tool]]:
    pages = listing_pages(document)
    server = source_id or (document.get("server") if isinstance(document, Mapping) else None) or location
    if pages is None:
        diagnostics.error(NOT_A_LISTING, "not an MCP listing: expected `tools_list_pages` or a `tools` array", source=location)
        return Source(id=server, kind="mcp", location=location), []

    info: dict[str, Any] = {}
    if isinstance(document, Mapping):
        for key in ("initialize", "server_info", "protocol_version", "transport"):
            if key in document:
                info[key] = document[key]

    tools: list[Tool] = []
    seen: set[str] = set()
    for page_index, page in enumerate(pages):
        raw_tools = page.get("tools") if isinstance(page, Mapping) else None
        if not isinstance(raw_tools, list):
            diagnostics.error(BAD_PAGE, "a page must be an object with a `tools` array", source=location,
                              pointer=f"/tools_list_pages/{page_index}")
            continue
        for index, raw in enumerate(raw_tools):
            pointer = f"/tools_list_pages/{page_index}/tools/{index}" if "tools_list_pages" in document else f"/tools/{index}"
            problem = _tool_problem(raw)
            tool_name: str = raw["name"] if isinstance(raw, Mapping) and isinstance(raw.get("name"), str) else ""
            tool_id = f"mcp:{server}:{tool_name}" if tool_name else ""
            if problem:
                diagnostics.warning(BAD_TOOL, f"tool skipped: {problem}", source=location, tool=tool_id, pointer=pointer)
                continue
            if tool_name in seen:
                diagnostics.warning(DUPLICATE_TOOL, f"duplicate tool name {tool_name!r}: the first one is kept",
                                    source=location, tool=tool_id, pointer=pointer)
                continue
            seen.add(tool_name)
            if config and not (config.enabled and is_selected(tool_name, config.allow_tools, config.deny_tools)):
                diagnostics.info(TOOL_DESELECTED, "tool left out by allow_tools/deny_tools", source=location, tool=tool_id)
                continue
            if not plain_name(tool_name) and not (config and config.trusted):
                diagnostics.warning(ODD_TOOL_NAME, f"tool name {tool_name[:80]!r} is outside the MCP name charset "
                                    "[A-Za-z0-9_.-]: its risk is treated as high (its words can't be trusted, and "
                                    "policy patterns may not match it)", source=location, tool=tool_id, pointer=pointer)
            tools.append(_tool_from_raw(raw, server, config))
    if config is not None:
        for problem in unmatched_source_names(seen, config.allow_tools, config.deny_tools, config.fixed_params):
            diagnostics.warning(UNMATCHED_POLICY_PATTERN, f"the project file's entry for server {server!r}: {problem}",
                                source=location)
    tools = without_lost_refs(tools, {}, diagnostics, location=location, skipped_code=BAD_TOOL)
    return Source(id=server, kind="mcp", location=location, info=info), tools
