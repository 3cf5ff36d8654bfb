"""Lowering split by tools: a build's targets lowered side by side, each worker taking a slice of the tools.

One tool lowered for four targets repeats work that one process does once when it lowers them together: the
resolver sizes and inlines the tool's schema once for both inlining targets (its memo), the malformed check runs
once, and the targets of one family share their lowered parameters and validator memos (`LoweringCache`). Split by
target, each worker did that work again, and three target groups never balanced over two cores. Split by tools,
they do: each worker claims the next run of neighbouring tools when it is free (`parallel.Claims`), so the workers
end together, and neighbours share definitions that only that worker's memos then hold (dealt out in turn, every
worker met every definition and lowered it again).

A worker places each definition as it will sit in the target's tools array (`spans.place`: encoded, indented,
hashed and counted once) into a spool file of its own per target, and sends back a small record per lowering
(`Made`); the parent decides what only the whole catalog can decide (the strict budget, the tool limit) and
writes each target's tools file from the spools, copying bytes (`spans.write_array` with `known`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import BinaryIO, NamedTuple

import orjson

from compiler.build import Build
from compiler.infra import limits
from compiler.infra.diagnostics import Diagnostic
from compiler.infra.parallel import Claims, can_fork, cores, fork_each, here_and_forked
from compiler.ir import JsonObject, Tool
from compiler.providers import tokens
from compiler.providers.dialect import Lowered, LoweringCache, lower_env, options_key
from compiler.providers.lower import TargetPlan, lower_tool
from compiler.providers.registry import keeps_strict_parameters
from compiler.providers.reuse import CachedLowered, CachedSpan, Outcome, PriorLowerings
from compiler.providers.spans import Measure, Placed, place

WARM_STRIDE = 32
"""Before forking, this process lowers every 32nd tool: the memos it fills (shared definitions resolved, lowered,
checked and counted) are the workers' from the start, where each worker built them all again. Microsoft Graph,
schemas/ CPU s (this process + workers): no share 4.7 + 24.8, every 32nd 5.2 + 19.6, every 8th 7.0 + 18.9."""
FORK_MIN_WORK_S = 0.25
"""Workers are forked for the tools left after that share only when lowering them would take this process more
than this many CPU seconds (estimated from what the share took per tool): forking, filling the workers' memos
again and taking their records back cost about 0.1-0.2 s of CPU (Stripe's 417 tools, cold: 0.78-0.85 s in one
process, 0.08 + 0.82-0.92 s with two workers), which a second core only earns back on more work than that. The
work, not the number of tools, decides: tools cost 0.05 to 10 ms each depending on their schemas."""
HERE_MAX_TOOLS = 4096
"""Up to this many tools in the catalog, this process claims runs of tools itself beside one forked worker fewer
(`parallel.here_and_forked`: a fork and a pickled result fewer, and no core left to a process that only waits);
past it, every worker is forked and this process waits. What this process lowers fills memos it keeps for the rest
of the compile, where a worker's memory goes back to the system as it ends: Microsoft Graph (11,422 tools) kept
~170 MB more (~30 KB per tool it lowered), and its full compile's peak rose from 1,129 to 1,300 MB; GitHub has
1,223 tools, Stripe 417. A count, not the work estimated after the warm share: it is known before the stage
starts, so the work this process does beside its worker (`Meanwhile`) keeps its old place past it."""


class Meanwhile:
    """Work of this process that needs no lowering (the pipeline's catalog.json), done once, whichever round or
    retry of the lowering asks first: while a forked worker lowers beside this process (it then claims fewer
    tools); else before lowering, in the order the stages had it (done after the share lowered here, before forking
    every worker, it left Microsoft Graph's peak PSS ~40 MB higher; after them, ~17 MB)."""

    def __init__(self, work: Callable[[], None] | None = None) -> None:
        self._work = work

    def __call__(self) -> None:
        work, self._work = self._work, None
        if work is not None:
            work()


def _after(first: Callable[[], None], then: Callable[[], list[Made]]) -> list[Made]:
    first()
    return then()


class Request(NamedTuple):
    """One lowering to make: a tool for a target, strict asked for or not."""

    position: int
    """The tool's index in `catalog.tools`."""
    target: str
    strict: bool


class Kept(NamedTuple):
    """What the parent needs of a worker's `Lowered`, and where the worker put its definition."""

    name: str
    strict: bool
    parameters: JsonObject | None
    """Only a strict lowering's (the strict budget and the lowering cache read those); None otherwise."""
    problems: list[tuple[str, str]]
    renamed_keys: dict[str, str]
    arg_shape: JsonObject | None
    arg_defs: JsonObject
    offset: int
    length: int
    measure: Measure


class Made(NamedTuple):
    """One lowering as it crosses back from a worker: `lower.lower_tool`'s result and what the resolver reported
    meanwhile, the definition left in the spool file."""

    request: Request
    kept: Kept | None
    entry: JsonObject | None
    diagnostics: list[Diagnostic]
    resolver_diagnostics: list[Diagnostic]


def spool_path(spool: Path, target: str) -> Path:
    return spool.with_name(f"{spool.name}.{target}.json")


def lower_slice(build: Build, plans: Mapping[str, TargetPlan], requests: Iterable[Request], spool: Path,
                cache: LoweringCache) -> list[Made]:
    """Lower `requests` in this process, one `cache` for every target; each target's definitions go to its own
    spool file (`spool_path`), in request order. A tool's requests come one after another (the resolver keeps its
    last inlining: a tool's targets that inline share it)."""
    sink = build.resolver.diagnostics
    options_text = options_key(build.config.providers)
    made: list[Made] = []
    files: dict[str, BinaryIO] = {}
    try:
        for request in requests:
            tool = build.catalog.tools[request.position]
            out = files.get(request.target)
            if out is None:
                out = files[request.target] = spool_path(spool, request.target).open("wb")
            env = lower_env(build.resolver, build.catalog.definitions_for(tool), build.config, cache,
                            options_text=options_text)
            before = len(sink)
            lowered, entry, diagnostics = lower_tool(request.target, tool, plans[request.target].names[tool.id], env,
                                                     strict=request.strict)
            kept = None if lowered is None else _spool(lowered, request.target, out)
            made.append(Made(request, kept, entry, diagnostics, sink.items[before:]))
    finally:
        for handle in files.values():
            handle.close()
    return made


def _spool(lowered: Lowered, target: str, out: BinaryIO) -> Kept:
    placed = place(lowered, target)
    offset = out.tell()
    out.write(placed.content)
    parameters = lowered.parameters if lowered.strict and keeps_strict_parameters(target) else None
    return Kept(lowered.name, lowered.strict, parameters, lowered.problems,
                lowered.renamed_keys, lowered.arg_shape, lowered.arg_defs, offset, len(placed.content),
                placed.measure)


class SpooledLowered(Lowered):
    """A lowering a worker made, as the parent holds it: its definition is the bytes the worker placed in a spool
    file, read (and decoded) only when something asks. `parameters` is only a strict lowering's, and only for a
    target whose strict budget reads them (`registry.keeps_strict_parameters`)."""

    def __init__(self, tool: Tool, kept: Kept, losses: list[Diagnostic], spool: BinaryIO) -> None:
        self._spool, self._offset, self.length, self._measure = spool, kept.offset, kept.length, kept.measure
        super().__init__(tool=tool, name=kept.name, definition={}, parameters=kept.parameters, strict=kept.strict,
                         losses=losses, problems=kept.problems, renamed_keys=kept.renamed_keys,
                         arg_shape=kept.arg_shape, arg_defs=kept.arg_defs)

    @property
    def placed(self) -> Placed:
        # Read at its offset, never moving the handle's: a forked child (the tools files written aside) shares
        # the handle's file offset with this process, so a seek here would move the child's, and the other way.
        return Placed(os.pread(self._spool.fileno(), self.length, self._offset), self._measure)

    @property
    def definition(self) -> JsonObject:
        decoded: JsonObject = orjson.loads(self.placed.content)
        return decoded

    @definition.setter
    def definition(self, value: JsonObject) -> None:
        """Set by the dataclass's `__init__` (empty): the spooled bytes are the definition."""

    @property
    def parameters(self) -> JsonObject | None:
        if not self.strict:
            raise AttributeError(f"{self.tool.id}: a loose lowering's parameters are not sent back from its worker")
        return self._parameters

    @parameters.setter
    def parameters(self, value: JsonObject | None) -> None:
        self._parameters = value


class Placements(Mapping[str, Placed]):
    """Tool id → its definition's bytes and measure, for the lowerings that have them already (the lowering
    cache's and the workers'), read from their files only as `write_array` reaches each."""

    def __init__(self, ordered: Sequence[Lowered], reused: Mapping[str, CachedSpan]) -> None:
        self._reused = reused
        self._spooled = {item.tool.id: item for item in ordered if isinstance(item, SpooledLowered)}

    def __getitem__(self, tool_id: str) -> Placed:
        span = self._reused.get(tool_id)
        return span.placed() if span is not None else self._spooled[tool_id].placed

    def __iter__(self) -> Iterator[str]:
        return iter({**self._reused, **self._spooled})

    def __len__(self) -> int:
        return len({**self._reused, **self._spooled})


class SlicedLowering:
    """A build's lowerings for every target, asked for in rounds (every tool; then, loose, those past a strict
    budget): each request is the lowering cache's (`PriorLowerings`) or lowered, on every core for a big catalog.
    `close()` when the tools files are written."""

    def __init__(self, build: Build, plans: Mapping[str, TargetPlan],
                 priors: Mapping[str, PriorLowerings | None], meanwhile: Meanwhile | None = None) -> None:
        self._build, self._plans, self._priors = build, plans, priors
        self._meanwhile = meanwhile or Meanwhile()
        self._here = len(build.catalog.tools) <= HERE_MAX_TOOLS
        if not self._here:  # every worker will be forked: nothing to do beside them, so done first, as it was
            self._meanwhile()
        self._cache = LoweringCache()
        """The in-process slices' (kept across rounds, as the resolver's memo is); a forked worker's copy starts
        empty and goes with it."""
        self._mark = len(build.resolver.diagnostics)
        self._spools: list[BinaryIO] = []
        self._rounds = 0

    def lower(self, requests: Sequence[Request]) -> list[Outcome]:
        """An outcome per request, in order. Requests for one target come in catalog order."""
        tools = self._build.catalog.tools
        outcomes: list[Outcome | None] = []
        missing: list[int] = []
        for at, request in enumerate(requests):
            prior = self._priors[request.target]
            tool = tools[request.position]
            found = prior.get(tool, self._plans[request.target].names[tool.id], request.strict) if prior else None
            outcomes.append(found)
            if found is None:
                missing.append(at)
        made = self._lower_missing([requests[at] for at in missing])
        for at, (item, handles) in zip(missing, made, strict=True):
            tool = tools[item.request.position]
            outcome = outcomes[at] = _outcome(tool, item, handles)
            prior = self._priors[item.request.target]
            if prior is not None:
                prior.put(tool, self._plans[item.request.target].names[tool.id], item.request.strict, outcome)
        done = [outcome for outcome in outcomes if outcome is not None]
        if len(done) != len(requests):
            raise RuntimeError("a lowering request got no outcome")  # every miss is lowered: never happens
        return done

    def close(self) -> None:
        """Close the spool files (their lowerings' definitions can no longer be read) and take back from the
        resolver's sink what in-process slices reported there (each outcome carries its own)."""
        for handle in self._spools:
            handle.close()
            Path(handle.name).unlink(missing_ok=True)
        del self._build.resolver.diagnostics.items[self._mark:]

    def _lower_missing(self, requests: Sequence[Request]) -> list[tuple[Made, dict[str, BinaryIO]]]:
        """`requests` lowered, in order, each with the spool files its definition is in. With more than one core,
        a share here first (which fills the memos: the shared definitions resolved, lowered, validated and
        counted once), whose cost per tool estimates the rest's: the rest lowered here too when that is little
        work (`FORK_MIN_WORK_S`), else claimed by forked workers in runs of neighbouring tools
        (`parallel.Claims`), which inherit the memos."""
        self._rounds += 1
        spool = self._build.files.spool_dir() / f"lowering-{self._rounds}"
        order = {target: rank for rank, target in enumerate(self._plans)}
        by_tool = sorted(requests, key=lambda request: (request.position, order[request.target]))
        distinct = sorted({request.position for request in requests})
        workers = min(cores(), len(distinct))
        warm, runs = _warm_and_runs(by_tool, distinct) if workers > 1 and can_fork() else (by_tool, [])
        spools = [spool.with_name(f"{spool.name}-{k}") for k in range(1 + workers)]
        if not runs:
            self._meanwhile()
        started = time.process_time()
        found = [(spools[0], lower_slice(self._build, self._plans, warm, spools[0], self._cache))]
        if runs:
            per_tool = (time.process_time() - started) / (len(distinct) - len(runs))
            found.extend(self._lower_runs(runs, spools[1:], per_tool * len(runs)))
        by_request: dict[Request, tuple[Made, dict[str, BinaryIO]]] = {}
        for part, made in found:
            handles = self._open(part, {item.request.target for item in made if item.kept is not None})
            by_request.update((item.request, (item, handles)) for item in made)
        return [by_request[request] for request in requests]

    def _lower_runs(self, runs: Sequence[Sequence[Request]], spools: Sequence[Path],
                    work: float) -> list[tuple[Path, list[Made]]]:
        """The runs of tools left after the warm share, each spool file with what was lowered into it: here, for
        `work` (this process's estimated CPU seconds) under `FORK_MIN_WORK_S`; else claimed by workers, this
        process one of them up to `HERE_MAX_TOOLS`, and all of them forked past it."""
        if work < FORK_MIN_WORK_S:
            self._meanwhile()
            rest = (request for run in runs for request in run)
            return [(spools[0], lower_slice(self._build, self._plans, rest, spools[0], self._cache))]
        tokens.preload()  # loaded once before forking: every worker counts tokens with the parent's tokenizer
        claims = Claims(len(runs), len(spools))
        tasks = [partial(lower_slice, self._build, self._plans, claimed(runs, claims), path, self._cache)
                 for path in spools]
        budget = limits.worker_budget()
        if self._here:  # this process does its other work first, then claims what is left
            made = here_and_forked([partial(_after, self._meanwhile, tasks[0]), *tasks[1:]], budget_mb=budget)
        else:
            made = fork_each(tasks, len(tasks), budget_mb=budget)
        return list(zip(spools, made, strict=True))

    def _open(self, spool: Path, targets: set[str]) -> dict[str, BinaryIO]:
        handles: dict[str, BinaryIO] = {target: spool_path(spool, target).open("rb") for target in sorted(targets)}
        self._spools.extend(handles.values())
        return handles


def _warm_and_runs(requests: Sequence[Request], tools: Sequence[int]) -> tuple[list[Request], list[list[Request]]]:
    """The share lowered here first (every `WARM_STRIDE`th tool: spread over the catalog, it reaches most shared
    definitions), and the other tools' requests, one list per tool in catalog order, for the workers to claim.
    A tool's requests stay together, in the order given."""
    warm = set(tools[::WARM_STRIDE])
    first: list[Request] = []
    runs: dict[int, list[Request]] = {}
    for request in requests:
        if request.position in warm:
            first.append(request)
        else:
            runs.setdefault(request.position, []).append(request)
    return first, [runs[tool] for tool in sorted(runs)]


def claimed(runs: Sequence[Sequence[Request]], claims: Claims) -> Iterator[Request]:
    """The requests of each run of tools this worker claims, as it gets to them (`Claims.runs`)."""
    for taken in claims.runs():
        for index in taken:
            yield from runs[index]


def _outcome(tool: Tool, item: Made, handles: Mapping[str, BinaryIO]) -> Outcome:
    lowered = None
    if item.kept is not None:
        lowered = SpooledLowered(tool, item.kept, item.diagnostics, handles[item.request.target])
    return Outcome(lowered, item.entry, item.diagnostics, item.resolver_diagnostics)


def spooled_bytes(ordered: Iterable[Lowered]) -> int:
    """The bytes of the definitions among `ordered` that writing a tools file copies and hashes, without reading
    them: those workers placed in spool files and those the lowering cache gives back from the last tools file
    (a recompile's are nearly all of them)."""
    return sum(_placed_length(item) for item in ordered)


def _placed_length(item: Lowered) -> int:
    if isinstance(item, SpooledLowered):
        return item.length
    if isinstance(item, CachedLowered) and item.span is not None:
        return item.span.length
    return 0


def placements(prior: PriorLowerings | None, ordered: Sequence[Lowered]) -> Placements:
    """`Placements` for a target's final lowerings: the cache's (`PriorLowerings.reused`) and the workers'."""
    return Placements(ordered, prior.reused(ordered) if prior is not None else {})
