"""Toolsets: the catalog cut into named groups, each small enough for one request of every target.

Tools the project's `toolsets.globs` name go to those sets (a tool may be in several); the others are grouped by
their source and `group_by` (an MCP server's tools stay together; an OpenAPI document's by first tag or first path
segment). A document's groups are then sized for use rather than mirrored from its tags: groups whose label starts
with the same word (`payment_intents`, `payment_links`, `payment_methods`) become one toolset named for that word
while they fit one request (`merge_related`), and a group with fewer than `min_tools` tools joins the document's
`<source>-other` toolset, so that no one picks from dozens of one-tool sets. A group over the limit is split into
`<name>-1`, `<name>-2`, ... in tool-id order. Every tool of the catalog lands in at least one toolset. Names are
whole words (cut at a word's end, never inside one) and the same for every target; the tools in a toolset file
carry the target's provider names, so one name map routes a call from any toolset.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from compiler.config import ToolsetsConfig
from compiler.ir import Tool

_SLUG = re.compile(r"[^a-z0-9_-]+")
_CASE_CHANGE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORDS = re.compile(r"[^a-z0-9]+")
_SEPARATORS = re.compile(r"[^A-Za-z0-9]")
MAX_NAME = 40
OTHER = "other"
_AUTOMATIC = frozenset({"tag", "path"})


@dataclass(frozen=True)
class Toolset:
    name: str
    tool_ids: tuple[str, ...]
    origin: str
    """How its tools were chosen: `glob`, `server`, `tag`, `path`, `source`, `related` (groups whose labels start
    with the same word) or `other` (a document's small groups)."""


def slug(text: str) -> str:
    """`text` as a toolset name: lower case, words joined by `-`, at most `MAX_NAME` characters, cut at the end of
    a word; a label written as one CamelCase word is split at its case changes first
    (`Api20100401AuthCallsCredentialListMapping` is `api20100401-auth-calls-credential-list`, not
    `api20100401authcallscre`; "GitHub Enterprise" stays `github-enterprise`)."""
    words = text.split("-")
    text = "-".join(_CASE_CHANGE.sub("-", word) if _SEPARATORS.search(word) is None else word for word in words)
    out = _SLUG.sub("-", text.lower()).strip("-_")
    if len(out) > MAX_NAME:
        cut = max(out.rfind("-", 0, MAX_NAME + 1), out.rfind("_", 0, MAX_NAME + 1))
        out = out[:cut] if cut > 0 else out[:MAX_NAME]
    return out.rstrip("-_") or "tools"


_PREFIX = re.compile(r"^(v\d+([._-]\d+)*|api|apis|rest)$", re.IGNORECASE)
"""Path segments that name a version or the API itself, not a resource (`/v1/customers` groups as `customers`)."""


def _segment(path: str) -> str:
    for part in path.split("/"):
        if part and not part.startswith("{") and not _PREFIX.match(part):
            return part
    return "root"


@dataclass
class _Group:
    source: str
    label: str
    """The tag or path segment the group is named for (empty for a server or a whole source)."""
    origin: str
    ids: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return slug(f"{self.source}-{self.label}") if self.label else slug(self.source)


def _group_of(tool: Tool, group_by: str) -> _Group:
    """The group of a tool no glob names (without its tools)."""
    binding = tool.binding
    if binding.kind == "mcp":
        return _Group(tool.source, "", "server")
    tags = tool.extra.get("tags")
    tag = tags[0] if isinstance(tags, list | tuple) and tags and isinstance(tags[0], str) else None
    if group_by in ("auto", "tag") and tag:
        return _Group(tool.source, tag, "tag")
    if group_by == "server":
        return _Group(tool.source, "", "source")
    return _Group(tool.source, _segment(binding.path), "path")


def matches(tool: Tool, patterns: Iterable[str]) -> bool:
    return any(fnmatchcase(tool.id, pattern) or fnmatchcase(tool.name, pattern) for pattern in patterns)


def _first_word(label: str) -> str:
    return next((word for word in _WORDS.split(_CASE_CHANGE.sub("-", label).lower()) if word), label)


def _family(label: str) -> str:
    """The first word of a label, singular (`payment_intents` and `payments` are both `payment`)."""
    first = _first_word(label)
    return first[:-1] if len(first) > 3 and first.endswith("s") and not first.endswith("ss") else first


def _merge_related(groups: list[_Group], limit: int) -> list[_Group]:
    """A document's groups that share their first word packed together, in name order, while they fit `limit`."""
    families: dict[tuple[str, str], list[_Group]] = {}
    for group in groups:
        if group.origin in _AUTOMATIC:
            families.setdefault((group.source, _family(group.label)), []).append(group)
    merged: list[_Group] = [group for group in groups if group.origin not in _AUTOMATIC]
    for (source, _), members in families.items():
        if len(members) == 1:
            merged.extend(members)
            continue
        members.sort(key=lambda group: group.name)
        family = _first_word(members[0].label)  # as written (`apps`, not the singular key `app`)
        bins: list[list[_Group]] = [[]]
        for member in members:
            if bins[-1] and sum(len(group.ids) for group in bins[-1]) + len(member.ids) > limit:
                bins.append([])
            bins[-1].append(member)
        for number, packed in enumerate(bins, start=1):
            if len(packed) == 1:
                merged.extend(packed)
                continue
            label = family if len(bins) == 1 else f"{family}-{number}"
            merged.append(_Group(source, label, "related", sorted(i for group in packed for i in group.ids)))
    return merged


def _pool_small(groups: list[_Group], min_tools: int) -> list[_Group]:
    """A document's groups under `min_tools` tools, joined as its `<source>-other` toolset (where there are two or
    more: one small group alone keeps its name)."""
    small: dict[str, list[_Group]] = {}
    for group in groups:
        if group.origin in _AUTOMATIC | {"related"} and len(group.ids) < min_tools:
            small.setdefault(group.source, []).append(group)
    pooled = {id(group) for members in small.values() if len(members) > 1 for group in members}
    others = [_Group(source, OTHER, OTHER, sorted(i for group in members for i in group.ids))
              for source, members in small.items() if len(members) > 1]
    return [group for group in groups if id(group) not in pooled] + others


def plan_toolsets(tools: Iterable[Tool], settings: ToolsetsConfig, limit: int) -> tuple[list[Toolset], list[str]]:
    """(toolsets sorted by name, globs-config names that matched no tool)."""
    ordered = sorted(tools, key=lambda tool: tool.id)
    out: list[Toolset] = []
    placed: set[str] = set()
    empty: list[str] = []
    for name, patterns in settings.globs.items():
        chosen = tuple(tool.id for tool in ordered if matches(tool, patterns))
        if not chosen:
            empty.append(name)
            continue
        out.extend(_split(name, chosen, "glob", limit))
        placed.update(chosen)
    groups: dict[str, _Group] = {}  # by name: tags that differ only in case or punctuation are one group
    for tool in ordered:
        if tool.id not in placed:
            group = _group_of(tool, settings.group_by)
            groups.setdefault(group.name, group).ids.append(tool.id)
    automatic = list(groups.values())
    if settings.merge_related:
        automatic = _merge_related(automatic, limit)
    automatic = _pool_small(automatic, settings.min_tools)
    taken = {toolset.name for toolset in out}
    for group in sorted(automatic, key=lambda group: (group.name, group.origin)):
        name = group.name
        while name in taken:  # a glob's toolset of the same name keeps it
            name = f"{name}-auto"
        taken.add(name)
        out.extend(_split(name, tuple(group.ids), group.origin, limit))
    return sorted(out, key=lambda item: item.name), empty


def _split(name: str, ids: tuple[str, ...], origin: str, limit: int) -> list[Toolset]:
    if len(ids) <= limit:
        return [Toolset(name, ids, origin)]
    return [Toolset(f"{name}-{index}", ids[start:start + limit], origin)
            for index, start in enumerate(range(0, len(ids), limit), start=1)]
