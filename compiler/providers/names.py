"""Tool names are compiled: one mangler per provider, the server prefix, and the namesake strategy (seed 004).

Order of decisions for one target, over the catalog's tools in tool-id order:
1. candidate = the tool's name, or `{source}{separator}{name}` when `names.server_prefix` is `always`, or
   `on-conflict` and another *source* has a tool with the same mangled name;
2. the candidate is mangled for the provider: illegal characters → `_`, a leading `_` where the provider
   needs a letter first, and a cap of 64 characters: a longer name keeps its first 55 characters plus `_` and
   8 hex digits of the SHA-1 of the unmangled candidate (so two long names stay apart);
3. tools still sharing a name follow `names.namesake`: `raise` (error TC416), `rename` (the later tool gets
   `_2`, `_3`, ..., re-capped so the suffix fits in 64), `skip` (the later tool is left out), `override` (the
   later tool replaces the earlier one). "Later" is catalog order: tool-id order.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from compiler.config import NamesConfig
from compiler.infra.diagnostics import Diagnostic
from compiler.ir import Tool
from compiler.providers import codes

HASH_LENGTH = 8


@dataclass(frozen=True)
class Mangler:
    illegal: re.Pattern[str]
    must_start: re.Pattern[str] | None = None
    max_length: int = 64

    def __call__(self, name: str, *, room: int = 0) -> str:
        safe = self.illegal.sub("_", name) or "_"
        if self.must_start is not None and not self.must_start.match(safe):
            safe = "_" + safe
        return cap(safe, self.max_length - room, key=name)


def cap(name: str, limit: int, *, key: str) -> str:
    if len(name) <= limit:
        return name
    digest = hashlib.sha1(key.encode()).hexdigest()[:HASH_LENGTH]
    return f"{name[: limit - HASH_LENGTH - 1]}_{digest}"


OPENAI = Mangler(re.compile(r"[^a-zA-Z0-9_-]"))
ANTHROPIC = Mangler(re.compile(r"[^a-zA-Z0-9_-]"))
GEMINI = Mangler(re.compile(r"[^a-zA-Z0-9_.:-]"), must_start=re.compile(r"[a-zA-Z_]"))


def _diag(code: str, tool: Tool, target: str, message: str) -> Diagnostic:
    return Diagnostic(code=code, severity=codes.severity(code), message=message, source=tool.source, tool=tool.id,
                      pointer="/name", provider=target)


def _candidates(tools: list[Tool], mangle: Mangler, config: NamesConfig) -> dict[str, str]:
    def prefixed(tool: Tool) -> str:
        return mangle(f"{tool.source}{config.separator}{tool.name}")

    if config.server_prefix == "always":
        return {tool.id: prefixed(tool) for tool in tools}
    plain = {tool.id: mangle(tool.name) for tool in tools}
    if config.server_prefix == "never":
        return plain
    sources: dict[str, set[str]] = {}
    for tool in tools:
        sources.setdefault(plain[tool.id], set()).add(tool.source)
    return {tool.id: prefixed(tool) if len(sources[plain[tool.id]]) > 1 else plain[tool.id] for tool in tools}


def assign_names(tools: Iterable[Tool], target: str, mangle: Mangler,
                 config: NamesConfig) -> tuple[dict[str, str], list[Diagnostic]]:
    """Provider name for every tool kept (tool id → name), and what was renamed, skipped or refused, under the
    name rules `mangle` (the target dialect's `mangler`, or the MCP server's, `codegen.router.serve`); `target`
    names the provider in diagnostics."""
    ordered = sorted(tools, key=lambda t: t.id)
    candidates = _candidates(ordered, mangle, config)
    diagnostics: list[Diagnostic] = []
    owner: dict[str, Tool] = {}
    names: dict[str, str] = {}
    for tool in ordered:
        name = candidates[tool.id]
        if name in owner:
            earlier = owner[name]
            if config.namesake == "raise":
                diagnostics.append(_diag(codes.NAME_CLASH, tool, target,
                                         f"provider name {name!r} is also {earlier.id}'s (names.namesake: raise)"))
                continue
            if config.namesake == "skip":
                diagnostics.append(_diag(codes.NAMESAKE, tool, target, f"skipped: {name!r} is already {earlier.id}"))
                continue
            if config.namesake == "override":
                del names[earlier.id]
                diagnostics.append(_diag(codes.NAMESAKE, earlier, target, f"overridden by {tool.id} (both {name!r})"))
            else:
                name = _unique(name, owner, key=tool.id, limit=mangle.max_length)
                diagnostics.append(_diag(codes.NAMESAKE, tool, target,
                                         f"renamed to {name!r}: {candidates[tool.id]!r} is {earlier.id}'s"))
        elif name != tool.name and not name.endswith(f"{config.separator}{tool.name}"):
            diagnostics.append(_diag(codes.NAME_MANGLED, tool, target, f"name {tool.name!r} written as {name!r}"))
        owner[name] = tool
        names[tool.id] = name
    return names, diagnostics


def _unique(name: str, taken: dict[str, Tool], *, key: str, limit: int) -> str:
    n = 2
    while True:
        suffix = f"_{n}"
        candidate = cap(name, limit - len(suffix), key=key) + suffix
        if candidate not in taken:
            return candidate
        n += 1
