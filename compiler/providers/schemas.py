"""The providers emitter: `schemas/<target>.json` (the request's `tools` array, usable as-is with the SDK) and
`schemas/<target>.names.json` (the reverse map, format in `namemap.py`) for every target of the build.

Hands on `{target: build.TargetOutput}` (definitions by tool id, the name map, the sizes `--report` shows, and
the layout of the tools file: where each definition sits and its tokens, which the fit stage reads, `spans.py`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from compiler.build import Build, Layout, TargetOutput
from compiler.infra import limits
from compiler.infra.diagnostics import Diagnostic
from compiler.infra.parallel import can_fork, cores, fork_each
from compiler.infra.serialize import canonical_json
from compiler.ir import JsonObject
from compiler.providers import tokens
from compiler.providers.dialect import LoweringCache
from compiler.providers.lower import lower_target
from compiler.providers.registry import PROVIDERS
from compiler.providers.reuse import PriorLowerings
from compiler.providers.spans import write_array


def tools_array(target: str, definitions: list[JsonObject]) -> list[JsonObject]:
    """What the SDK's `tools` argument takes (each dialect says)."""
    return PROVIDERS[target].tools_array(definitions)


def definitions_of(target: str, tools: list[JsonObject]) -> list[JsonObject]:
    """The inverse of `tools_array`: the definitions in a target's tools array."""
    return PROVIDERS[target].definitions_of(tools)


@dataclass(frozen=True)
class _Emitted:
    """One target's output, as values that cross a process boundary cheaply: the tools array itself stays in
    the spool file the worker wrote (`tools_path`), never pickled back."""

    target: str
    tools_path: str
    layout: Layout
    """Where each definition sits in the tools file and its tokens (by tool id, in the file's order)."""
    names: JsonObject
    """The reverse name map, as `lower_target` made it (never encoded and decoded again in one process)."""
    digests: dict[str, str]
    summary: dict[str, Any]
    diagnostics: list[Diagnostic]


class _Definitions(Mapping[str, JsonObject]):
    """A target's definitions by tool id, decoded from its tools array on first read: the lock reads digests,
    codegen reads name maps and the fit stage reads the layout, so a compile never holds a big API's definitions
    after lowering them."""

    def __init__(self, target: str, array: Path, layout: Layout) -> None:
        self._target, self._array = target, array
        self._ids = list(layout.spans)
        self._decoded: dict[str, JsonObject] | None = None

    def _all(self) -> dict[str, JsonObject]:
        if self._decoded is None:
            definitions = definitions_of(self._target, orjson.loads(self._array.read_bytes()))
            self._decoded = dict(zip(self._ids, definitions, strict=True))
        return self._decoded

    def __getitem__(self, tool_id: str) -> JsonObject:
        return self._all()[tool_id]

    def __contains__(self, tool_id: object) -> bool:
        return tool_id in self._ids

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


# Lowering 1,000+ tools takes ~0.3 s per target: targets are independent, so a big catalog lowers on every core.
# Targets that share a lowering memo (the two OpenAI wire formats) stay in one group. Each group runs in a forked
# child of its own (`parallel.fork_each`): the catalog is inherited (frozen out of the cyclic GC by the pipeline,
# so its pages stay shared), never pickled; each child sends back only its group's names, digests and
# diagnostics, and ends, so its memory does not stay behind for the next group.
PARALLEL_MIN_TOOLS = 300


def _lower_group(build: Build, targets: tuple[str, ...]) -> list[_Emitted]:
    cache = LoweringCache()
    emitted: list[_Emitted] = []
    for target in targets:
        before = len(build.diagnostics)
        prior = None if build.ir_hashes is None or build.out_dir is None else \
            PriorLowerings(build.out_dir, target, build.config, build.ir_hashes, build.diagnostics)
        result = lower_target(build.catalog, build.resolver, target, build.config, cache, prior)
        ordered = sorted(result.lowered, key=lambda item: item.tool.id)
        path = build.files.spool_dir() / f"{target}.tools.json"
        digests, layout = write_array(path, target, ordered, prior.reused(ordered) if prior is not None else None)
        if prior is not None:
            prior.save(ordered, path, layout, digests)
        summary = {"tools": len(result.lowered), "strict": sum(1 for item in result.lowered if item.strict),
                   "bytes": path.stat().st_size, "losses": len(result.diagnostics)}  # tokens: the fit stage adds
        # The resolver reports into the build's sink: take what this target added along with the lowering's own.
        found = [*build.diagnostics.items[before:], *result.diagnostics]
        del build.diagnostics.items[before:]
        emitted.append(_Emitted(target, str(path), layout, result.name_map(), digests, summary, found))
        del result, ordered
    return emitted

def fits_one_request(target: str, tools: int) -> bool:
    """Whether `tools` definitions fit one request of `target` (its tool limit): decides, once, whether
    `schemas/<target>.json` holds them or the discovery form (the fit stage, TC771)."""
    limit = PROVIDERS[target].caps.max_tools
    return limit is None or tools <= limit


def _groups(targets: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Targets of one dialect family in one group, in order of first appearance."""
    groups: dict[str, list[str]] = {}
    for target in targets:
        groups.setdefault(PROVIDERS[target].group, []).append(target)
    return [tuple(group) for group in groups.values()]


def _lower_all(build: Build) -> list[_Emitted]:
    groups = _groups(build.targets)
    workers = min(len(groups), cores())
    if workers <= 1 or len(build.catalog.tools) < PARALLEL_MIN_TOOLS or not can_fork():  # no target: nothing loads
        found: list[_Emitted] = []
        for group in groups:
            for item in _lower_group(build, group):
                build.progress.step(f"lowered {item.target}")
                found.append(item)
        return found

    build.files.spool_dir()  # made before forking: every child writes into the same folder
    tokens.preload()  # loaded once before forking: every child counts tokens with the parent's tokenizer

    def lowered(_index: int, items: list[_Emitted]) -> None:
        for item in items:
            build.progress.step(f"lowered {item.target}")

    tasks = [partial(_lower_group, build, group) for group in groups]
    results = fork_each(tasks, workers, budget_mb=limits.worker_budget(), done=lowered)
    return [item for group in results for item in group]  # merged in group order, whatever finished first


def emit_providers(build: Build) -> dict[str, TargetOutput]:
    """Lower every target, add `schemas/<target>.json` (when its tools fit one request) and `.names.json`,
    and hand on each target's output."""
    outputs: dict[str, TargetOutput] = {}
    by_target = {item.target: item for item in _lower_all(build)}
    seen: set[Diagnostic] = set()
    for target in build.targets:  # merged in target order, whatever ran where
        item = by_target[target]
        # The resolver reports a pruned recursion once per tool; workers that lowered apart would each report it.
        for diagnostic in item.diagnostics:
            if diagnostic.provider or diagnostic not in seen:
                seen.add(diagnostic)
                build.diagnostics.add(diagnostic)
        array = Path(item.tools_path)
        fits = fits_one_request(target, len(item.layout.spans))
        if fits:
            tools_file = f"schemas/{target}.json"
            if tools_file in build.files:
                raise ValueError(f"two stages write {tools_file}")
            build.files.adopt(tools_file, array, item.layout.sha256)
        build.add_file(f"schemas/{target}.names.json", canonical_json(item.names))
        outputs[target] = TargetOutput(target=target, tools=_Definitions(target, array, item.layout),
                                       names=item.names, summary=item.summary, array=array,
                                       layout=item.layout, fits_one_request=fits, digests=item.digests)
    return outputs
