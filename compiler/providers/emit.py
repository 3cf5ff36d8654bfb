"""The providers emitter: `schemas/<target>.json` (the request's `tools` array, usable as-is with the SDK) and
`schemas/<target>.names.json` (the reverse map, format in `namemap.py`) for every target of the build.

Hands on `{target: build.TargetOutput}` (definitions by tool id, the name map, the sizes `--report` shows).
Token counts are estimates: `ceil(bytes of compact JSON / 4)`, the usual rule of thumb for English and JSON
with OpenAI/Anthropic BPE tokenizers (no tokenizer is downloaded; treat it as ±25%).
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import orjson

from compiler.build import Build, TargetOutput
from compiler.diagnostics import Diagnostic
from compiler.ir import JsonObject
from compiler.parallel import can_fork, cores, start_context
from compiler.providers.lower import TargetResult, lower_target
from compiler.providers.registry import PROVIDERS
from compiler.serialize import canonical_json, compact_json

CHARS_PER_TOKEN = 4


def tools_array(target: str, definitions: list[JsonObject]) -> list[JsonObject]:
    """What the SDK's `tools` argument takes (each dialect says)."""
    return PROVIDERS[target].tools_array(definitions)


def definitions_of(target: str, tools: list[JsonObject]) -> list[JsonObject]:
    """The inverse of `tools_array`: the definitions in a target's tools array."""
    return PROVIDERS[target].definitions_of(tools)


def estimate_tokens(data: Any) -> int:
    return -(-len(compact_json(data)) // CHARS_PER_TOKEN)


def _summary(result: TargetResult, tools: list[JsonObject], emitted: bytes) -> dict[str, Any]:
    return {
        "tools": len(result.lowered),
        "strict": sum(1 for item in result.lowered if item.strict),
        "bytes": len(emitted),
        "estimated_tokens": estimate_tokens(tools),
        "losses": len(result.diagnostics),
    }


@dataclass(frozen=True)
class _Emitted:
    """One target's output, as bytes and values that cross a process boundary cheaply."""

    target: str
    tool_ids: list[str]
    """In the order of the definitions in `tools_json`."""
    tools_json: bytes
    names_json: bytes
    summary: dict[str, Any]
    diagnostics: list[Diagnostic]


# Lowering 1,000+ tools takes ~0.3 s per target: targets are independent, so a big catalog lowers on every core.
# Targets that share a lowering memo (the two OpenAI wire formats) stay in one group.
PARALLEL_MIN_TOOLS = 300
_forked: Build | None = None
"""The build a forked worker reads (inherited from the parent's memory, never pickled)."""


def _lower_group(targets: tuple[str, ...]) -> list[_Emitted]:
    build = _forked
    assert build is not None
    shared: dict[tuple[str, ...], object] = {}
    emitted: list[_Emitted] = []
    for target in targets:
        before = len(build.diagnostics)
        result = lower_target(build.catalog, build.resolver, target, build.config, shared)
        ordered = sorted(result.lowered, key=lambda item: item.tool.id)
        tools = tools_array(target, [item.definition for item in ordered])
        tools_json = canonical_json(tools)
        # The resolver reports into the build's sink: take what this target added along with the lowering's own.
        found = [*build.diagnostics.items[before:], *result.diagnostics]
        del build.diagnostics.items[before:]
        emitted.append(_Emitted(target, [item.tool.id for item in ordered], tools_json, canonical_json(result.name_map()),
                                _summary(result, tools, tools_json), found))
    return emitted


def _groups(targets: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Targets of one dialect family in one group, in order of first appearance."""
    groups: dict[str, list[str]] = {}
    for target in targets:
        groups.setdefault(PROVIDERS[target].group, []).append(target)
    return [tuple(group) for group in groups.values()]


def _lower_all(build: Build) -> list[_Emitted]:
    global _forked
    _forked = build
    try:
        groups = _groups(build.targets)
        workers = min(len(groups), cores())
        if workers <= 1 or len(build.catalog.tools) < PARALLEL_MIN_TOOLS or not can_fork():
            return [item for group in groups for item in _lower_group(group)]
        with ProcessPoolExecutor(max_workers=workers, mp_context=start_context()) as pool:
            results = list(pool.map(_lower_group, groups))
        return [item for group in results for item in group]
    finally:
        _forked = None


def emit_providers(build: Build) -> dict[str, TargetOutput]:
    """Lower every target, add `schemas/<target>.json` and `.names.json`, and hand on each target's output."""
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
        build.add_file(f"schemas/{target}.json", item.tools_json)
        build.add_file(f"schemas/{target}.names.json", item.names_json)
        tools = orjson.loads(item.tools_json)
        definitions = definitions_of(target, tools)
        outputs[target] = TargetOutput(target=target, tools=dict(zip(item.tool_ids, definitions, strict=True)),
                                       names=orjson.loads(item.names_json), summary=item.summary)
    return outputs
