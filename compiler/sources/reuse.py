"""The tools the last compile built, kept beside the output folder (`.toolc-cache/<out>.tools.json`) so that a
recompile builds only the operations that changed (`sources.openapi.reuse` keys them and says when a source's tools
may be reused at all).

Per source: the key of everything an operation's tool reads besides the operation (`context`), and per operation
key the tool as `serialize.tool_to_json` writes it (key order as built: the later stages see the same dicts a build
makes) with its IR hash when the compile made one. A tool taken from here is handed on with its catalog entry
(`catalog.json` encodes it without walking the tool again) and its IR hash (the providers stage does not hash it
again), as `Build.known_tools`: each stands only for that very tool object, so a tool the reader replaced
afterwards (risk settings) is made and hashed as a new one. Only sources whose every operation built its tool and nothing else are kept (see there): a tool
from here is then the tool a compile from nothing builds, whatever the other operations are.

The blob's digest (in its envelope) catches damage, not a hand that writes both: like every cache of toolc's, a
file consistent with itself is trusted as toolc wrote it, but it is read only as a regular file of its own
(`store.read_regular`, and only at the size recorded with it), and what does not decode is built again.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from compiler.build import KnownTool
from compiler.incremental import store
from compiler.infra.diagnostics import Diagnostics
from compiler.infra.serialize import ToolReader, tool_to_json
from compiler.ir import Tool

KIND = "tools"
PAYLOAD_KEY = "tools by operation"
"""The envelope's key: every source carries its own keys inside the blob."""


@dataclass(frozen=True)
class PriorSource:
    context: str
    tools: Mapping[str, Any]
    """Operation key → `{"tool": tool_to_json(...), "ir": IR hash}` (`ir` absent when no target hashed it), an HTTP
    binding's `arguments` given as places in `arguments`."""
    arguments: list[Any]
    """The source's distinct arguments, each once (Microsoft Graph: 2,705 for 75,641 uses; 40% of its tools' bytes
    were their arguments written out)."""


@dataclass
class _Made:
    context: str
    tools: dict[str, Tool]
    """Operation key → the tool its operation gave (built, or decoded from the last compile)."""


@dataclass
class ToolReuse:
    """What one compile reads from the tools cache and what it leaves for the next."""

    prior: Mapping[str, PriorSource] = field(default_factory=dict)
    made: dict[str, _Made] = field(default_factory=dict)
    known: dict[str, KnownTool] = field(default_factory=dict)
    """Tool id → a tool decoded from the cache, with its catalog entry and IR hash (`Build.known_tools`)."""
    reader: ToolReader = field(default_factory=ToolReader)
    decoded: dict[str, Tool] = field(default_factory=dict)
    """Tool id → the tool decoded from the cache."""

    def prior_for(self, source_id: str, context: str) -> PriorSource | None:
        """The last compile's tools of `source_id`, if they were read in the same context."""
        prior = self.prior.get(source_id)
        return prior if prior is not None and prior.context == context else None

    def decode(self, prior: PriorSource, key: str) -> Tool | None:
        """The tool of the operation `key`, or None when its entry is not one (the operation is built instead)."""
        try:
            entry = prior.tools[key]
            data = entry["tool"]
            binding = data["binding"]
            if binding["kind"] == "http":
                data = {**data, "binding": {**binding, "arguments": [prior.arguments[_place(at)]
                                                                     for at in binding["arguments"]]}}
            tool = self.reader.tool(data)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError):
            return None
        ir = entry.get("ir")
        self.known[tool.id] = KnownTool(tool, data, ir if isinstance(ir, str) else None)
        self.decoded[tool.id] = tool
        return tool

    def keep(self, source_id: str, context: str, tools: dict[str, Tool]) -> None:
        """Record a clean source's tools by operation key. A second source of the same id is left out, as
        `pipeline.build_catalog` leaves it."""
        if source_id not in self.made:
            self.made[source_id] = _Made(context, tools)

    def save(self, out_dir: Path, catalog_tools: Mapping[str, Tool], ir_hashes: Mapping[str, str]) -> None:
        """Beside the output folder: each kept source's tools, with the catalog entry and IR hash of those the
        catalog holds as built (`catalog_tools`: tool id → the catalog's tool)."""
        if not self.made:
            store.forget(out_dir, KIND)
            return
        if not self._worth_saving(ir_hashes):
            return
        sources: dict[str, Any] = {}
        for source_id, made in self.made.items():
            arguments = _Arguments()
            tools = {key: arguments.placed(self._entry(tool, catalog_tools, ir_hashes)) for key, tool in made.tools.items()}
            sources[source_id] = {"context": made.context, "arguments": arguments.distinct, "tools": tools}
        encoded = orjson.dumps(sources)  # key order kept: a decoded tool's dicts are in the order it was built
        blob = store.cache_path(out_dir, KIND, suffix=f".{os.getpid()}.blob-partial")
        try:
            blob.parent.mkdir(parents=True, exist_ok=True)
            blob.write_bytes(encoded)
            entry = store.Entry(PAYLOAD_KEY, {"bytes": len(encoded)}, hashlib.sha256(encoded).hexdigest())
            store.save_with_blob(out_dir, KIND, entry, blob)
        except OSError:  # best effort, as every cache: the next compile builds every tool
            pass
        finally:
            blob.unlink(missing_ok=True)

    def _worth_saving(self, ir_hashes: Mapping[str, str]) -> bool:
        """Writing the cache costs more than building a few tools again (Microsoft Graph: ~0.25 s of CPU against
        ~0.1 ms an operation), so it is written when its sources changed, or when more than a 16th of their tools
        were built here or lack an IR hash this compile made; not after one changed description. The file left
        then still holds every other tool, each under its own key."""
        if set(self.made) != set(self.prior):
            return True
        tools = [tool for made in self.made.values() for tool in made.tools.values()]
        return sum(1 for tool in tools if not self._cached(tool, ir_hashes)) * 16 > len(tools)

    def _cached(self, tool: Tool, ir_hashes: Mapping[str, str]) -> bool:
        known = self.known.get(tool.id)
        return (self.decoded.get(tool.id) is tool and known is not None and known.tool is tool
                and (known.ir is not None or tool.id not in ir_hashes))

    def _entry(self, tool: Tool, catalog_tools: Mapping[str, Tool], ir_hashes: Mapping[str, str]) -> dict[str, Any]:
        as_built = catalog_tools.get(tool.id) is tool
        known = self.known.get(tool.id)
        entry: dict[str, Any] = {"tool": known.entry if known is not None and known.tool is tool else tool_to_json(tool)}
        ir = ir_hashes.get(tool.id) if as_built else None
        if ir is not None:
            entry["ir"] = ir
        return entry


class _Arguments:
    """A source's distinct arguments, for entries that name them by place."""

    def __init__(self) -> None:
        self.distinct: list[Any] = []
        self._places: dict[tuple[Any, ...], int] = {}
        self._by_dict: dict[int, tuple[dict[str, Any], int]] = {}

    def placed(self, entry: dict[str, Any]) -> dict[str, Any]:
        data = entry["tool"]
        binding = data["binding"]
        if binding["kind"] != "http":
            return entry
        places = [self._place(argument) for argument in binding["arguments"]]
        return {**entry, "tool": {**data, "binding": {**binding, "arguments": places}}}

    def _place(self, argument: dict[str, Any]) -> int:
        """By the dict first (entries share them: `serialize.ToolWriter`, the cache's own), then by content."""
        seen = self._by_dict.get(id(argument))
        if seen is not None:
            return seen[1]
        key = tuple(argument.items())
        place = self._places.get(key)
        if place is None:
            place = self._places[key] = len(self.distinct)
            self.distinct.append(argument)
        self._by_dict[id(argument)] = (argument, place)
        return place


def load(out_dir: Path, diagnostics: Diagnostics) -> ToolReuse:
    """The tools cache beside `out_dir` (an empty one when there is none or it is not ours: then a TC140 note).
    Its blob is read whole when it has the size its envelope records, and checked against the sha256 there
    (Microsoft Graph's: 30 MB, 0.03 s): a cache altered since it was written is never decoded."""
    entry = store.load(out_dir, KIND, diagnostics, valid=_sized)
    if entry is None:
        return ToolReuse()
    path = store.cache_path(out_dir, KIND, suffix=".blob")
    try:
        raw = store.read_regular(path, entry.payload["bytes"])
    except OSError as exc:
        store.ignored(diagnostics, path, f"unreadable ({exc.strerror or exc})")
        return ToolReuse()
    if entry.key != PAYLOAD_KEY or hashlib.sha256(raw).hexdigest() != entry.blob:
        store.ignored(diagnostics, path, "its tools do not match the digest recorded with them (altered)")
        return ToolReuse()
    try:
        sources = store.decode(raw)  # paused, then frozen: the decoded tools become the catalog's
    except orjson.JSONDecodeError:  # the digest matched: a cache written as it is, not altered since
        sources = None
    if not _valid(sources):
        store.ignored(diagnostics, path, "its content is malformed (corrupted)")
        return ToolReuse()
    return ToolReuse(prior={source_id: PriorSource(source["context"], source["tools"], source["arguments"])
                            for source_id, source in sources.items()})


def _place(at: Any) -> int:
    """An argument's place as the cache gives it: a negative one would index from the end (another argument)."""
    if type(at) is not int or at < 0:
        raise IndexError(at)
    return at


def _sized(payload: Any) -> bool:
    """The envelope's payload: the blob's size, checked before the blob is read."""
    return isinstance(payload, dict) and type(payload.get("bytes")) is int


def _valid(sources: Any) -> bool:
    return isinstance(sources, dict) and all(
        isinstance(source, dict) and isinstance(source.get("context"), str) and isinstance(source.get("tools"), dict)
        and isinstance(source.get("arguments"), list) for source in sources.values())
