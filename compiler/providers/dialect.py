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

from compiler.config import Config, ProvidersConfig
from compiler.infra.diagnostics import CompilerError, Diagnostic
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


def options_key(options: ProvidersConfig) -> str:
    """The project's per-target options as one string (part of the subtree memo's key)."""
    return repr(sorted(options.model_dump().items()))


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


@dataclass(frozen=True)
class FamilyLowering:
    """Parameters one dialect family lowered for a tool (Chat Completions and Responses lower them once)."""

    parameters: JsonObject
    losses: tuple[Diagnostic, ...]
    description: str
    shapes: tuple[JsonObject, JsonObject]


@dataclass(frozen=True)
class NotStrictHere:
    """A tool that cannot be sent strict, recorded as such (the lowering raises `NotStrict` again from it)."""

    problem: tuple[str, str]


@dataclass
class LoweringCache:
    """What lowerings share within one build: one field per memo (pass the same cache to every target)."""

    malformed: dict[str, list[Violation]] = field(default_factory=dict)
    """Tool id → what makes its source schema unusable (empty: nothing), checked once for every target."""
    sizers: dict[tuple[int, int, int], InlineSizer] = field(default_factory=dict)
    """(shared definitions' id, budget, depth) → the sizer that keeps their sizes across tools and targets."""
    checked: dict[str, Checked] = field(default_factory=dict)
    """Dialect family → subtrees its validator already passed."""
    pruned: _PrunedIndex = field(default_factory=_PrunedIndex)
    memos: dict[tuple[str, bool, str], dict[Any, Any]] = field(default_factory=dict)
    """(user, strict, options) → a memo keyed as its user needs."""
    node_memos: dict[tuple[str, bool, str], IdentityMemo[Any]] = field(default_factory=dict)
    """(user, strict, options) → results by input-node identity."""
    family: dict[tuple[str, str, str, bool], FamilyLowering | NotStrictHere] = field(default_factory=dict)
    """(family, tool id, name, strict) → what the family's first target made of the tool."""
    entries: IdentityMemo[tuple[str, bool, JsonObject, JsonObject]] = field(default_factory=IdentityMemo)
    """A lowering's argument shape → (tool id, strict, name-map defs, its name-map entry): the targets of one
    family share the shapes their first target extracted, and so the entry made from them (`lower.name_entry`)."""


@dataclass(frozen=True)
class LowerEnv:
    """What a dialect needs besides the tool: the shared resolver and the tool's source definitions. Made by
    `lower_env`."""

    resolver: RefResolver
    defs: Mapping[str, JsonObject]
    max_depth: int
    options: ProvidersConfig
    """Per-target options from the project file (`providers:` section)."""
    options_key: str
    """`options` as a memo key part (`lower_env` computes it once per project)."""
    cache: LoweringCache
    fail_fast: bool = True
    """See `Lowering.fail_fast`."""

    def inline_budget(self) -> int:
        """`providers.max_inline_nodes`."""
        return self.options.max_inline_nodes

    def sizer(self, budget: int) -> InlineSizer:
        """The build's sizer for these shared definitions (definition sizes are kept across tools and targets)."""
        key = (id(self.defs), budget, self.max_depth)
        found = self.cache.sizers.get(key)
        if found is None or found.defs is not self.defs:
            found = self.cache.sizers[key] = InlineSizer(self.resolver, self.defs, budget, self.max_depth)
        return found

    def checked(self, family: str) -> Checked:
        """Subtrees the validator already passed for this dialect family (see `validate.Checked`); targets of one
        family (Chat Completions, Responses) share their node rules."""
        return self.cache.checked.setdefault(family, Checked())

    def inline(self, tool: Tool, ctx: Lowering, code: str = codes.RECURSION_PRUNED) -> JsonObject:
        """`resolver.inline` for `tool`, with the recursion it pruned reported as this target's loss (TC419)."""
        schema = self.resolver.inline(tool.input_schema, self.defs, max_depth=self.max_depth, source=tool.source,
                                      tool=tool.id)
        for pointer, message in self.cache.pruned.lookup(self.resolver.diagnostics.items, tool.id):
            ctx.loss(code, pointer, f"recursion cut at depth {self.max_depth}: {message}")
        return schema

    def memo(self, user: str, strict: bool) -> dict[Any, Any]:
        """A memo of one user and mode, keyed as its user needs."""
        return self.cache.memos.setdefault((user, strict, self.options_key), {})

    def node_memo(self, user: str, strict: bool) -> IdentityMemo[Any]:
        """Results by input-node identity for one user and mode (see `Lowering.memo`)."""
        return self.cache.node_memos.setdefault((user, strict, self.options_key), IdentityMemo())


def lower_env(resolver: RefResolver, defs: Mapping[str, JsonObject], config: Config,
              cache: LoweringCache | None = None, *, options_text: str = "", fail_fast: bool = True) -> LowerEnv:
    """The one way a `LowerEnv` is made: the project's depth and provider options, and the build's cache (a fresh
    one when the caller lowers a single tool). `options_text` saves recomputing `options_key` per tool."""
    return LowerEnv(resolver, defs, config.resolver.max_depth, config.providers,
                    options_text or options_key(config.providers), LoweringCache() if cache is None else cache,
                    fail_fast)


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
    """Targets of one family share lowered parameters and validator memos (default: the target)."""
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

    def wants_strict(self, options: ProvidersConfig) -> bool:
        if not self.caps.strict_field:
            return False
        return self.strict_option is None or getattr(options, self.strict_option) is True

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
        raise CompilerError(Diagnostic.of(
            codes.INLINE_OVER_BUDGET,
            f"left out: its schema inlined is over {budget} schema objects (providers.max_inline_nodes) "
            f"and this target cannot share definitions through $ref; {self.over_budget_advice}",
            source=tool.source, tool=tool.id, pointer="/", provider=self.target))

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
