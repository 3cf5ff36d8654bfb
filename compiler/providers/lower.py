"""Lower a catalog for one target: names, per-tool lowering with strict fallback, validation, request limits.

For each tool: lower strict when the target has a strict flag and strict is wanted; when the strict lowering
reports problems or fails the validator, lower it loose and say why (TC407). Whatever comes out must pass
`validate.py`; a definition that does not is an error (TC430) and the tool is left out for that target.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler.config import Config
from compiler.infra.diagnostics import CompilerError, Diagnostic
from compiler.ir import Catalog, JsonObject, Tool
from compiler.providers import codes
from compiler.providers.base import NotStrict
from compiler.providers.dialect import Budget, Lowered, LowerEnv, LoweringCache, lower_env, options_key
from compiler.providers.namemap import NAME_MAP_FORMAT, tool_entry
from compiler.providers.names import assign_names
from compiler.providers.registry import PROVIDERS
from compiler.providers.reuse import Outcome, PriorLowerings
from compiler.providers.validate import malformed
from compiler.refs import RefResolver


@dataclass
class TargetResult:
    target: str
    lowered: list[Lowered] = field(default_factory=list)
    entries: dict[str, JsonObject] = field(default_factory=dict)
    """Provider name → name-map entry."""
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def name_map(self) -> JsonObject:
        return {"format": NAME_MAP_FORMAT, "target": self.target, "tools": dict(sorted(self.entries.items()))}


def _diag(code: str, target: str, message: str, tool: Tool | None = None, pointer: str = "") -> Diagnostic:
    return Diagnostic.of(code, message, provider=target, pointer=pointer or ("/" if tool else ""),
                         source=tool.source if tool else "", tool=tool.id if tool else "")


def wants_strict(target: str, config: Config) -> bool:
    return PROVIDERS[target].wants_strict(config.providers)


def lower_tool(target: str, tool: Tool, name: str, env: LowerEnv, *,
               strict: bool) -> tuple[Lowered | None, JsonObject | None, list[Diagnostic]]:
    """One tool for one target: (lowered, name-map entry, diagnostics). None when it cannot be emitted."""
    dialect = PROVIDERS[target]
    broken = env.cache.malformed.get(tool.id)
    if broken is None:
        broken = env.cache.malformed[tool.id] = malformed(tool.input_schema)
    if broken:
        return None, None, [_diag(codes.MALFORMED_SCHEMA, target, "input schema left out: "
                                  + "; ".join(str(v) for v in broken), tool, broken[0].pointer)]
    try:
        try:
            lowered = dialect.lower(tool, name, env, strict=strict)
            problems = lowered.problems
            violations = dialect.check(lowered.definition, env.checked(dialect.group)) if not problems else []
        except NotStrict as stop:
            problems, violations = [stop.problem], []
        if strict and (problems or violations):
            reasons = [f"{at}: {why}" for at, why in problems] + [str(v) for v in violations]
            lowered = dialect.lower(tool, name, env, strict=False)
            lowered.losses.insert(0, _diag(codes.NOT_STRICT, target, "sent with strict: false because "
                                           + "; ".join(sorted(set(reasons))[:5])
                                           + (f" (+{len(set(reasons)) - 5} more)" if len(set(reasons)) > 5 else ""),
                                           tool))
            violations = dialect.check(lowered.definition, env.checked(dialect.group))
    except CompilerError as exc:
        return None, None, [exc.diagnostic]
    if violations:
        text = "; ".join(str(v) for v in violations[:5])
        return None, None, [*lowered.losses, _diag(codes.INVALID_OUTPUT, target,
                                                   f"lowered definition fails the validator: {text}", tool)]
    return lowered, name_entry(lowered, env.cache), lowered.losses


def name_entry(lowered: Lowered, cache: LoweringCache) -> JsonObject:
    """`tool_entry`, made once for the targets of a family: Chat Completions and Responses share the argument
    shapes their first lowering extracted (`FamilyLowering.shapes`), so the second gets the first's entry (a deep
    copy and a walk of the shapes each; entries are only read from then on)."""
    shape = lowered.arg_shape
    if shape is None or lowered.renamed_keys:
        return tool_entry(lowered)
    known = cache.entries.get(shape)
    if known is not None and known[:2] == (lowered.tool.id, lowered.strict) and known[2] is lowered.arg_defs:
        return known[3]
    entry = tool_entry(lowered)
    cache.entries.put(shape, (lowered.tool.id, lowered.strict, lowered.arg_defs, entry))
    return entry


def over_budget(result: TargetResult, budget: Budget) -> list[int]:
    """Indexes in `result.lowered` of the strict tools past the per-request limits strict tools share, in order:
    those are sent non-strict (TC421). Whether a tool is past them does not depend on how it lowers loose."""
    dialect = PROVIDERS[result.target]
    tools = optional = unions = 0
    past: list[int] = []
    for index, item in enumerate(result.lowered):
        if not item.strict or item.parameters is None:
            continue
        extra_optional, extra_unions = dialect.strict_cost(item.parameters)
        if (tools + 1 > budget.strict_tools or optional + extra_optional > budget.optional_parameters
                or unions + extra_unions > budget.union_parameters):
            past.append(index)
            continue
        tools, optional, unions = tools + 1, optional + extra_optional, unions + extra_unions
    return past


def send_loose(result: TargetResult, index: int, loose: Lowered | None, entry: JsonObject | None,
               budget: Budget) -> None:
    """Put the loose lowering of a tool past the strict budget in place of its strict one (kept when the tool
    cannot be lowered loose)."""
    if loose is None or entry is None:
        return
    item = result.lowered[index]
    result.lowered[index] = loose
    result.entries[item.name] = entry
    result.diagnostics.append(_diag(codes.STRICT_BUDGET, result.target, f"sent non-strict: {budget.describe()}",
                                    item.tool))


def too_many_tools(result: TargetResult) -> None:
    """TC420: more tools than one request of the target accepts."""
    caps = PROVIDERS[result.target].caps
    if caps.max_tools is not None and len(result.lowered) > caps.max_tools:
        result.diagnostics.append(_diag(codes.TOO_MANY_TOOLS, result.target,
                                        f"{len(result.lowered)} tools; a request accepts at most {caps.max_tools}: "
                                        f"{caps.tools_advice}"))


def _lower_or_reuse(target: str, tool: Tool, name: str, env: LowerEnv, strict: bool,
                  prior: PriorLowerings | None) -> tuple[Lowered | None, JsonObject | None, list[Diagnostic]]:
    """`lower_tool` through the last compile's lowerings: a hit replays the resolver's diagnostics into its sink as
    lowering did."""
    sink = env.resolver.diagnostics
    found = prior.get(tool, name, strict) if prior is not None else None
    if found is not None:
        sink.extend(found.resolver_diagnostics)
        return found.lowered, found.entry, found.diagnostics
    before = len(sink)
    lowered, entry, diagnostics = lower_tool(target, tool, name, env, strict=strict)
    if prior is not None:
        prior.put(tool, name, strict, Outcome(lowered, entry, diagnostics, sink.items[before:]))
    return lowered, entry, diagnostics


@dataclass(frozen=True)
class TargetPlan:
    """What is decided for a target before any tool is lowered: its provider names and whether strict is asked."""

    target: str
    names: dict[str, str]
    """Tool id → provider name (a tool without one is not lowered for the target)."""
    name_diagnostics: list[Diagnostic]
    strict: bool


def plan_target(catalog: Catalog, target: str, config: Config) -> TargetPlan:
    names, diagnostics = assign_names(catalog.tools, target, PROVIDERS[target].mangler, config.names)
    return TargetPlan(target, names, diagnostics, wants_strict(target, config))


def lower_target(catalog: Catalog, resolver: RefResolver, target: str, config: Config,
                 cache: LoweringCache | None = None, prior: PriorLowerings | None = None) -> TargetResult:
    """`cache` carries results one target can reuse from another within a build (pass the same one); `prior`
    gives back what the last compile lowered for a tool whose inputs did not change, and records the rest.
    (A compile lowers its targets together, split by tools: `providers/slices.py`.)"""
    plan = plan_target(catalog, target, config)
    result = TargetResult(target)
    result.diagnostics.extend(plan.name_diagnostics)
    options_text = options_key(config.providers)
    cache = LoweringCache() if cache is None else cache
    envs: dict[str, LowerEnv] = {}
    for tool in catalog.tools:
        if tool.id not in plan.names:
            continue
        env = envs[tool.id] = lower_env(resolver, catalog.definitions_for(tool), config, cache,
                                        options_text=options_text)
        lowered, entry, diagnostics = _lower_or_reuse(target, tool, plan.names[tool.id], env, plan.strict, prior)
        result.diagnostics.extend(diagnostics)
        if lowered is not None and entry is not None:
            result.lowered.append(lowered)
            result.entries[lowered.name] = entry
    budget = PROVIDERS[target].budget
    if budget is not None and plan.strict:
        for index in over_budget(result, budget):
            item = result.lowered[index]
            loose, entry, _diagnostics = _lower_or_reuse(target, item.tool, item.name, envs[item.tool.id], False,
                                                         prior)
            send_loose(result, index, loose, entry, budget)
    too_many_tools(result)
    return result
