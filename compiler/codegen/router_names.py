"""The provider name maps baked into the generated router: provider-facing tool name → tool id + argument undo.

Read from `build.artifacts["providers"][target]["names"]`, the name map `compiler.providers` writes to
`schemas/<target>.names.json` (format 1, documented in `compiler.providers.namemap`). Per target the router keeps,
for each provider tool name, the tool id and that entry's `arguments` shape and `defs` unchanged: the generated
`providers.rewrite` applies them exactly as `namemap.arguments_to_wire` does. `strict` is not baked (the shape
already says which nulls to drop).

Without that artifact (no targets compiled) each tool's own name routes to it when no other tool shares it;
tool ids are always accepted by the generated router. Diagnostics (entries concerned are not baked):

    TC635 warning  an entry names a tool that is not in the catalog (or not routable)
    TC637 warning  a name map, or one of its entries, is not in name-map format 1
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from compiler.diagnostics import Diagnostics
from compiler.ir import Tool
from compiler.providers.namemap import NAME_MAP_FORMAT

UNKNOWN_NAME_TARGET = "TC635"
BAD_NAME_MAP = "TC637"

Entry = dict[str, Any]
Table = list[tuple[str, Entry]]


@dataclass(frozen=True)
class NameMaps:
    """The distinct tables, each baked once as `_NAMES_<i>` (in order of first use by the targets, sorted), and
    every target with the index of its table: targets whose maps are equal share one literal."""

    tables: tuple[Table, ...]
    targets: tuple[tuple[str, int], ...]


def _shared(maps: list[tuple[str, Table]]) -> NameMaps:
    tables: list[Table] = []
    targets: list[tuple[str, int]] = []
    for target, table in maps:
        if table not in tables:
            tables.append(table)
        targets.append((target, tables.index(table)))
    return NameMaps(tuple(tables), tuple(targets))


def _canonical(value: Any) -> Any:
    """JSON data with object keys sorted (lists keep their order: `anyOf` order is meaningful), so the baked literal
    does not depend on the order lowering happened to build dicts in."""
    if isinstance(value, Mapping):
        return {str(key): _canonical(value[key]) for key in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [_canonical(item) for item in value]
    return value


def _entry(raw: Any) -> Entry | None:
    """`{"tool_id", "arguments", "defs"}` for a format-1 entry, None when it is not one."""
    if not isinstance(raw, Mapping):
        return None
    tool_id = raw.get("tool")
    arguments = raw.get("arguments", {})
    defs = raw.get("defs", {})
    if not isinstance(tool_id, str) or not isinstance(arguments, Mapping) or not isinstance(defs, Mapping):
        return None
    return {"tool_id": tool_id, "arguments": _canonical(arguments), "defs": _canonical(defs)}


def _target_entries(target: str, names: Mapping[str, Any], known: set[str],
                    diagnostics: Diagnostics) -> Table:
    tools = names.get("tools")
    if names.get("format") != NAME_MAP_FORMAT or names.get("target") != target or not isinstance(tools, Mapping):
        diagnostics.warning(BAD_NAME_MAP, f"name map is not format {NAME_MAP_FORMAT} for {target!r}; not baked: "
                            "this target's tool calls route by tool id only", provider=target, source="providers")
        return []
    entries: Table = []
    for name in sorted(tools, key=str):
        entry = _entry(tools[name])
        if entry is None:
            diagnostics.warning(BAD_NAME_MAP, f"name map entry {name!r} is not a format-{NAME_MAP_FORMAT} entry; "
                                "dropped", provider=target, source="providers")
        elif entry["tool_id"] not in known:
            diagnostics.warning(UNKNOWN_NAME_TARGET, f"name map entry {name!r} names no routable tool "
                                f"({entry['tool_id']!r}); dropped", provider=target, source="providers")
        else:
            entries.append((str(name), entry))
    return entries


def name_maps(artifacts: Mapping[str, Any], tools: list[Tool], targets: tuple[str, ...],
              diagnostics: Diagnostics) -> NameMaps:
    known = {tool.id for tool in tools}
    providers = artifacts.get("providers")
    if isinstance(providers, Mapping) and providers:
        maps: list[tuple[str, Table]] = []
        for target in sorted(providers):
            names = providers[target].get("names") if isinstance(providers[target], Mapping) else None
            if isinstance(names, Mapping):
                maps.append((target, _target_entries(target, names, known, diagnostics)))
        return _shared(maps)
    counts = Counter(tool.name for tool in tools)
    fallback: Table = [(tool.name, {"tool_id": tool.id, "arguments": {}, "defs": {}})
                       for tool in sorted(tools, key=lambda t: t.name) if counts[tool.name] == 1]
    return _shared([(target, fallback) for target in sorted(targets)])
