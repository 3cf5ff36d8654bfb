"""The `Dialect` base class every provider target derives from, and the result of lowering one tool.

A dialect is a provider, whole: its capability flags (`Capabilities`), its name rules (a `Mangler`), how it
resolves `$ref`s (bundled or inlined), its ordered node and root passes for strict and loose lowering, its
wrapper, its validator, its request budgets and the shape of its `tools` array. `Dialect.lower` is the one
template every target runs (resolve → walk with the passes → root passes → wrap); a subclass fills in the
attributes and overrides a hook only where its provider differs. Nothing outside a dialect module and the
registry (`registry.py`) branches on a target's name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from compiler.diagnostics import CompilerError, Diagnostic
from compiler.ir import JsonObject, Tool
from compiler.providers import codes
from compiler.providers.base import Capabilities, Checked, Lowering, NodePass, lower_schema
from compiler.providers.descriptions import cut
from compiler.providers.inline_budget import InlineSizer
from compiler.providers.names import Mangler
from compiler.providers.validate import Violation, checking
from compiler.refs import RefResolver
from compiler.refs.codes import RECURSION_PRUNED
from compiler.schema import IdentityMemo


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

    def inline_budget(self) -> int:
        """`providers.max_inline_nodes` (0: no budget, as for a bare `LowerEnv` in tests)."""
        value = self.options.get("max_inline_nodes", 0)
        return value if isinstance(value, int) else 0

    def sizer(self, budget: int) -> InlineSizer:
        """The build's sizer for these shared definitions (definition sizes are kept across tools and targets)."""
        key = ("inline-sizer", str(id(self.defs)), str(budget), str(self.max_depth))
        found = self.shared.get(key)
        if not isinstance(found, InlineSizer) or found.defs is not self.defs:
            found = self.shared[key] = InlineSizer(self.resolver, self.defs, budget, self.max_depth)
        return found

    def checked(self, family: str) -> Checked:
        """Subtrees the validator already passed for this dialect family (see `validate.Checked`)."""
        key = ("checked", family)  # targets of one family (Chat Completions, Responses) share their node rules
        found = self.shared.get(key)
        if not isinstance(found, Checked):
            found = self.shared[key] = Checked()
        return found

    def inline(self, tool: Tool, ctx: Lowering, code: str = codes.RECURSION_PRUNED) -> JsonObject:
        """`resolver.inline` for `tool`, with the recursion it pruned reported as this target's loss (TC419)."""
        schema = self.resolver.inline(tool.input_schema, self.defs, max_depth=self.max_depth, source=tool.source,
                                      tool=tool.id)
        index = self.shared.get(("pruned",))
        if not isinstance(index, _PrunedIndex):
            index = self.shared[("pruned",)] = _PrunedIndex()
        for pointer, message in index.lookup(self.resolver.diagnostics.items, tool.id):
            ctx.loss(code, pointer, f"recursion cut at depth {self.max_depth}: {message}")
        return schema

    def memo(self, target: str, strict: bool) -> dict[Any, Any]:
        """A memo of one target and mode, keyed as its user needs."""
        key = ("memo", target, str(strict), self.options_key)
        found = self.shared.get(key)
        if not isinstance(found, dict):
            found = self.shared[key] = {}
        return found

    def node_memo(self, target: str, strict: bool) -> IdentityMemo[Any]:
        """Results by input-node identity for one target and mode (see `Lowering.memo`)."""
        key = ("node-memo", target, str(strict), self.options_key)
        found = self.shared.get(key)
        if not isinstance(found, IdentityMemo):
            found = self.shared[key] = IdentityMemo()
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


@dataclass(frozen=True)
class Budget:
    """Per-request limits strict tools share (Anthropic: 20 strict tools, 24 optional and 16 union parameters).
    Past them, `lower.py` sends the remaining tools non-strict (TC421)."""

    strict_tools: int
    optional_parameters: int
    union_parameters: int

    def describe(self) -> str:
        return (f"a request allows {self.strict_tools} strict tools, {self.optional_parameters} optional and "
                f"{self.union_parameters} union parameters")


@dataclass(frozen=True)
class Deferral:
    """A provider's own deferred loading: every tool sent with `defer_loading: true` beside its tool search tool,
    which loads the few a request needs (`deferred.py` writes it as `schemas/<target>.deferred.json`)."""

    search_tool: JsonObject
    """The tool search tool, first in the array."""
    group_type: str | None = None
    """The wrapper type the deferred functions are grouped in (OpenAI: `namespace`, whose names and descriptions
    the model sees before it searches), or None: listed one by one and unseen until found (Claude)."""
    max_tools: int | None = None
    """Deferred tools one request may carry (None: none documented)."""
    max_bytes: int | None = None
    """The request size limit the whole array must stay under (None: none documented)."""


class Dialect(ABC):
    """One provider target. Subclasses set the class attributes and write `wrap` and `validate`; the other hooks
    have working defaults."""

    target: ClassVar[str]
    """The target's name in project files, `--target` and `schemas/<target>.json` (one of `compiler.targets`)."""
    family: ClassVar[str] = ""
    """Targets of one family share lowered parameters, validator memos and a worker (default: the target)."""
    caps: ClassVar[Capabilities]
    mangler: ClassVar[Mangler]
    """Name rules: what a tool name becomes for this provider (`names.py`)."""
    resolution: ClassVar[Literal["bundle", "inline"]] = "bundle"
    """`bundle`: `$defs` and recursion kept; `inline`: no `$ref`, recursion pruned (reported as TC419)."""
    strict_passes: ClassVar[tuple[NodePass, ...]] = ()
    strict_root: ClassVar[tuple[NodePass, ...]] = ()
    loose_passes: ClassVar[tuple[NodePass, ...]] = ()
    loose_root: ClassVar[tuple[NodePass, ...]] = ()
    budget: ClassVar[Budget | None] = None
    """Per-request limits on strict tools (None: none documented)."""
    recursion_code: ClassVar[str] = codes.RECURSION_PRUNED
    """The loss code a pruned recursion is reported under for this target (TC419 unless the provider has its own)."""
    tokenizer_exact: ClassVar[bool] = False
    """Token counts are exact (the provider's tokenizer is o200k_base) rather than estimates (`tokens.py`)."""
    over_budget_advice: ClassVar[str] = "raise providers.max_inline_nodes to send it inlined"
    """The way out `over_budget`'s diagnostic (TC450) suggests."""
    strict_option: ClassVar[str | None] = None
    """The `providers:` option that turns strict on (None: strict whenever the wrapper has a strict flag)."""
    deferral: ClassVar[Deferral | None] = None
    """The provider's own deferred loading (None: it has none; toolc's discovery form is the fallback)."""

    @property
    def group(self) -> str:
        return self.family or self.target

    # -- choices --------------------------------------------------------------------------------------------

    def wants_strict(self, options: Mapping[str, object]) -> bool:
        if not self.caps.strict_field:
            return False
        return self.strict_option is None or options.get(self.strict_option) is True

    def passes(self, strict: bool, env: LowerEnv) -> tuple[tuple[NodePass, ...], tuple[NodePass, ...]]:
        """(node passes, root passes) for one lowering."""
        return (self.strict_passes, self.strict_root) if strict else (self.loose_passes, self.loose_root)

    def resolution_for(self, env: LowerEnv) -> Literal["bundle", "inline"]:
        return self.resolution

    # -- the template ---------------------------------------------------------------------------------------

    def lower(self, tool: Tool, name: str, env: LowerEnv, *, strict: bool) -> Lowered:
        ctx = Lowering(self.caps, tool, "strict" if strict else "loose", fail_fast=env.fail_fast,
                       memo=env.node_memo(self.group, strict), root_memo=env.node_memo(f"{self.group}-root", strict))
        schema = self.resolve(tool, env, ctx)
        node_passes, root_passes = self.passes(strict, env)
        parameters = lower_schema(schema, ctx, node_passes, root_passes)
        return self.wrap(tool, name, parameters, ctx, env, strict=strict)

    def resolve(self, tool: Tool, env: LowerEnv, ctx: Lowering) -> JsonObject:
        if self.resolution_for(env) == "inline":
            budget = env.inline_budget()
            if budget and env.sizer(budget).over(tool):
                return self.over_budget(tool, env, ctx, budget)
            return env.inline(tool, ctx, self.recursion_code)
        return env.resolver.bundle(tool.input_schema, env.defs, source=tool.source, tool=tool.id)

    def over_budget(self, tool: Tool, env: LowerEnv, ctx: Lowering, budget: int) -> JsonObject:
        """Inlined, `tool` would pass the per-tool budget: by default it is left out (TC450). A dialect whose
        provider accepts `$defs` overrides this to share them instead (`share_defs`)."""
        raise CompilerError(Diagnostic(
            code=codes.INLINE_OVER_BUDGET, severity=codes.severity(codes.INLINE_OVER_BUDGET), provider=self.target,
            message=f"left out: its schema inlined is over {budget} schema objects (providers.max_inline_nodes) "
                    f"and this target cannot share definitions through $ref; {self.over_budget_advice}",
            source=tool.source, tool=tool.id, pointer="/"))

    def share_defs(self, tool: Tool, env: LowerEnv, ctx: Lowering, budget: int) -> JsonObject:
        """`over_budget` for providers that accept `$defs`: the bundled schema, its definitions shared (TC451)."""
        ctx.loss(codes.SHARED_DEFS, "", f"inlined, the schema would pass {budget} schema objects "
                 "(providers.max_inline_nodes): sent with its definitions under $defs")
        ctx.incompatible("", "a schema with shared $defs is sent non-strict")
        return env.resolver.bundle(tool.input_schema, env.defs, source=tool.source, tool=tool.id)

    @abstractmethod
    def wrap(self, tool: Tool, name: str, parameters: JsonObject, ctx: Lowering, env: LowerEnv, *,
             strict: bool) -> Lowered:
        """The definition exactly as it goes into the request's tools array."""

    # -- checking and emitting ------------------------------------------------------------------------------

    @abstractmethod
    def validate(self, definition: Mapping[str, Any]) -> list[Violation]:
        """Violations of one emitted definition (empty: valid), from the generic rules of `validate.py`."""

    def check(self, definition: Mapping[str, Any], checked: Checked | None = None) -> list[Violation]:
        """`validate`, skipping subtrees `checked` (one per dialect family) already saw valid."""
        with checking(checked):
            return self.validate(definition)

    def tools_array(self, definitions: list[JsonObject]) -> list[JsonObject]:
        """What the SDK's `tools` argument takes."""
        return definitions

    def definitions_of(self, tools: list[JsonObject]) -> list[JsonObject]:
        """The inverse of `tools_array`."""
        return tools

    def strict_cost(self, parameters: Mapping[str, object]) -> tuple[int, int]:
        """(optional, union) parameters of one strict schema, as `budget` counts them."""
        return 0, 0


def truncate_description(text: str, ctx: Lowering) -> str:
    limit = ctx.caps.max_description
    if limit is None or len(text) <= limit:
        return text
    out = cut(text, limit)
    ctx.loss(codes.DESCRIPTION_TRUNCATED, "", f"tool description cut from {len(text)} to {len(out)} characters at a "
                                              "sentence or word boundary (the catalog and stubs keep it whole)")
    return out


def tool_description(tool: Tool) -> str:
    return tool.description or tool.title or ""
