"""The provider name maps baked into the generated router: provider-facing tool name → tool id + argument undo.

Read from `build.providers[target].names`, the name map `compiler.providers` writes to
`schemas/<target>.names.json` (format 1, documented in `compiler.providers.namemap`). Per target the router keeps,
for each provider tool name, the tool id and that entry's `arguments` shape and `defs` unchanged: the generated
`shapes.rewrite` applies them, the same function `namemap.arguments_to_wire` runs. `strict` is not baked (the shape
already says which nulls to drop).

The flat-argument endpoint of `toolc serve` takes a tool id, a served MCP name or any target's provider-facing
name; a name that means more than one tool across those (`purge.cache` is `purge_cache` to OpenAI, the MCP name
of another operation) is refused there without `?provider=`, and reported here (`ambiguous_names`):

    TC640 warning  a served name that means more than one tool (MCP names and the targets' name maps)

Without name maps (no targets compiled) each tool's own name routes to it when no other tool shares it; tool ids
are always accepted by the generated router. The maps were built in this process from the same catalog: an entry
that is not format 1 or names an unknown tool is a bug in toolc (an AssertionError, reported as TC999), never a
user-facing diagnostic.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from compiler.build import TargetOutput
from compiler.infra.serialize import compact_json
from compiler.ir import Tool
from compiler.providers.namemap import NAME_MAP_FORMAT

AMBIGUOUS_NAME = "TC640"
Entry = dict[str, Any]
Table = list[tuple[str, Entry]]


@dataclass(frozen=True)
class NameMaps:
    """The distinct tables, each baked once as `_NAMES_<i>` (in order of first use by the targets, sorted), and
    every target with the index of its table: targets whose maps are equal share one literal. `encoded`: each
    table as `_tables.json` holds it (`compact_json` of its dict: keys sorted at every level, so the order in which
    lowering happened to build an entry's dicts never shows)."""

    tables: tuple[Table, ...]
    targets: tuple[tuple[str, int], ...]
    encoded: tuple[bytes, ...]


def _shared(maps: list[tuple[str, Table]]) -> NameMaps:
    """Tables are compared by their encoding (sorted keys): equal maps built in another order are one table."""
    tables: list[Table] = []
    encoded: list[bytes] = []
    targets: list[tuple[str, int]] = []
    for target, table in maps:
        encoding = compact_json(dict(table))
        if encoding not in encoded:
            tables.append(table)
            encoded.append(encoding)
        targets.append((target, encoded.index(encoding)))
    return NameMaps(tuple(tables), tuple(targets), tuple(encoded))


def _entry(target: str, name: str, raw: Any, known: set[str]) -> Entry:
    """`{"tool_id", "arguments", "defs"}` for one format-1 entry (its values as lowering made them, not copied)."""
    # `dict`, not `Mapping`: lowering and its cache make dicts, and the ABC's check cost Microsoft Graph's 45k
    # entries a quarter of a second.
    assert isinstance(raw, dict), f"{target} name map entry {name!r} is not an object"
    tool_id, arguments, defs = raw.get("tool"), raw.get("arguments", {}), raw.get("defs", {})
    assert isinstance(tool_id, str) and isinstance(arguments, dict) and isinstance(defs, dict), (
        f"{target} name map entry {name!r} is not a format-{NAME_MAP_FORMAT} entry")
    assert tool_id in known, f"{target} name map entry {name!r} names no routable tool ({tool_id!r})"
    return {"tool_id": tool_id, "arguments": arguments, "defs": defs}


def _target_entries(output: TargetOutput, known: set[str]) -> Table:
    names = output.names
    tools = names.get("tools")
    assert names.get("format") == NAME_MAP_FORMAT and names.get("target") == output.target, (
        f"name map is not format {NAME_MAP_FORMAT} for {output.target!r}")
    assert isinstance(tools, Mapping), f"name map for {output.target!r} has no tools"
    return [(str(name), _entry(output.target, str(name), tools[name], known)) for name in sorted(tools, key=str)]


def name_maps(providers: Mapping[str, TargetOutput], tools: list[Tool], targets: tuple[str, ...]) -> NameMaps:
    known = {tool.id for tool in tools}
    if providers:
        return _shared([(target, _target_entries(providers[target], known)) for target in sorted(providers)])
    counts = Counter(tool.name for tool in tools)
    fallback: Table = [(tool.name, {"tool_id": tool.id, "arguments": {}, "defs": {}})
                       for tool in sorted(tools, key=lambda t: t.name) if counts[tool.name] == 1]
    return _shared([(target, fallback) for target in sorted(targets)])


def ambiguous_names(served: Mapping[str, str], maps: NameMaps) -> dict[str, list[str]]:
    """Names that mean more than one tool across the served MCP names (`served`: tool id → MCP name) and every
    target's name map, each with its tool ids, sorted."""
    meanings: dict[str, set[str]] = {}
    for tool_id, name in served.items():
        meanings.setdefault(name, set()).add(tool_id)
    for table in maps.tables:
        for name, entry in table:
            meanings.setdefault(name, set()).add(entry["tool_id"])
    return {name: sorted(ids) for name, ids in sorted(meanings.items()) if len(ids) > 1}
