"""Per tool and target: the lowered definition of the last compile, reused when nothing it came from changed.

Lowering is most of a compile's work (Microsoft Graph: 11,422 tools, 4 targets). A tool's lowering depends on
the tool (every field), the shared definitions it reaches, its provider name, whether strict is wanted, the
project's settings and toolc itself; its key hashes all of them (the tool and what it reaches through
`drift.lock.ToolHasher`, the Merkle hash the lock uses; toolc through the store's envelope). A hit gives back the
definition, its name-map entry and the diagnostics lowering reported, the resolver's included; a miss lowers and
records. One file per target (`.toolc-cache/<output>.lowered-<target>.json`), holding only this compile's tools,
so it never grows past one compile's worth.

The strict budget (`lower._apply_budget`) runs after, over hits and misses alike: it depends on every tool.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler.config import Config
from compiler.diagnostics import Diagnostic, Diagnostics
from compiler.incremental import store
from compiler.ir import JsonObject, Tool
from compiler.providers.dialect import Lowered
from compiler.providers.spans import Measure
from compiler.serialize import compact_json


def kind(target: str) -> str:
    return f"lowered-{target}"


@dataclass(frozen=True)
class Outcome:
    """What `lower.lower_tool` returns for one tool, plus what the resolver reported meanwhile."""

    lowered: Lowered | None
    entry: JsonObject | None
    diagnostics: list[Diagnostic]
    resolver_diagnostics: list[Diagnostic]


class LoweringCache:
    """One target's cache for one compile: `get` what the last compile lowered, `put` what this one did, `save`."""

    def __init__(self, out_dir: Path, target: str, config: Config, ir_hashes: Mapping[str, str],
                 diagnostics: Diagnostics) -> None:
        """`ir_hashes`: tool id → `ToolHasher.ir_hash` (the tool and every shared definition it reaches)."""
        self._out_dir, self._target, self._ir_hashes = out_dir, target, ir_hashes
        settings = {"target": target, "config": config.model_dump(mode="json", exclude={"root"})}
        self._settings = hashlib.sha256(compact_json(settings)).hexdigest()
        entry = store.load(out_dir, kind(target), diagnostics, _well_formed)
        fits = entry is not None and entry.key == self._settings
        self._previous: Mapping[str, Any] = entry.payload if entry is not None and fits else {}
        self._now: dict[str, Any] = {}
        self._keys: dict[str, str] = {}
        """Tool id → its key in this compile."""
        self._given: dict[str, Lowered] = {}
        """Tool id → the lowering this cache gave back or was given: a measure belongs to that one only (the
        strict budget may replace it with a loose one after)."""

    def _key(self, tool: Tool, name: str, strict: bool) -> str:
        return hashlib.sha256(f"{self._ir_hashes[tool.id]}\0{name}\0{strict}".encode()).hexdigest()

    def get(self, tool: Tool, name: str, strict: bool) -> Outcome | None:
        """`strict`: whether strict was asked for (the strict budget asks again for a loose one)."""
        key = self._keys[tool.id] = self._key(tool, name, strict)
        item = self._previous.get(key)
        if item is None:
            return None
        try:
            outcome = _decode(item, tool)
        except (KeyError, TypeError, ValueError):
            return None  # a damaged entry is lowered again (the file as a whole was ours)
        self._now[key] = item
        if outcome.lowered is not None:
            self._given[tool.id] = outcome.lowered
        return outcome

    def put(self, tool: Tool, name: str, strict: bool, outcome: Outcome) -> None:
        key = self._keys[tool.id] = self._key(tool, name, strict)
        self._now[key] = _encode(outcome)
        if outcome.lowered is not None:
            self._given[tool.id] = outcome.lowered

    def measures(self, final: Iterable[Lowered]) -> dict[str, Measure]:
        """Tool id → the measure recorded with a definition this compile found in the cache and still sends."""
        found: dict[str, Measure] = {}
        for lowered in final:
            if self._given.get(lowered.tool.id) is not lowered:
                continue
            measure = self._now[self._keys[lowered.tool.id]].get("measure")
            if isinstance(measure, list) and len(measure) == 3:
                found[lowered.tool.id] = Measure(str(measure[0]), int(measure[1]), int(measure[2]))
        return found

    def measured(self, final: Iterable[Lowered], measures: Mapping[str, Measure]) -> None:
        """Record what `write_array` computed, for the next compile (for the definitions this cache holds)."""
        for lowered in final:
            if self._given.get(lowered.tool.id) is lowered:
                self._now[self._keys[lowered.tool.id]]["measure"] = list(measures[lowered.tool.id])

    def save(self) -> None:
        store.save(self._out_dir, kind(self._target), store.Entry(self._settings, self._now))


def _encode(outcome: Outcome) -> JsonObject:
    lowered = outcome.lowered
    return {
        "lowered": None if lowered is None else {
            "name": lowered.name, "definition": lowered.definition, "parameters": lowered.parameters,
            "strict": lowered.strict, "problems": [list(problem) for problem in lowered.problems],
            "renamed_keys": lowered.renamed_keys, "arg_shape": lowered.arg_shape, "arg_defs": lowered.arg_defs},
        "entry": outcome.entry,
        "diagnostics": [d.to_json() for d in outcome.diagnostics],
        "resolver": [d.to_json() for d in outcome.resolver_diagnostics],
    }


def _decode(item: Any, tool: Tool) -> Outcome:
    diagnostics = [Diagnostic.from_json(d) for d in item["diagnostics"]]
    resolver = [Diagnostic.from_json(d) for d in item["resolver"]]
    data = item["lowered"]
    if data is None:
        return Outcome(None, None, diagnostics, resolver)
    if not isinstance(data, dict) or not isinstance(item["entry"], dict):
        raise TypeError("a lowered entry is an object")
    lowered = Lowered(tool=tool, name=data["name"], definition=data["definition"], parameters=data["parameters"],
                      strict=bool(data["strict"]), losses=diagnostics,
                      problems=[(str(at), str(why)) for at, why in data["problems"]],
                      renamed_keys=data["renamed_keys"], arg_shape=data["arg_shape"], arg_defs=data["arg_defs"])
    return Outcome(lowered, item["entry"], diagnostics, resolver)


def _well_formed(payload: Any) -> bool:
    return isinstance(payload, dict) and all(isinstance(item, dict) for item in payload.values())
