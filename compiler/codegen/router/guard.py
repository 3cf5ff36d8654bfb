"""What the router's guard needs baked in: input schemas to validate against, every name policy rules may use,
and which environment variables hold secrets.

    TC650 warning  an input schema with a `pattern` Python's `re` cannot compile: the router refuses every call
                   of that tool (it cannot check the arguments, so it fails closed)

The schemas go to `toolc_router/_schemas.json` (data read lazily on the first call, not code imported eagerly:
a Microsoft Graph sized project has 11k tools). One line per tool and per source's shared `$defs` keeps diffs
readable; keys are sorted, so the same catalog gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from compiler.codegen.router.reuse import FilePieces, piece_key
from compiler.infra.diagnostics import Diagnostic, Diagnostics
from compiler.infra.serialize import compact_json
from compiler.ir import Catalog, HttpBinding, McpBinding, Tool

BAD_PATTERN = "TC650"

_REFERENCE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")
_RENAMED = re.compile(r"^(.+)_([2-9]|[1-9][0-9]+)$")


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def schemas_chunks(catalog: Catalog, tools: Iterable[Tool], diagnostics: Diagnostics, pieces: FilePieces, *,
                   tool_hash: Callable[[Tool], str]) -> Iterator[bytes]:
    """`{"format": 1, "defs": {source: $defs}, "tools": {tool id: {"source", "schema"}}}` as JSON bytes, one line
    per source's `$defs` and per tool, each line a piece (`router.reuse`): a tool's keyed by its IR hash (its
    TC650s kept with it), a source's `$defs` by their encoding."""
    routed = sorted(tools, key=lambda tool: tool.id)
    sources = sorted({tool.source for tool in routed})
    defs = {source: dict(catalog.source(source).definitions) for source in sources
            if any(s.id == source for s in catalog.sources) and catalog.source(source).definitions}
    yield pieces.frame(b'{"format":1,\n"defs":{\n')
    for position, (source, value) in enumerate(sorted(defs.items())):
        key = piece_key("defs", source, hashlib.sha256(compact_json(value)).hexdigest())
        yield pieces.piece(key, lambda: (f"{_dumps(source)}:{_dumps(value)}".encode(), []))  # noqa: B023
        yield pieces.frame(b",\n" if position < len(defs) - 1 else b"\n")
    yield pieces.frame(b'},\n"tools":{\n')
    for position, tool in enumerate(routed):
        key = piece_key("schemas", tool.id, tool_hash(tool))
        yield pieces.piece(key, lambda: _tool_line(tool, diagnostics), diagnostics)  # noqa: B023
        yield pieces.frame(b",\n" if position < len(routed) - 1 else b"\n")
    yield pieces.frame(b"}}\n")


def _tool_line(tool: Tool, diagnostics: Diagnostics) -> tuple[bytes, list[Diagnostic]]:
    """A tool's line of `_schemas.json`, and the TC650s its patterns gave (reported to `diagnostics` too)."""
    mark = len(diagnostics)
    _check_patterns(tool, tool.input_schema, "", diagnostics)
    line = f"{_dumps(tool.id)}:{_dumps({'source': tool.source, 'schema': tool.input_schema})}"
    return line.encode(), diagnostics.items[mark:]


def _check_patterns(tool: Tool, node: Any, pointer: str, diagnostics: Diagnostics) -> None:
    if isinstance(node, Mapping):
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            try:
                re.compile(pattern)
            except re.error as exc:
                diagnostics.report(BAD_PATTERN, f"pattern {pattern[:80]!r} does not compile in Python ({exc}): the "
                                   "router refuses every call of this tool", source=tool.source, tool=tool.id,
                                   pointer=f"{pointer}/pattern")
        for key, value in node.items():
            if key not in ("pattern", "const", "default", "enum", "examples"):
                _check_patterns(tool, value, f"{pointer}/{key}", diagnostics)
    elif isinstance(node, list):
        for index, item in enumerate(node):
            _check_patterns(tool, item, f"{pointer}/{index}", diagnostics)


def policy_aliases(tools: Iterable[Tool], provider_names: Mapping[str, Iterable[str]]) -> dict[str, tuple[str, ...]]:
    """Tool id → the names besides its id and own name that allow/deny/admin rules also match."""
    tools = list(tools)
    by_source: dict[str, set[str]] = {}
    for tool in tools:
        by_source.setdefault(tool.source, set()).add(tool.name)
    aliases: dict[str, tuple[str, ...]] = {}
    for tool in tools:
        names = {f"{tool.source}:{tool.name}", *provider_names.get(tool.id, ())}
        if isinstance(tool.binding, McpBinding):
            names |= {tool.binding.tool_name, f"{tool.binding.server}:{tool.binding.tool_name}"}
        renamed = _RENAMED.match(tool.name)
        if isinstance(tool.binding, HttpBinding) and renamed and renamed.group(1) in by_source[tool.source]:
            # A duplicate operationId renamed `deleteUser_2` (sources.openapi.operations) is still `deleteUser`.
            base = renamed.group(1)
            names |= {base, f"{tool.source}:{base}", f"openapi:{tool.source}:{base}"}
        names -= {tool.id, tool.name}
        if names:
            aliases[tool.id] = tuple(sorted(names))
    return aliases


def secret_env(servers: Iterable[Mapping[str, Any]], apis: Iterable[Mapping[str, Any]],
               admin_token_env: str, tools: Iterable[Mapping[str, Any]] = ()) -> tuple[str, ...]:
    """Every variable a server's env or headers, an API's credentials, or a tool's presets read (their values are
    secrets: a preset `${API_TOKEN}` is as secret as a credential)."""
    names = {admin_token_env}
    for tool in tools:
        names.update(preset_references(tool["fixed_params"]))
    for server in servers:
        for value in (*server["env"].values(), *server["headers"].values()):
            names.update(_REFERENCE.findall(value))
    for api in apis:
        for value in api["auth"].values():
            names.update(_REFERENCE.findall(value))
    return tuple(sorted(names))


def preset_references(value: Any) -> set[str]:
    """The variables `${NAME}` references in a preset value (its strings, not its keys) name."""
    if isinstance(value, str):
        return set(_REFERENCE.findall(value))
    if isinstance(value, Mapping):
        return set().union(*(preset_references(item) for item in value.values()))
    if isinstance(value, list | tuple):
        return set().union(*(preset_references(item) for item in value))
    return set()
