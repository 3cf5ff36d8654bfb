"""The providers emitter: `schemas/<target>.json` (the request's `tools` array, usable as-is with the SDK) and
`schemas/<target>.names.json` (the reverse map, format in `namemap.py`) for every target of the build.

Hands on `{target: build.TargetOutput}` (definitions by tool id, the name map, the sizes `--report` shows, and
the layout of the tools file: where each definition sits and its tokens, which the fit stage reads, `spans.py`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from compiler.build import Build, Layout, TargetOutput
from compiler.incremental import store
from compiler.infra import limits
from compiler.infra.collector import paused_then_frozen
from compiler.infra.diagnostics import Diagnostic
from compiler.infra.parallel import WRITE_ASIDE_MIN_BYTES, Background, can_fork, cores
from compiler.infra.serialize import canonical_json
from compiler.ir import JsonObject
from compiler.providers.dialect import Budget, Lowered
from compiler.providers.lower import (
    TargetPlan,
    TargetResult,
    over_budget,
    plan_target,
    send_loose,
    too_many_tools,
)
from compiler.providers.registry import PROVIDERS
from compiler.providers.reuse import DamagedCache, PriorLowerings
from compiler.providers.slices import (
    Meanwhile,
    Placements,
    Request,
    SlicedLowering,
    SpooledLowered,
    placements,
    spooled_bytes,
)
from compiler.providers.spans import Measure, array_bytes, write_array


def tools_array(target: str, definitions: list[JsonObject]) -> list[JsonObject]:
    """What the SDK's `tools` argument takes (each dialect says)."""
    return PROVIDERS[target].tools_array(definitions)


def definitions_of(target: str, tools: list[JsonObject]) -> list[JsonObject]:
    """The inverse of `tools_array`: the definitions in a target's tools array."""
    return PROVIDERS[target].definitions_of(tools)


@dataclass(frozen=True)
class _Emitted:
    """One target's output: the tools array itself stays in the spool file it was written to (`tools_path`)."""

    target: str
    tools_path: str
    layout: Layout
    """Where each definition sits in the tools file and its tokens (by tool id, in the file's order)."""
    kept: bool
    """`tools_path` is the last compile's tools file, used as it is (`PriorLowerings.unchanged_file`)."""
    names: JsonObject
    """The reverse name map, as `lower_target` made it (never encoded and decoded again in one process)."""
    digests: dict[str, str]
    summary: dict[str, Any]
    diagnostics: list[Diagnostic]


class _Definitions(Mapping[str, JsonObject]):
    """A target's definitions by tool id, decoded from its tools array on first read: the lock reads digests,
    codegen reads name maps and the fit stage reads the layout, so a compile never holds a big API's definitions
    after lowering them."""

    def __init__(self, array: Path, layout: Layout) -> None:
        self._array, self._spans = array, layout.spans
        self._ids = list(layout.spans)
        self._decoded: dict[str, JsonObject] | None = None

    def _all(self) -> dict[str, JsonObject]:
        if self._decoded is None:
            with self._array.open("rb") as source:  # by spans: a tools file that grew is not an array
                self._decoded = {tool_id: orjson.loads(os.pread(source.fileno(), span.length, span.offset))
                                 for tool_id, span in self._spans.items()}
        return self._decoded

    def __getitem__(self, tool_id: str) -> JsonObject:
        return self._all()[tool_id]

    def __contains__(self, tool_id: object) -> bool:
        return tool_id in self._ids

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


def fits_one_request(target: str, tools: int) -> bool:
    """Whether `tools` definitions fit one request of `target` (its tool limit): decides, once, whether
    `schemas/<target>.json` holds them or the discovery form (the fit stage, TC771)."""
    limit = PROVIDERS[target].caps.max_tools
    return limit is None or tools <= limit


def _prior(build: Build, target: str, *, read: bool = True) -> PriorLowerings | None:
    if build.ir_hashes is None or build.out_dir is None:
        return None
    return PriorLowerings(build.out_dir, target, build.config, build.ir_hashes, build.diagnostics, read=read)


def _lower_all(build: Build, meanwhile: Meanwhile) -> list[_Emitted]:
    """Every target lowered with the lowering cache; if the cache turns out altered while its definitions are
    copied (the last compile's tools file changed since it was saved: a TC140 note), lowered again from nothing,
    and the cache saved afresh."""
    priors = {target: _prior(build, target) for target in build.targets}
    try:
        return _lower_with(build, priors, meanwhile)
    except DamagedCache as exc:
        store.ignored(build.diagnostics, exc.path, "its definitions do not match their hashes (corrupted)")
        return _lower_with(build, {target: _prior(build, target, read=False) for target in build.targets},
                           meanwhile)
    finally:
        for prior in priors.values():
            if prior is not None:
                prior.close()


def _lower_with(build: Build, priors: Mapping[str, PriorLowerings | None], meanwhile: Meanwhile) -> list[_Emitted]:
    """Every target lowered together (split by tools, `slices.py`): all tools; then, loose, the strict tools past
    a target's per-request budget; then each target's tools file written from what its lowerings placed."""
    plans = {target: plan_target(build.catalog, target, build.config) for target in build.targets}
    lowering = SlicedLowering(build, plans, priors, meanwhile)
    try:
        results, resolver_found = _first_round(build, plans, lowering)
        _strict_budgets(build, plans, lowering, results, resolver_found)
        written = _write_tools_files(build, results, priors)
        emitted = []
        for target in build.targets:
            emitted.append(_emitted(results[target], resolver_found[target], written[target]))
            build.progress.step(f"lowered {target}")
        return emitted
    finally:
        lowering.close()


def _first_round(build: Build, plans: Mapping[str, TargetPlan], lowering: SlicedLowering
                 ) -> tuple[dict[str, TargetResult], dict[str, list[Diagnostic]]]:
    """Every named tool for every target (as strict as the target wants), gathered per target in catalog order."""
    requests = [Request(index, plan.target, plan.strict) for plan in plans.values()
                for index, tool in enumerate(build.catalog.tools) if tool.id in plan.names]
    results = {target: TargetResult(target) for target in plans}
    resolver_found: dict[str, list[Diagnostic]] = {target: [] for target in plans}
    for target, plan in plans.items():
        results[target].diagnostics.extend(plan.name_diagnostics)
    for request, outcome in zip(requests, lowering.lower(requests), strict=True):
        result = results[request.target]
        resolver_found[request.target].extend(outcome.resolver_diagnostics)
        result.diagnostics.extend(outcome.diagnostics)
        if outcome.lowered is not None and outcome.entry is not None:
            result.lowered.append(outcome.lowered)
            result.entries[outcome.lowered.name] = outcome.entry
    return results, resolver_found


def _strict_budgets(build: Build, plans: Mapping[str, TargetPlan], lowering: SlicedLowering,
                    results: Mapping[str, TargetResult], resolver_found: Mapping[str, list[Diagnostic]]) -> None:
    """Strict tools share per-request limits: past them, a tool is lowered again loose and sent so (TC421)."""
    index_of = {tool.id: index for index, tool in enumerate(build.catalog.tools)}
    past: list[tuple[str, int, Budget]] = []
    for target, plan in plans.items():
        budget = PROVIDERS[target].budget
        if budget is not None and plan.strict:
            past.extend((target, position, budget) for position in over_budget(results[target], budget))
    requests = [Request(index_of[results[target].lowered[position].tool.id], target, False)
                for target, position, _budget in past]
    for (target, position, budget), outcome in zip(past, lowering.lower(requests), strict=True):
        resolver_found[target].extend(outcome.resolver_diagnostics)
        send_loose(results[target], position, outcome.lowered, outcome.entry, budget)
    for result in results.values():
        too_many_tools(result)


class _Written(NamedTuple):
    """A target's tools file, written from its lowerings' placed bytes (`spans.write_array`)."""

    path: Path
    digests: dict[str, str]
    layout: Layout
    kept: bool = False
    """`path` is the last compile's tools file (the lowering cache's): it goes into the output as it is."""


def _write_tools_files(build: Build, results: Mapping[str, TargetResult],
                       priors: Mapping[str, PriorLowerings | None]) -> dict[str, _Written]:
    """Every target's tools file (and its lowering cache). For a big catalog, the targets holding about half the
    bytes are written by a forked child meanwhile: each file is copied from the spools and hashed whole, one
    after another in this process (Microsoft Graph's four, 700 MB: 1.7 s of CPU, all of it with the other core
    idle)."""
    ordered = {target: sorted(result.lowered, key=lambda item: item.tool.id) for target, result in results.items()}
    aside = _written_aside(ordered) if cores() > 1 and can_fork() else []
    child = Background(partial(_write_each, build, ordered, priors, aside), budget_mb=limits.worker_budget()) \
        if aside else None
    try:
        written = _write_each(build, ordered, priors, [target for target in ordered if target not in aside])
        if child is not None:
            written.update(child.result())
            child = None
    finally:
        if child is not None:
            child.cancel()
    return written




def _written_aside(ordered: Mapping[str, list[Lowered]]) -> list[str]:
    """The targets a forked child writes: from the costliest down, each that brings their cost nearer half of all
    (never every target: this process would only wait)."""
    if sum(spooled_bytes(items) for items in ordered.values()) < WRITE_ASIDE_MIN_BYTES:
        return []
    costs = {target: _write_cost(target, items) for target, items in ordered.items()}
    total = sum(costs.values())
    aside: list[str] = []
    for target in sorted(costs, key=lambda name: (-costs[name], name)):
        if 2 * (sum(costs[name] for name in aside) + costs[target]) <= total + costs[target]:
            aside.append(target)
    return aside if len(aside) < len(costs) else aside[:-1]


def _write_cost(target: str, items: list[Lowered]) -> int:
    """Writing a target's tools file, in bytes weighed by what is done with each (CPU s per 100 MB, Microsoft
    Graph: ~0.05 to check a cached definition where it lies, ~0.09 to copy a worker's, ~0.18 to copy, check and
    hash one into a file of the output): a file in the output 3 per byte; one in the cache alone (`grown_file`) 1
    per cached byte and 2 per worker's byte. A recompile of Graph writes its Claude file aside and checks the
    other three here, where by bytes alone the child took Claude's and Gemini's and this process waited."""
    if fits_one_request(target, len(items)):
        return 3 * spooled_bytes(items)
    return spooled_bytes(items) + spooled_bytes([item for item in items if isinstance(item, SpooledLowered)])


def _write_each(build: Build, ordered: Mapping[str, list[Lowered]], priors: Mapping[str, PriorLowerings | None],
                targets: list[str]) -> dict[str, _Written]:
    written = {}
    for target in targets:
        prior, spool = priors[target], build.files.spool_dir() / f"{target}.tools.json"
        in_output = fits_one_request(target, len(ordered[target]))
        reused = _reused_file(prior, ordered[target], in_output, spool)
        if reused is not None:
            path, measures, layout = reused
        else:
            path = spool
            measures, layout = write_array(path, target, ordered[target], placements(prior, ordered[target]),
                                           hashed=in_output)
        if prior is not None:
            prior.save(ordered[target], path, layout, measures)
        digests = {tool_id: measure.digest for tool_id, measure in measures.items()}
        written[target] = _Written(path, digests, layout, kept=in_output and reused is not None)
    return written


def _reused_file(prior: PriorLowerings | None, ordered: list[Lowered], in_output: bool,
                 spool: Path) -> tuple[Path, dict[str, Measure], Layout] | None:
    """The lowering cache's tools file, when this compile can use it: as it is, for a file that goes into the
    output (the same bytes); grown, for one that does not (the fit stage reads it by spans only)."""
    if prior is None:
        return None
    if in_output:
        return prior.unchanged_file(ordered)
    reused = prior.reused(ordered)  # once: a walk of every lowering
    fresh = [item for item in ordered if item.tool.id not in reused]  # their sizes, as far as known unread
    return prior.grown_file(ordered, reused, Placements(ordered, reused), spooled_bytes(fresh), spool)


def _emitted(result: TargetResult, resolver_found: list[Diagnostic], written: _Written) -> _Emitted:
    """What the rest of the compile needs of one target's lowering and its tools file."""
    summary = {"tools": len(result.lowered), "strict": sum(1 for item in result.lowered if item.strict),
               "bytes": array_bytes(written.layout), "losses": len(result.diagnostics)}  # tokens: the fit stage adds
    return _Emitted(result.target, str(written.path), written.layout, written.kept, result.name_map(), written.digests,
                    summary, [*resolver_found, *result.diagnostics])


def _merge_diagnostics(build: Build, found: list[Diagnostic], seen: set[Diagnostic]) -> None:
    """Add `found` to the build's diagnostics in order, each the resolver reported once only: it reports a pruned
    recursion once per tool, and workers that lowered apart would each report it. A lowering's diagnostics name
    their target, so only the resolver's (none) can repeat: only they are hashed, and the runs between them are
    added whole (Microsoft Graph: 236,000 diagnostics, one at a time ~0.2 s)."""
    start = 0
    for at in [at for at, diagnostic in enumerate(found) if not diagnostic.provider]:
        build.diagnostics.extend(found[start:at])
        start = at + 1
        if found[at] not in seen:
            seen.add(found[at])
            build.diagnostics.add(found[at])
    build.diagnostics.extend(found[start:])


def emit_providers(build: Build, meanwhile: Callable[[], None] | None = None) -> dict[str, TargetOutput]:
    """Lower every target, add `schemas/<target>.json` (when its tools fit one request) and `.names.json`,
    and hand on each target's output. `meanwhile` (work that needs no lowering: the pipeline's catalog.json) is
    done once, while a forked worker lowers beside this process when one does (`slices.Meanwhile`)."""
    with paused_then_frozen():  # forked workers inherit the pause
        return _emit(build, Meanwhile(meanwhile))


def _emit(build: Build, meanwhile: Meanwhile) -> dict[str, TargetOutput]:
    outputs: dict[str, TargetOutput] = {}
    by_target = {item.target: item for item in _lower_all(build, meanwhile)}
    meanwhile()  # done by now, unless the lowering never asked for it
    seen: set[Diagnostic] = set()
    for target in build.targets:  # merged in target order, whatever ran where
        item = by_target[target]
        _merge_diagnostics(build, item.diagnostics, seen)
        array = Path(item.tools_path)
        fits = fits_one_request(target, len(item.layout.spans))
        if fits:
            tools_file = f"schemas/{target}.json"
            if tools_file in build.files:
                raise ValueError(f"two stages write {tools_file}")
            if item.kept:
                build.files.keep(tools_file, array, item.layout.sha256)
            else:
                build.files.adopt(tools_file, array, item.layout.sha256)
        build.add_file(f"schemas/{target}.names.json", canonical_json(item.names))
        outputs[target] = TargetOutput(target=target, tools=_Definitions(array, item.layout),
                                       names=item.names, summary=item.summary, array=array,
                                       layout=item.layout, fits_one_request=fits, digests=item.digests)
    return outputs
