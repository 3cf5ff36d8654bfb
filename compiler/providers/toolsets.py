"""Toolsets: the catalog cut into named groups, each small enough for one request of every target.

Tools the project's `toolsets.globs` name go to those sets (a tool may be in several); the others are grouped by
their source and `group_by` (an MCP server's tools stay together; an OpenAPI document's by first tag or first path
segment). A group over the limit is split into `<name>-1`, `<name>-2`, ... in tool-id order. Every tool of the
catalog lands in at least one toolset. Names are the same for every target; the tools in a toolset file carry the
target's provider names, so one name map routes a call from any toolset.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from compiler.config import ToolsetsConfig
from compiler.ir import Tool

_SLUG = re.compile(r"[^a-z0-9_-]+")


@dataclass(frozen=True)
class Toolset:
    name: str
    tool_ids: tuple[str, ...]
    origin: str
    """How its tools were chosen: `glob`, `server`, `tag`, `path` or `source`."""


def slug(text: str) -> str:
    out = _SLUG.sub("-", text.lower()).strip("-_")
    return (out or "tools")[:40].rstrip("-_")


_PREFIX = re.compile(r"^(v\d+([._-]\d+)*|api|apis|rest)$", re.IGNORECASE)
"""Path segments that name a version or the API itself, not a resource (`/v1/customers` groups as `customers`)."""


def _segment(path: str) -> str:
    for part in path.split("/"):
        if part and not part.startswith("{") and not _PREFIX.match(part):
            return part
    return "root"


def _group_of(tool: Tool, group_by: str) -> tuple[str, str]:
    """(group name, origin) of a tool no glob names."""
    binding = tool.binding
    if binding.kind == "mcp":
        return slug(tool.source), "server"
    tags = tool.extra.get("tags")
    tag = tags[0] if isinstance(tags, list | tuple) and tags and isinstance(tags[0], str) else None
    if group_by in ("auto", "tag") and tag:
        return slug(f"{tool.source}-{tag}"), "tag"
    if group_by == "server":
        return slug(tool.source), "source"
    return slug(f"{tool.source}-{_segment(binding.path)}"), "path"


def matches(tool: Tool, patterns: Iterable[str]) -> bool:
    return any(fnmatchcase(tool.id, pattern) or fnmatchcase(tool.name, pattern) for pattern in patterns)


def plan_toolsets(tools: Iterable[Tool], settings: ToolsetsConfig, limit: int) -> tuple[list[Toolset], list[str]]:
    """(toolsets sorted by name, globs-config names that matched no tool)."""
    ordered = sorted(tools, key=lambda tool: tool.id)
    groups: dict[str, tuple[list[str], str]] = {}
    placed: set[str] = set()
    empty: list[str] = []
    for name, patterns in settings.globs.items():
        chosen = [tool.id for tool in ordered if matches(tool, patterns)]
        if not chosen:
            empty.append(name)
            continue
        groups[name] = (chosen, "glob")
        placed.update(chosen)
    for tool in ordered:
        if tool.id in placed:
            continue
        name, origin = _group_of(tool, settings.group_by)
        while name in groups and groups[name][1] == "glob":
            name = f"{name}-auto"
        groups.setdefault(name, ([], origin))[0].append(tool.id)
    out: list[Toolset] = []
    for name, (ids, origin) in groups.items():
        if len(ids) <= limit:
            out.append(Toolset(name, tuple(ids), origin))
            continue
        for index, start in enumerate(range(0, len(ids), limit), start=1):
            out.append(Toolset(f"{name}-{index}", tuple(ids[start:start + limit]), origin))
    return sorted(out, key=lambda item: item.name), empty
