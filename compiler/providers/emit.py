"""The providers emitter: `schemas/<target>.json` (the request's `tools` array, usable as-is with the SDK) and
`schemas/<target>.names.json` (the reverse map, format in `namemap.py`) for every target of the build.

Artifacts for later stages: `build.artifacts["providers"][target] = {"tools": {tool_id: definition},
"names": <name map>}`; sizes for `--report` under `build.artifacts["report"]["targets"][target]`.
Token counts are estimates: `ceil(bytes of compact JSON / 4)`, the usual rule of thumb for English and JSON
with OpenAI/Anthropic BPE tokenizers (no tokenizer is downloaded; treat it as ±25%).
"""

from __future__ import annotations

from typing import Any

from compiler.build import Build
from compiler.ir import JsonObject
from compiler.providers.lower import TargetResult, lower_target
from compiler.serialize import canonical_json, compact_json

CHARS_PER_TOKEN = 4


def tools_array(target: str, definitions: list[JsonObject]) -> list[JsonObject]:
    """What the SDK's `tools` argument takes: a list of definitions, or for Gemini one Tool of declarations."""
    if target == "gemini":
        return [{"functionDeclarations": definitions}] if definitions else []
    return definitions


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


def emit_providers(build: Build) -> None:
    providers = build.artifacts.setdefault("providers", {})
    targets = build.artifacts.setdefault("report", {}).setdefault("targets", {})
    shared: dict[tuple[str, ...], object] = {}
    for target in build.targets:
        result = lower_target(build.catalog, build.resolver, target, build.config, shared)
        build.diagnostics.extend(result.diagnostics)
        ordered = sorted(result.lowered, key=lambda item: item.tool.id)
        tools = tools_array(target, [item.definition for item in ordered])
        name_map = result.name_map()
        emitted = canonical_json(tools)
        build.add_file(f"schemas/{target}.json", emitted)
        build.add_file(f"schemas/{target}.names.json", canonical_json(name_map))
        providers[target] = {"tools": {item.tool.id: item.definition for item in ordered}, "names": name_map}
        targets[target] = _summary(result, tools, emitted)
