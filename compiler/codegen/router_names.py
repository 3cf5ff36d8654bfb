"""The provider name maps baked into the generated router: provider-facing tool name → tool id (+ argument renames).

Read from `build.artifacts["providers"][target]["names"]` (written by `compiler.providers`). Accepted entry
shapes, so the router does not break when the providers stage refines its format:

    "<provider name>": "<tool id>"
    "<provider name>": {"tool_id" | "tool" | "id": "<tool id>", "arguments" | "args": {"<provider arg>": "<tool arg>"}}

Without that artifact (no targets compiled) each tool's own name routes to it when no other tool shares it;
tool ids are always accepted by the generated router. Entries that name an unknown tool are dropped (TC635).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from compiler.diagnostics import Diagnostics
from compiler.ir import Tool

UNKNOWN_NAME_TARGET = "TC635"

Entry = dict[str, Any]


def _entry(raw: Any) -> Entry | None:
    if isinstance(raw, str):
        return {"tool_id": raw, "arguments": {}}
    if not isinstance(raw, Mapping):
        return None
    tool_id = raw.get("tool_id") or raw.get("tool") or raw.get("id")
    arguments = raw.get("arguments") or raw.get("args") or {}
    if not isinstance(tool_id, str) or not isinstance(arguments, Mapping):
        return None
    renames = {str(k): str(v) for k, v in sorted(arguments.items()) if isinstance(v, str) and k != v}
    return {"tool_id": tool_id, "arguments": renames}


def name_maps(artifacts: Mapping[str, Any], tools: list[Tool], targets: tuple[str, ...],
              diagnostics: Diagnostics) -> list[tuple[str, list[tuple[str, Entry]]]]:
    known = {tool.id for tool in tools}
    providers = artifacts.get("providers")
    maps: list[tuple[str, list[tuple[str, Entry]]]] = []
    if isinstance(providers, Mapping) and providers:
        for target in sorted(providers):
            names = providers[target].get("names") if isinstance(providers[target], Mapping) else None
            if not isinstance(names, Mapping):
                continue
            entries: list[tuple[str, Entry]] = []
            for name in sorted(names):
                entry = _entry(names[name])
                if entry is None or entry["tool_id"] not in known:
                    diagnostics.warning(UNKNOWN_NAME_TARGET, f"name map entry {name!r} names no routable tool; "
                                        "dropped", provider=target, source="providers")
                    continue
                entries.append((str(name), entry))
            maps.append((target, entries))
        return maps
    counts = Counter(tool.name for tool in tools)
    fallback = [(tool.name, {"tool_id": tool.id, "arguments": {}}) for tool in sorted(tools, key=lambda t: t.name)
                if counts[tool.name] == 1]
    return [(target, fallback) for target in sorted(targets)]
