"""Namespaces: the groups a provider's deferred loading shows the model before it searches (OpenAI Responses
`namespace` tools), cut from the toolsets.

OpenAI's tool search shows only each namespace's name and description at the start of a request and advises
fewer than 10 functions per namespace. So every toolset (a tool in several toolsets goes with the first, by name)
is ordered by what its tools act on (an OpenAPI operation's path and method, an MCP tool's name) and cut into the
fewest groups of at most `size`, of even sizes: operations on one resource stay together and no group is a lone
leftover. A group is named after its toolset and the path segment that sets it apart from the rest of the toolset
(`github_repos_branches`), and described by its functions' summaries with shared objects said once ("List, get,
update branch protection; ..."), cut short: the model reads the description to choose what to search for, and
the search itself reads every function's own name and description.

Names are valid OpenAI tool names (`^[a-zA-Z0-9_-]{1,64}$`, written with underscores), unique and deterministic.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from compiler.fit.toolsets import Toolset
from compiler.ir import HttpBinding, Tool
from compiler.providers import names
from compiler.providers.descriptions import cut

SIZE = 9
"""Functions per namespace: OpenAI advises fewer than 10."""
DESCRIPTION_LIMIT = 110
"""Characters of a namespace's description: what the model reads for every namespace on every request."""
COMMON_SHARE = 0.5
"""A path segment in more than this share of a toolset's operations names the toolset, not one group of it."""

_SPLIT_SUFFIX = re.compile(r"-\d+$")
_SENTENCE = re.compile(r"(?<=[.!?])\s|\n")
_WORD = re.compile(r"[^a-zA-Z0-9]+")


@dataclass(frozen=True)
class Namespace:
    name: str
    description: str
    tool_ids: tuple[str, ...]


def plan_namespaces(toolsets: Sequence[Toolset], tools: Mapping[str, Tool], size: int = SIZE) -> list[Namespace]:
    """Every tool of `tools` in exactly one namespace of at most `size`, in toolset order."""
    placed: set[str] = set()
    taken: set[str] = set()
    out: list[Namespace] = []
    for toolset in toolsets:
        members = [tools[tool_id] for tool_id in toolset.tool_ids if tool_id in tools and tool_id not in placed]
        placed.update(tool.id for tool in members)
        base = toolset.name if toolset.origin == "glob" else _SPLIT_SUFFIX.sub("", toolset.name)
        common = _common_segments(members)
        groups = list(_even_groups(sorted(members, key=_resource_key), size))
        for group in groups:
            label = _label(group, common) if len(groups) > 1 else ""
            name = _unique(_namespace_name(f"{base}_{label}" if label else base), taken)
            out.append(Namespace(name, describe(group), tuple(tool.id for tool in group)))
    return out


def _resource_key(tool: Tool) -> tuple[str, ...]:
    binding = tool.binding
    if isinstance(binding, HttpBinding):
        return (*_segments(binding.path), "", binding.method, tool.id)
    return (tool.name, tool.id)


def _segments(path: str) -> list[str]:
    """The path's segments that name things (not `{parameters}`)."""
    return [part for part in path.split("/") if part and not part.startswith("{")]


def _common_segments(members: Sequence[Tool]) -> frozenset[str]:
    counts = Counter(segment for tool in members if isinstance(tool.binding, HttpBinding)
                     for segment in dict.fromkeys(_segments(tool.binding.path)))
    return frozenset(segment for segment, count in counts.items() if count > COMMON_SHARE * len(members))


def _even_groups(members: Sequence[Tool], size: int) -> Iterable[Sequence[Tool]]:
    """The fewest groups of at most `size`, their sizes differing by at most one (10 tools: 5 + 5, not 9 + 1)."""
    count = -(-len(members) // size)
    start = 0
    for index in range(count):
        end = start + len(members) // count + (1 if index < len(members) % count else 0)
        yield members[start:end]
        start = end


def _label(group: Sequence[Tool], common: frozenset[str]) -> str:
    """The path segment most of the group's operations name and the rest of the toolset does not; "" when most
    name none (operations on the toolset's own resource, MCP tools)."""
    counts: Counter[str] = Counter()
    for tool in group:
        own = [segment for segment in _segments(tool.binding.path) if segment not in common] \
            if isinstance(tool.binding, HttpBinding) else []
        counts.update(list(dict.fromkeys(own)) or [""])
    best = max(counts.values())
    return next(segment for segment in counts if counts[segment] == best)


def _namespace_name(text: str) -> str:
    return names.OPENAI(_WORD.sub("_", text).strip("_").lower() or "tools")


def _unique(name: str, taken: set[str]) -> str:
    candidate, number = name, 2
    while candidate in taken:
        suffix = f"_{number}"
        candidate = names.cap(name, names.OPENAI.max_length - len(suffix), key=name) + suffix
        number += 1
    taken.add(candidate)
    return candidate


def summary(tool: Tool) -> str:
    """One line saying what the tool does: its title (an OpenAPI summary), else its description's first sentence,
    else its name."""
    text = (tool.title or "").strip() or _SENTENCE.split(tool.description.strip(), maxsplit=1)[0].strip()
    return text.rstrip(".") or tool.name


def describe(group: Sequence[Tool], limit: int = DESCRIPTION_LIMIT) -> str:
    """The group's summaries, verbs of one object said together ("List, get, delete a webhook"), cut at `limit`."""
    objects: dict[str, list[str]] = {}
    for tool in group:
        verb, _space, rest = summary(tool).partition(" ")
        key = rest if rest else verb
        verbs = objects.setdefault(key, [])
        if rest and verb.lower() not in verbs:
            verbs.append(verb.lower())
    phrases = [f"{', '.join(verbs)} {key}" if verbs else key for key, verbs in objects.items()]
    text = "; ".join(phrases)
    return cut(text[:1].upper() + text[1:], limit)
