"""What every dialect module provides, and the result of lowering one tool for one target."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from compiler.diagnostics import Diagnostic
from compiler.ir import JsonObject, Tool
from compiler.providers import codes
from compiler.providers.base import Capabilities, Checked, Lowering
from compiler.refs.codes import RECURSION_PRUNED

if TYPE_CHECKING:
    from compiler.refs import RefResolver


def options_key(options: Mapping[str, object]) -> str:
    """The project's per-target options as one string (part of the subtree memo's key)."""
    return repr(sorted(options.items()))


@dataclass(frozen=True)
class LowerEnv:
    """What a dialect needs besides the tool: the shared resolver and the tool's source definitions."""

    resolver: RefResolver
    defs: Mapping[str, JsonObject]
    max_depth: int = 3
    options: Mapping[str, object] = field(default_factory=dict)
    """Per-target options from the project file (`providers:` section)."""
    fail_fast: bool = True
    """See `Lowering.fail_fast`."""
    options_key: str = ""
    """`options` as a memo key part; `__post_init__` fills it unless the caller passes it (`lower_target` computes it
    once for all its tools)."""
    shared: dict[tuple[str, ...], object] = field(default_factory=dict)
    """Results targets may share within one build (Chat Completions and Responses lower parameters once)."""

    def __post_init__(self) -> None:
        if not self.options_key:
            object.__setattr__(self, "options_key", options_key(self.options))

    def checked(self, target: str) -> Checked:
        """Subtrees the validator already passed for this target (see `validate.Checked`)."""
        key = ("checked", target.split("-")[0])  # Chat Completions and Responses share their node rules
        found = self.shared.get(key)
        if not isinstance(found, Checked):
            found = self.shared[key] = Checked()
        return found

    def inline(self, tool: Tool, ctx: Lowering) -> JsonObject:
        """`resolver.inline` for `tool`, with the recursion it pruned reported as this target's loss (TC419)."""
        schema = self.resolver.inline(tool.input_schema, self.defs, max_depth=self.max_depth, source=tool.source,
                                      tool=tool.id)
        index = self.shared.get(("pruned",))
        if not isinstance(index, _PrunedIndex):
            index = self.shared[("pruned",)] = _PrunedIndex()
        for pointer, message in index.lookup(self.resolver.diagnostics.items, tool.id):
            ctx.loss(codes.RECURSION_PRUNED, pointer, f"recursion cut at depth {self.max_depth}: {message}")
        return schema

    def memo(self, target: str, strict: bool) -> dict[Any, Any]:
        """The subtree memo of one target and mode (see `Lowering.memo`)."""
        key = ("memo", target, str(strict), self.options_key)
        found = self.shared.get(key)
        if not isinstance(found, dict):
            found = self.shared[key] = {}
        return found


class _PrunedIndex:
    """The resolver's pruned-recursion diagnostics by tool, read incrementally (the resolver reports once)."""

    def __init__(self) -> None:
        self.scanned = 0
        self.by_tool: dict[str, list[tuple[str, str]]] = {}

    def lookup(self, items: list[Diagnostic], tool_id: str) -> list[tuple[str, str]]:
        for diagnostic in items[self.scanned:]:
            if diagnostic.code == RECURSION_PRUNED and diagnostic.tool:
                self.by_tool.setdefault(diagnostic.tool, []).append((diagnostic.pointer, diagnostic.message))
        self.scanned = len(items)
        return self.by_tool.get(tool_id, [])


@dataclass
class Lowered:
    """One tool, lowered for one target: the definition exactly as it goes into the request's tools array."""

    tool: Tool
    name: str
    definition: JsonObject
    parameters: JsonObject | None
    """The lowered argument schema (None: the provider's way of saying "no arguments")."""
    strict: bool
    losses: list[Diagnostic]
    problems: list[tuple[str, str]]
    """Why this lowering cannot be strict (empty when it is, or when strict was not attempted)."""
    renamed_keys: dict[str, str] = field(default_factory=dict)
    arg_shape: JsonObject | None = None
    """How to rewrite the model's arguments back (name-map `arguments`, before renames), if anything."""
    arg_defs: JsonObject = field(default_factory=dict)
    """Name-map `defs` for `arg_shape`."""


class Dialect(Protocol):
    caps: Capabilities

    def lower(self, tool: Tool, name: str, env: LowerEnv, *, strict: bool) -> Lowered: ...


def truncate_description(text: str, ctx: Lowering) -> str:
    limit = ctx.caps.max_description
    if limit is None or len(text) <= limit:
        return text
    ctx.loss(codes.DESCRIPTION_TRUNCATED, "", f"tool description cut from {len(text)} to {limit} characters")
    return text[: limit - 1].rstrip() + "…"


def tool_description(tool: Tool) -> str:
    return tool.description or tool.title or ""
