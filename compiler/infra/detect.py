"""What kind of input a parsed document is, from its top-level keys alone."""

from __future__ import annotations

from typing import Any, Literal

InputKind = Literal["openapi", "mcp-recording"]


def detect_kind(document: Any) -> InputKind | None:
    """`openapi`/`swagger` key → an OpenAPI document; a `tools_list_pages` or `tools` list → an MCP listing."""
    if not isinstance(document, dict):
        return None
    if "openapi" in document or "swagger" in document:
        return "openapi"
    if isinstance(document.get("tools_list_pages"), list) or isinstance(document.get("tools"), list):
        return "mcp-recording"
    return None
