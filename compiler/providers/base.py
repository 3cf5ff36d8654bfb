"""The one schema walker, the capability flags a dialect declares, and loss reporting.

A dialect (`dialect.py`: `openai.py`, `anthropic.py`, `gemini.py`) declares `Capabilities` and ordered tuples of
small node passes. `lower_schema` walks the resolved schema once, bottom-up (subschemas as `compiler.schema` defines them): each
node's subschemas are lowered first,
then the passes run on a fresh copy of the node in order. A pass never recurses and never mutates its input's
children (they are already lowered copies); the resolver's results are shared, so nothing here mutates them.

Passes report through the `Lowering` context:
- `ctx.loss(code, pointer, message)`: a lossy rewrite (one diagnostic, see `codes.py`);
- `ctx.incompatible(pointer, reason)`: the node cannot be expressed in this mode (strict); the caller falls back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from compiler.infra.diagnostics import Diagnostic
from compiler.infra.serialize import compact_json
from compiler.ir import JsonObject, Tool
from compiler.refs import escape_token
from compiler.schema import IdentityMemo, Step, map_subschemas

ANNOTATIONS_TO_DROP = frozenset({"$schema", "$id", "$anchor", "$comment", "example", "xml", "externalDocs",
                                 "discriminator", "deprecated", "readOnly", "writeOnly", "contentEncoding",
                                 "contentMediaType", "$dynamicAnchor"})
"""Keywords no provider needs to see: documentation for humans and OpenAPI leftovers."""

MARK_OPTIONAL = "x-toolc-optional"
"""Private marker (removed before output): keys a strict lowering made required + nullable."""

Mode = Literal["strict", "loose"]


@dataclass(frozen=True)
class Capabilities:
    """What a target can express. Passes and validators read these flags, never the target's name."""

    target: str
    name_pattern: re.Pattern[str]
    """Tool names the provider accepts."""
    max_name_length: int = 64
    max_description: int | None = None
    """Tool description cap in characters (None: no documented cap)."""
    max_tools: int | None = None
    """Tools per request before the provider refuses the request."""
    tools_advice: str = ""
    """What to do when there are more tools than `max_tools`."""
    strict_field: bool = True
    """The wrapper has a `strict` flag."""


class NotStrict(Exception):
    """Raised by `Lowering.incompatible` in fail-fast strict mode: the caller lowers loose instead."""

    def __init__(self, problem: tuple[str, str]) -> None:
        super().__init__(f"{problem[0]}: {problem[1]}")
        self.problem = problem


@dataclass
class Lowering:
    """One tool lowered for one target in one mode: where losses and incompatibilities are collected."""

    caps: Capabilities
    tool: Tool
    mode: Mode = "loose"
    losses: list[Diagnostic] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    renamed_keys: dict[str, str] = field(default_factory=dict)
    """Provider argument key → original key (top level)."""
    fail_fast: bool = True
    """Stop a strict lowering at its first incompatibility (compile); `toolc explain` collects them all."""
    memo: IdentityMemo[tuple[Any, list[tuple[str, str, str]], list[tuple[str, str]]]] | None = None
    """Lowered subtrees (with the losses and problems found under them) by input-node identity, shared across the tools of one target and mode. Only for
    dialects whose passes leave no per-tool state in nodes (inlined schemas share subtrees between tools)."""
    root_memo: IdentityMemo[Any] | None = None
    """Rebuilt lowered subtrees by identity, for root passes that copy the whole tree (shared like `memo`)."""

    def loss(self, code: str, pointer: str, message: str) -> None:
        self.losses.append(Diagnostic.of(code, message, source=self.tool.source, tool=self.tool.id,
                                         pointer=pointer or "/", provider=self.caps.target))

    def incompatible(self, pointer: str, reason: str) -> None:
        self.problems.append((pointer or "/", reason))
        if self.fail_fast and self.strict:
            raise NotStrict(self.problems[-1])

    @property
    def strict(self) -> bool:
        return self.mode == "strict"


class Totals(NamedTuple):
    """What `validate.strict_limits` adds up over a subtree: property names, enum values, characters, and whether a node
    under it has an enum big enough to check (`validate.STRICT_BIG_ENUM`)."""

    properties: int
    enum_values: int
    chars: int
    big_enum: bool


class LimitMemo:
    """Subtree totals and heights by identity, for one dialect family: lowered subtrees are shared between tools
    (the same definition in every tool that uses it), so each is measured once for all of them. Entries pin
    their nodes (`IdentityMemo`)."""

    def __init__(self) -> None:
        self.totals: IdentityMemo[Totals] = IdentityMemo()
        self.depths: IdentityMemo[int] = IdentityMemo()


class Checked:
    """Subtrees already found valid for one target (by identity; the definitions are pinned so ids stay theirs).
    Lowered subtrees are shared between tools and immutable, so a valid subtree is valid wherever it appears."""

    def __init__(self) -> None:
        self.ids: set[int] = set()
        self.pins: list[Any] = []
        self.last_limits: tuple[Any, list[Any]] | None = None
        """The last schema whose schema-wide limits were measured, and its violations (`validate.limits_of`)."""
        self.limits = LimitMemo()
        """Subtrees whose schema-wide totals were measured (`validate.strict_limits`)."""


NodePass = Callable[[JsonObject, str, Lowering], JsonObject]


def on(*keys: str) -> Callable[[NodePass], NodePass]:
    """Declare the keywords a node pass reacts to: the walker skips it on nodes that have none of them."""

    def mark(apply: NodePass) -> NodePass:
        setattr(apply, "triggers", frozenset(keys))  # noqa: B010 - a plain attribute on a function
        return apply

    return mark


Plan = tuple[tuple[NodePass, frozenset[str] | None], ...]
_PLANS: dict[tuple[NodePass, ...], Plan] = {}


def _plan(passes: tuple[NodePass, ...]) -> Plan:
    plan = _PLANS.get(passes)
    if plan is None:
        plan = _PLANS[passes] = tuple((apply, getattr(apply, "triggers", None)) for apply in passes)
    return plan


def token(name: str | int) -> str:
    if isinstance(name, int):
        return str(name)
    return escape_token(name) if "~" in name or "/" in name else name


def walk(node: Any, pointer: str, ctx: Lowering, passes: tuple[NodePass, ...]) -> Any:
    """Lower `node` and everything under it; booleans and non-schemas come back as they are."""
    if not isinstance(node, dict):
        return node
    if ctx.memo is None or not pointer:
        return _walk(node, pointer, ctx, passes)
    hit = ctx.memo.get(node)
    if hit is not None:
        result, losses, problems = hit
        for code, relative, message in losses:
            ctx.loss(code, pointer + relative, message)
        for relative, reason in problems:
            ctx.incompatible(pointer + relative, reason)
        return result
    first_loss, first_problem = len(ctx.losses), len(ctx.problems)
    result = _walk(node, pointer, ctx, passes)
    cut = len(pointer)
    losses = [(d.code, d.pointer[cut:], d.message) for d in ctx.losses[first_loss:]]
    problems = [(at[cut:], why) for at, why in ctx.problems[first_problem:]]
    ctx.memo.put(node, (result, losses, problems))
    return result


def _walk(node: JsonObject, pointer: str, ctx: Lowering, passes: tuple[NodePass, ...]) -> Any:
    def lower(sub: Any, step: Step) -> Any:
        key, name = step
        return walk(sub, f"{pointer}/{key}" if name is None else f"{pointer}/{key}/{token(name)}", ctx, passes)

    out: JsonObject = map_subschemas(node, lower)
    for apply, triggers in _plan(passes):
        if triggers is None or not triggers.isdisjoint(out):
            out = apply(out, pointer, ctx)
    return out


def lower_schema(schema: JsonObject, ctx: Lowering, passes: tuple[NodePass, ...],
                 root_passes: tuple[NodePass, ...] = ()) -> JsonObject:
    """Walk with the node passes, then run the root-only passes on the result."""
    out: JsonObject = walk(schema, "", ctx, passes)
    for apply in root_passes:
        out = apply(out, "", ctx)
    return out


# --- small helpers the passes share -------------------------------------------------------------------------


def show(value: Any) -> str:
    if isinstance(value, str):
        return value
    return compact_json(value).decode()


def describe(node: JsonObject, moved: Mapping[str, Any]) -> None:
    """Append `(key=value, ...)` to the node's description: the model still reads what the schema cannot say."""
    if not moved:
        return
    text = ", ".join(f"{key}={show(value)}" for key, value in moved.items())
    description = node.get("description")
    node["description"] = f"{description} ({text})" if isinstance(description, str) and description else f"({text})"


def type_set(node: Mapping[str, Any]) -> list[str]:
    kind = node.get("type")
    if kind is None:
        return []
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    return []


def is_object(node: Mapping[str, Any]) -> bool:
    kinds = type_set(node)
    if kinds:
        return "object" in kinds
    return "properties" in node and "anyOf" not in node and "$ref" not in node


def allows_null(node: Any) -> bool:
    """True when the schema surely accepts `null` (used before making a property nullable)."""
    if node is True:
        return True
    if not isinstance(node, (dict, Mapping)):  # dict first: no ABC check
        return False
    if "enum" in node:
        return None in node["enum"]
    if "const" in node:
        return node["const"] is None
    if "anyOf" in node and isinstance(node["anyOf"], list):
        return any(allows_null(branch) for branch in node["anyOf"])
    if "type" in node:
        return "null" in type_set(node)
    return "$ref" not in node and not ({"allOf", "oneOf", "not", "properties", "items"} & node.keys())


_TYPING_KEYS = frozenset({"type", "anyOf", "$ref", "enum", "const"})


def is_typed(node: Any) -> bool:
    """A node that says what it is (strict dialects refuse untyped values). Asked of every node by strict
    passes: a dict is told apart from other mappings without the ABC check."""
    return isinstance(node, (dict, Mapping)) and not _TYPING_KEYS.isdisjoint(node.keys())
