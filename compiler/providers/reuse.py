"""Per tool and target: the lowered definition of the last compile, reused when nothing it came from changed.

Lowering is most of a compile's work (Microsoft Graph: 11,422 tools, 4 targets). A tool's lowering depends on
the tool (every field), the shared definitions it reaches, its provider name, whether strict is asked for, the
project's settings and toolc itself; its key hashes all of them (the tool and what it reaches through
`incremental.ir_hash.ToolHasher`, the Merkle hash the lock uses; toolc through the store's envelope).

Per target, an index (`.toolc-cache/<output>.lowered-<target>.json`: key → name-map entry, the diagnostics
lowering reported, the resolver's included, and where the definition sits with the sha256 of its bytes) and the
target's tools file as the last compile wrote it (`.blob`, a hard link to it). A compile that changed nothing
saves neither again. A hit is never decoded, and the tools file is never read whole, only a window at a time as
the definitions are reached in file order, each checked against its sha256 (`CachedSpan`), with the digest and
tokens measured when it was placed. What the compile does with them depends on where its tools file goes:
- into the output (its tools fit one request): `spans.write_array` copies each reused definition's bytes into the
  new file; or, when every definition is given back at the place it had, the file is the last one byte for byte
  and is used as it is once it hashes to the sha256 recorded with it (`unchanged_file`).
- nowhere but the cache (they do not: the fit stage cuts toolset files from it by spans): the last file is
  linked in and the definitions lowered again are appended to it (`grown_file`), so that the file is a heap of
  definitions at their spans rather than an array, written afresh only once most of it is dead (`GROWN_LIMIT`).
  It is never hashed whole (nothing wants its sha256).
Microsoft Graph's four tools files are 706 MB; read whole and hashed, they lifted a recompile's peak by as much. Bytes that do not match
(the file was altered since the last compile) are a `DamagedCache`: the providers stage notes it (TC140) and
lowers every tool again without the cache. The index also records the tools file's stamp as it was saved
(`incremental.stamps`): a file that still has it was not written since, so its spans' hashes hold unread (a
Graph recompile no longer reads 433 MB of grown files to check them, nor hashes a file used as it is).

A grown tools file's index changes by a few records per recompile: they are saved as a delta beside it
(`<output>.lowered-<target>-delta.json`: the records put and the keys dropped since the index, named by the
index file's stamp), and the index is written whole again only once the delta holds over a `DELTA_LIMIT`th of
its records (Microsoft Graph: three 17 MB indexes encoded and replaced on every recompile for a handful of
records). A delta that does not name the index as it is, or is not ours, is ignored (TC140 for the latter): the
index's records still hold for their keys, since a grown file only ever has definitions appended. The index holds only this compile's tools, so it never grows past
one compile's worth.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from compiler.build import Layout, Span
from compiler.config import Config
from compiler.incremental import stamps, store
from compiler.incremental.project import stream_digest
from compiler.infra.diagnostics import Diagnostic, Diagnostics
from compiler.infra.serialize import compact_json
from compiler.ir import JsonObject, Tool
from compiler.providers.dialect import Lowered
from compiler.providers.registry import keeps_strict_parameters
from compiler.providers.spans import Measure, Placed, frame, place


def kind(target: str) -> str:
    return f"lowered-{target}"


def delta_kind(target: str) -> str:
    return f"lowered-{target}-delta"


DELTA_LIMIT = 16
"""The index is written whole again once its delta would hold more than a 16th of its records."""


class DamagedCache(ValueError):
    """A reused definition's bytes in the last compile's tools file are not those its index recorded."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path}: a reused definition's bytes do not match their hash")
        self.path = path


GROWN_LIMIT = 2
"""A tools file that grows (`grown_file`) is written afresh, compact, once it would hold more than twice the bytes
of its live definitions (each recompile appends the few it lowered again)."""
WINDOW = 1 << 20
"""Bytes of the last tools file read at once: reused definitions are asked for in file order (tool-id order, as
it was written), so one read serves the next few dozen (Microsoft Graph: 45,000 definitions, ~2,000 reads)."""


class _Blob:
    """The last compile's tools file, read one window at a time (never whole)."""

    def __init__(self, path: Path, recorded_stamp: str) -> None:
        """`recorded_stamp`: the file's stamp as its index was saved (`incremental.stamps`; empty: none)."""
        self.path = path
        self._fd = store.open_regular(path)  # never through a symlink: `grown_file` appends to it
        found = os.fstat(self._fd)
        self.size = found.st_size
        self.as_recorded = bool(recorded_stamp) and stamps.of(found) == recorded_stamp
        """Not written since its index was saved: the hashes the index keeps of its bytes hold unread."""
        self._window, self._window_at = memoryview(b""), 0

    def read(self, offset: int, length: int, sha256: str) -> memoryview:
        """The bytes at `offset`, checked against `sha256` unless the file is as recorded (`DamagedCache`
        otherwise)."""
        content = self.bytes_at(offset, length)
        if len(content) != length or (not self.as_recorded and hashlib.sha256(content).hexdigest() != sha256):
            raise DamagedCache(self.path)
        return content

    def alone(self) -> bool:
        """Whether no other name links to the file (the output folder's, or another compile's spool)."""
        return os.fstat(self._fd).st_nlink == 1

    def same_file(self, path: Path) -> bool:
        found, own = os.stat(path), os.fstat(self._fd)
        return (found.st_dev, found.st_ino) == (own.st_dev, own.st_ino)

    def bytes_at(self, offset: int, length: int) -> memoryview:
        """The bytes at `offset`, unchecked (shorter past the end of the file)."""
        at = offset - self._window_at
        if at < 0 or at + length > len(self._window):
            self._window, self._window_at, at = memoryview(os.pread(self._fd, max(length, WINDOW), offset)), offset, 0
        return self._window[at:at + length]

    def close(self) -> None:
        os.close(self._fd)


class CachedSpan(NamedTuple):
    """Where a reused definition sits in the last compile's tools file, and what it measured."""

    blob: _Blob
    offset: int
    length: int
    measure: Measure

    def placed(self) -> Placed:
        """Its bytes, read now and checked against the hash recorded with them (`DamagedCache` otherwise)."""
        return Placed(self.blob.read(self.offset, self.length, self.measure.placed_sha256), self.measure)


class Outcome(NamedTuple):
    """What `lower.lower_tool` returns for one tool, plus what the resolver reported meanwhile."""

    lowered: Lowered | None
    entry: JsonObject | None
    diagnostics: list[Diagnostic]
    resolver_diagnostics: list[Diagnostic]


class CachedLowered(Lowered):
    """A lowering the cache gave back. Its definition is the bytes the last compile wrote (`span`), read and
    decoded only when something reads `definition` (nothing does on the way to the tools file); or, for a strict
    lowering the strict budget replaced last time (never written), the definition kept in the index."""

    def __init__(self, tool: Tool, span: CachedSpan | None, item: Mapping[str, Any], losses: list[Diagnostic]) -> None:
        self.span = span
        super().__init__(tool=tool, name=item["name"], definition=item.get("definition", {}),
                         parameters=item.get("parameters"), strict=bool(item["strict"]), losses=losses,
                         problems=[(str(at), str(why)) for at, why in item["problems"]],
                         renamed_keys=item["renamed_keys"], arg_shape=item["arg_shape"], arg_defs=item["arg_defs"])

    @property
    def definition(self) -> JsonObject:
        if self.span is None:
            return self._kept
        decoded: JsonObject = orjson.loads(self.span.placed().content)
        return decoded

    @definition.setter
    def definition(self, value: JsonObject) -> None:
        """Set by the dataclass's `__init__`: the definition kept in the index (empty when the bytes are it)."""
        self._kept = value


class PriorLowerings:
    """One target's cache for one compile: `get` what the last compile lowered, `put` what this one did, then
    `save` beside the tools file this compile wrote."""

    def __init__(self, out_dir: Path, target: str, config: Config, ir_hashes: Mapping[str, str],
                 diagnostics: Diagnostics, *, read: bool = True) -> None:
        """`ir_hashes`: tool id → `ToolHasher.ir_hash` (the tool and every shared definition it reaches).
        Without `read`, the last compile's cache is not read (only this compile's saved)."""
        self._out_dir, self._target, self._ir_hashes = out_dir, target, ir_hashes
        self._keeps_parameters = keeps_strict_parameters(target)
        """Only a strict budget reads a lowering's parameters: a target without one keeps none (Microsoft Graph:
        9 MB of each OpenAI target's 25 MB index, decoded on every recompile for nothing)."""
        settings = {"target": target, "config": config.model_dump(mode="json", exclude={"root"})}
        self._settings = hashlib.sha256(compact_json(settings)).hexdigest()
        found = store.load(out_dir, kind(target), diagnostics, _well_formed) if read else None
        self._blob_path = store.cache_path(out_dir, kind(target), suffix=".blob")
        self._blob: _Blob | None = None
        self._base: Mapping[str, Any] | None = None
        """The index as its file holds it (a delta is saved against it)."""
        self._base_own = self._previous_blob = self._previous_stamp = ""
        self._trusted = self._base_sealed = False
        self._previous: Mapping[str, Any] = {}
        if found is not None and found.key == self._settings:
            delta = _delta(out_dir, target, found, self._settings, diagnostics)
            last = delta or found  # the entry holding the tools file's latest stamp and sha256
            trusted = found.sealed and last.sealed
            self._blob = _open_blob(self._blob_path, last.stamp if trusted else "", diagnostics)
            if self._blob is not None:
                self._trusted, self._base_sealed = trusted, found.sealed
                self._base, self._base_own = found.payload, found.own
                self._previous = _merged(found.payload, delta)
                self._previous_blob, self._previous_stamp = last.blob, last.stamp
        self._now: dict[str, Mapping[str, Any]] = {}
        """Key → this compile's record, without where its definition sits (`save` adds it): a hit's is the last
        compile's record itself, never copied (Microsoft Graph: 45,000 of them, on every recompile)."""
        self._in_place: Path | None = None
        """Where `grown_file` linked the cache's tools file for this compile."""
        self._keys: dict[str, str] = {}
        """Tool id → its key in this compile (the last one asked for: the strict budget asks again, loose)."""
        self._given: dict[str, Lowered] = {}
        """Tool id → the lowering this cache gave back or was given: only that one's bytes are recorded."""
        self._made: dict[str, Lowered] = {}
        """Key → every lowering given back or made (a tool may have two: strict, then loose for the budget)."""

    def _key(self, tool: Tool, name: str, strict: bool) -> str:
        return hashlib.sha256(f"{self._ir_hashes[tool.id]}\0{name}\0{strict}".encode()).hexdigest()

    def get(self, tool: Tool, name: str, strict: bool) -> Outcome | None:
        """`strict`: whether strict was asked for."""
        key = self._keys[tool.id] = self._key(tool, name, strict)
        item = self._previous.get(key)
        if item is None:
            return None
        try:
            outcome = self._decode(item, tool)
        except (KeyError, TypeError, ValueError):
            return None  # a damaged entry is lowered again (the file as a whole was ours)
        self._now[key] = item
        if outcome.lowered is not None:
            self._given[tool.id] = self._made[key] = outcome.lowered
        return outcome

    def put(self, tool: Tool, name: str, strict: bool, outcome: Outcome) -> None:
        key = self._keys[tool.id] = self._key(tool, name, strict)
        self._now[key] = _encode(outcome, self._keeps_parameters)
        if outcome.lowered is not None:
            self._given[tool.id] = self._made[key] = outcome.lowered

    def reused(self, final: Iterable[Lowered]) -> dict[str, CachedSpan]:
        """Tool id → where each definition this cache gave back that is still sent sits in the last tools file."""
        return {lowered.tool.id: lowered.span for lowered in final
                if isinstance(lowered, CachedLowered) and lowered.span is not None
                and self._given.get(lowered.tool.id) is lowered}

    def unchanged_file(self, final: Sequence[Lowered]) -> tuple[Path, dict[str, Measure], Layout] | None:
        """The last compile's tools file, its definitions' measures and its layout, when this compile's would be it
        byte for byte: every definition of `final` given back by this cache, each at the offset it had and nothing
        else in the file but the frame; and the file still hashes as recorded. None otherwise (then it is written)."""
        reused = self.reused(final)
        if self._blob is None or not final or len(reused) != len(final) or not self._previous_blob:
            return None
        shape = frame(self._target)
        offset = len(shape.head)
        spans: dict[str, Span] = {}
        for item in final:
            span = reused[item.tool.id]
            if span.offset != offset:
                return None
            spans[item.tool.id] = Span(offset, span.length, span.measure.tokens, span.measure.inner)
            offset += span.length + len(shape.sep)
        if offset - len(shape.sep) + len(shape.tail) != self._blob.size:
            return None
        if not self._blob.as_recorded and stream_digest(self._blob.path) != self._previous_blob:
            return None  # altered since: written from the definitions, whose ranges are checked one by one
        measures = {tool_id: reused[tool_id].measure for tool_id in spans}
        return self._blob.path, measures, Layout(self._target, spans, self._previous_blob)

    def grown_file(self, final: Sequence[Lowered], reused: Mapping[str, CachedSpan], known: Mapping[str, Placed],
                   fresh_bytes: int, link: Path) -> tuple[Path, dict[str, Measure], Layout] | None:
        """For a tools file that is not in the output (its tools do not fit one request): the last compile's,
        linked at `link`, with the definitions this cache did not give back appended, and each it did checked
        against its sha256 (`DamagedCache` otherwise). Such a file is then a heap of definitions, each at its
        span, not an array: the fit stage and the next compile read it by spans only. Microsoft Graph's three
        (433 MB) are no longer copied on a recompile to change one definition. `known`: the definitions' bytes
        that are already placed (the workers'; the others are placed here); `reused`: `reused(final)`, made once
        by the caller; `fresh_bytes`: how many bytes the
        definitions not given back take, as far as known without reading them. None when the last file cannot
        grow (none, linked elsewhere or on another file system than `link`, or past `GROWN_LIMIT`): then it is
        written from the definitions."""
        if self._blob is None or not final or not self._blob.alone():
            return None
        live = sum(span.length for span in reused.values()) + fresh_bytes
        if self._blob.size + fresh_bytes > GROWN_LIMIT * live:
            return None
        if not self._blob.as_recorded:  # else its spans are as their hashes say, unread
            for span in sorted(reused.values(), key=lambda span: span.offset):  # in file order: one window serves many
                span.placed()
        try:
            link.unlink(missing_ok=True)
            os.link(self._blob.path, link, follow_symlinks=False)
        except OSError:
            return None  # another file system: written
        if not self._blob.same_file(link):  # replaced since it was opened (by another compile)
            link.unlink()
            return None
        fresh = [item for item in final if item.tool.id not in reused]
        placed = _append(link, fresh, known, self._target)
        measures = {tool_id: span.measure for tool_id, span in reused.items()}
        where = {tool_id: (span.offset, span.length) for tool_id, span in reused.items()}
        for tool_id, (offset, length, measure) in placed.items():
            measures[tool_id], where[tool_id] = measure, (offset, length)
        spans = {}
        for item in final:  # in the array's order, whatever the file's
            tool_id = item.tool.id
            spans[tool_id] = Span(*where[tool_id], measures[tool_id].tokens, measures[tool_id].inner)
        self._in_place = link
        return link, {item.tool.id: measures[item.tool.id] for item in final}, Layout(self._target, spans, "")

    def close(self) -> None:
        """Close the last compile's tools file (the definitions it gave back can no longer be read)."""
        if self._blob is not None:
            self._blob.close()
            self._blob = None

    def save(self, final: Iterable[Lowered], tools_file: Path, layout: Layout, measures: Mapping[str, Measure]) -> None:
        """Record where each definition sits in `tools_file` (this compile's, linked in) and what it measured
        (`measures`: by tool id, as `write_array` placed it). A lowering that is not sent (the strict budget
        replaced it) keeps its definition in the index instead."""
        sent = set()
        at: dict[str, list[Any]] = {}
        for lowered in final:
            tool_id = lowered.tool.id
            if self._given.get(tool_id) is lowered:
                sent.add(id(lowered))
                span = layout.spans[tool_id]
                at[self._keys[tool_id]] = [span.offset, span.length, *measures[tool_id]]
        kept = {key: lowered.definition for key, lowered in self._made.items() if id(lowered) not in sent}
        payload = {key: _record(item, at.get(key), kept.get(key)) for key, item in self._now.items()}
        stamp = _settled_stamp(tools_file)
        entry = store.Entry(self._settings, payload, layout.sha256, stamp)
        if tools_file not in (self._blob_path, self._in_place):
            store.save_with_blob(self._out_dir, kind(self._target), entry, tools_file)
            store.forget(self._out_dir, delta_kind(self._target))
        elif payload != self._previous or stamp != self._previous_stamp or not self._trusted:
            # the cache's tools file, as it is or grown (an index that lost its seal is saved again, sealed)
            delta = self._delta_of(payload)
            if delta is None:
                store.save(self._out_dir, kind(self._target), entry)
                store.forget(self._out_dir, delta_kind(self._target))
            else:
                store.save(self._out_dir, delta_kind(self._target),
                           store.Entry(_delta_key(self._settings, self._base_own), delta, layout.sha256, stamp))

    def _delta_of(self, payload: Mapping[str, Any]) -> dict[str, Any] | None:
        """`payload` as the records put and the keys dropped since the index file (a hit's record is the index's
        own object, `_record`); None when there is no index to save against or the delta would be too big."""
        if self._base is None or not self._base_sealed:  # a delta on an unsealed index would never be trusted
            return None
        base = self._base
        put = {key: item for key, item in payload.items() if base.get(key) is not item}
        drop = [key for key in base if key not in payload]
        if (len(put) + len(drop)) * DELTA_LIMIT > len(payload):
            return None
        return {"put": put, "drop": drop}

    def _decode(self, item: Any, tool: Tool) -> Outcome:
        if "entry" not in item or "at" not in item:  # both read back by `_record` when saving
            raise KeyError("a record without its entry or its place")
        diagnostics = [Diagnostic.from_row(d) for d in item["diagnostics"]]
        resolver = [Diagnostic.from_row(d) for d in item["resolver"]]
        if item["lowered"] is None:
            return Outcome(None, None, diagnostics, resolver)
        if not isinstance(item["entry"], dict) or not isinstance(item["lowered"], dict):
            raise TypeError("a lowering and its name-map entry are objects")
        span = None
        if item["at"] is not None or "definition" not in item["lowered"]:
            offset, length, digest, tokens, inner, sha256 = item["at"]  # None, and no definition kept: a TypeError
            if self._blob is None or not (isinstance(offset, int) and isinstance(length, int)
                                          and 0 <= offset <= offset + length <= self._blob.size):
                raise ValueError("a definition outside the cached tools file")
            span = CachedSpan(self._blob, offset, length, Measure(str(digest), int(tokens), int(inner), str(sha256)))
        return Outcome(CachedLowered(tool, span, item["lowered"], diagnostics), item["entry"], diagnostics, resolver)


def _append(path: Path, fresh: Sequence[Lowered], known: Mapping[str, Placed], target: str
            ) -> dict[str, tuple[int, int, Measure]]:
    """Append each of `fresh`'s definitions to `path` (its bytes from `known`, or placed now), one write each,
    one at a time: tool id → (offset, length, measure). Appending, even while another compile does, leaves every
    byte a span of the file points to as it was."""
    placed = {}
    fd = store.open_regular(path, os.O_WRONLY | os.O_APPEND)
    try:
        for item in fresh:
            found = known.get(item.tool.id) or place(item, target)
            content = bytes(found.content)
            if os.write(fd, content) != len(content):
                raise OSError(f"{path}: a definition written in part")
            placed[item.tool.id] = (os.lseek(fd, 0, os.SEEK_CUR) - len(content), len(content), found.measure)
    finally:
        os.close(fd)
    return placed


def _settled_stamp(tools_file: Path) -> str:
    """The stamp of the tools file this compile has just written, grown or checked (every span it gives back was
    checked against its hash, or its file was as recorded): recorded with its index, so that the next compile
    takes its spans' hashes as they are while the file still has it. Empty when the clock cannot vouch for it."""
    stamp = stamps.of_path(tools_file)
    return stamp if stamps.settle([stamp]) else ""


def _open_blob(path: Path, recorded_stamp: str, diagnostics: Diagnostics) -> _Blob | None:
    try:
        return _Blob(path, recorded_stamp)
    except OSError as exc:
        store.ignored(diagnostics, path, f"its blob is unreadable ({exc.strerror or exc})")
        return None


def _encode(outcome: Outcome, keep_parameters: bool) -> dict[str, Any]:
    lowered = outcome.lowered
    return {
        "lowered": None if lowered is None else {
            "name": lowered.name, "strict": lowered.strict, "problems": [list(problem) for problem in lowered.problems],
            "renamed_keys": lowered.renamed_keys, "arg_shape": lowered.arg_shape, "arg_defs": lowered.arg_defs,
            # Only the strict budget reads parameters, and only of strict tools: the rest are not kept.
            **({"parameters": lowered.parameters} if lowered.strict and keep_parameters else {})},
        "entry": outcome.entry,
        "diagnostics": [d.to_row() for d in outcome.diagnostics],
        "resolver": [d.to_row() for d in outcome.resolver_diagnostics],
        "at": None,
    }


def _record(item: Mapping[str, Any], at: list[Any] | None, definition: JsonObject | None) -> Mapping[str, Any]:
    """`item` as the index keeps it: with where its definition sits in the tools file (`at`), or, for a lowering
    not sent, its `definition` itself (neither for a tool that did not lower). A hit whose definition stayed where
    it was is its record as it is (a grown tools file's every reused one: nothing made, and compared by identity)."""
    lowered = item["lowered"]
    if definition is None and at == item["at"] and not (isinstance(lowered, dict) and "definition" in lowered):
        return item
    if definition is not None:
        lowered = {**lowered, "definition": definition}
    elif isinstance(lowered, dict) and "definition" in lowered:
        lowered = {k: v for k, v in lowered.items() if k != "definition"}
    return {"lowered": lowered, "entry": item["entry"], "diagnostics": item["diagnostics"],
            "resolver": item["resolver"], "at": at}


def _delta_key(settings: str, index_stamp: str) -> str:
    return f"{settings}:{index_stamp}"


def _delta(out_dir: Path, target: str, index: store.Entry, settings: str, diagnostics: Diagnostics
           ) -> store.Entry | None:
    """The delta saved against `index` as its file is now, or None."""
    found = store.load(out_dir, delta_kind(target), diagnostics, _well_formed_delta)
    return found if found is not None and found.key == _delta_key(settings, index.own) else None


def _merged(base: Mapping[str, Any], delta: store.Entry | None) -> Mapping[str, Any]:
    if delta is None:
        return base
    dropped = set(delta.payload["drop"])
    merged = {key: item for key, item in base.items() if key not in dropped}
    merged.update(delta.payload["put"])
    return merged


def _well_formed(payload: Any) -> bool:
    return isinstance(payload, dict) and all(isinstance(item, dict) for item in payload.values())


def _well_formed_delta(payload: Any) -> bool:
    return (isinstance(payload, dict) and _well_formed(payload.get("put"))
            and isinstance(payload.get("drop"), list) and all(isinstance(key, str) for key in payload["drop"]))
