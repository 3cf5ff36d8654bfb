"""The schema walker `bundle` and `inline` share.

Why not jsonref here: `jsonref.replace_refs` produces lazy proxies (or, with `proxies=False`, cyclic Python
objects for recursive schemas) and drops `$ref` siblings unless told otherwise; neither is a bundle with
local `$defs`, neither tracks where a ref sits (for located diagnostics), and neither lets us memoise per
shared definition or stop exponential fan-out. This walker is schema-aware (a `$ref` inside `enum`,
`const`, `default`, `examples` or a `properties` *name* is data), copies only what changes (untouched
subtrees are shared with the input: results are read-only, callers copy before mutating), and recurses one
Python frame per schema level with an explicit depth limit (`codes.MAX_NESTING`, TC208).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from compiler.refs import codes
from compiler.refs.pointers import Loc, render
from compiler.refs.scope import Failure, Scope, Target
from compiler.schema import DEFINITIONS, DYNAMIC, KEYWORDS, SCHEMA, SCHEMA_MAP, is_annotation

Report = Callable[[str, str, str, Hashable | None], bool]
"""(code, message, pointer, once-key) → whether the diagnostic was emitted (False: already reported once)."""

_IDENTIFIERS = ("$id", "$schema")


class Walker:
    """Copy-on-write walk of one schema; subclasses decide what a `$ref` becomes (`on_ref`)."""

    def __init__(self, scope: Scope, report: Report) -> None:
        self.scope = scope
        self._report = report
        self.emitted = 0
        """Diagnostics emitted so far (a memoised result must not have produced any)."""
        self.impure = 0
        """Events that make a result depend on the call (pruning, failures, non-shared targets)."""
        self.count = 0
        """Schema objects produced so far."""
        self.cuts = 0
        """Budget and depth cut-offs: a result that met one depends on where it was computed."""
        self._said: set[tuple[str, str]] = set()

    def note(
        self, code: str, message: str, loc: Loc, once: Hashable | None = None, *, ref: bool = True
    ) -> None:
        self.impure += 1
        pointer = render(loc) + ("/$ref" if ref else "")
        if self._report(code, message, pointer, once):
            self.emitted += 1

    def note_once_per_call(self, code: str, what: str, message: str, loc: Loc, *, ref: bool = True) -> None:
        self.impure += 1
        if (code, what) not in self._said:
            self._said.add((code, what))
            self.note(code, message, loc, ref=ref)

    def said_codes(self) -> set[str]:
        """Codes `note_once_per_call` was asked for in this call (whether or not the reporter emitted them)."""
        return {code for code, _what in self._said}

    def fail(self, failure: Failure, loc: Loc) -> None:
        self.note(failure.code, failure.message, loc)

    def walk(self, node: Any, base: str, loc: Loc, depth: int, root: bool = False) -> Any:
        if not isinstance(node, dict):
            return node
        if depth > codes.MAX_NESTING:
            message = (
                f"schema nesting exceeds {codes.MAX_NESTING} levels; the deeper part is replaced by {{}}"
            )
            self.note_once_per_call(codes.TOO_DEEP, "", message, loc, ref=False)
            self.cuts += 1
            return {}
        self.count += 1
        scope = self.scope
        base = scope.apply_id(node, base)
        ref = node.get("$ref")
        if not isinstance(ref, str):
            ref = None
        elif scope.legacy:
            # Drafts <= 7 ignore every sibling of $ref; annotations are kept (harmless, useful to models).
            out = {k: v for k, v in node.items() if k == "$ref" or is_annotation(k)}
            return self.on_ref(node, out, ref, base, loc, depth, len(out) != len(node))
        out = {}
        changed = False
        walk = self.walk
        for key, value in node.items():
            kind = KEYWORDS.get(key)
            if kind is None:
                if key == "$anchor" or (not root and key in _IDENTIFIERS):
                    changed = True
                else:
                    out[key] = value
                continue
            if kind == DEFINITIONS:
                changed = True
                continue
            if kind == DYNAMIC:
                self.note_once_per_call(
                    codes.UNSUPPORTED, key, f"{key} is not supported; kept as written", (loc, key), ref=False
                )
                out[key] = value
                continue
            child_loc = (loc, key)
            new: Any
            if kind == SCHEMA or (isinstance(value, dict) and kind != SCHEMA_MAP):
                new = walk(value, base, child_loc, depth + 1)
            elif isinstance(value, list) and kind != SCHEMA_MAP:
                # Plain loops, not comprehensions: in 3.11 a comprehension is one more Python frame per level.
                items = []
                differs = False
                for i, item in enumerate(value):
                    walked = walk(item, base, (child_loc, i), depth + 1)
                    differs = differs or walked is not item
                    items.append(walked)
                new = items if differs else value
            elif isinstance(value, dict):
                mapped = {}
                differs = False
                for name, item in value.items():
                    walked = walk(item, base, (child_loc, name), depth + 1)
                    differs = differs or walked is not item
                    mapped[name] = walked
                new = mapped if differs else value
            else:
                new = value
            if new is not value:
                changed = True
            out[key] = new
        if ref is None:
            return out if changed else node
        return self.on_ref(node, out, ref, base, loc, depth, changed)

    def run(self, schema: Any) -> Any:
        raise NotImplementedError

    def on_ref(
        self,
        node: dict[str, Any],
        out: dict[str, Any],
        ref: str,
        base: str,
        loc: Loc,
        depth: int,
        changed: bool,
    ) -> Any:
        raise NotImplementedError

    def checked(self, ref: str, base: str, loc: Loc) -> Target | None:
        """Resolve, reporting failures and empty loops (TC206)."""
        target = self.scope.resolve(ref, base)
        if isinstance(target, Failure):
            self.fail(target, loc)
            return None
        if self.scope.loops(target):
            self.note(codes.EMPTY_LOOP, f"$ref {ref!r} starts a $ref loop that never reaches a schema", loc)
            return None
        return target


REFUSAL_MARK = "toolc: $ref"
"""In the description of every `refusal` (and so in what `refused_ref` recognises)."""
_REFUSED = re.compile(r"(?:^|\()toolc: \$ref (.+) could not be resolved\)?$", re.DOTALL)


def refusal(siblings: dict[str, Any], ref: str) -> dict[str, Any]:
    """What an unresolvable `$ref` becomes: its siblings plus a description saying why the ref is gone."""
    out = {k: v for k, v in siblings.items() if k != "$ref"}
    note = f"{REFUSAL_MARK} {ref!r} could not be resolved"
    existing = out.get("description")
    out["description"] = f"{existing} ({note})" if isinstance(existing, str) and existing else note
    return out


def refused_ref(node: Any) -> str | None:
    """The `$ref` (as written, quoted) a `refusal` stands for, or None: how a reader of OpenAPI objects tells an
    object that was lost from one that is empty."""
    if not isinstance(node, dict) or "$ref" in node:
        return None
    description = node.get("description")
    if not isinstance(description, str) or REFUSAL_MARK not in description:
        return None  # the common case, without the regular expression
    match = _REFUSED.search(description)
    return match.group(1) if match else None


_LITERALS = frozenset({"const", "default", "enum", "examples", "example"})
_DEFS = "#/$defs/"


def _own_lost_and_uses(schema: Any) -> tuple[str | None, set[str]]:
    """The first `refusal` in `schema` itself (not through its `$defs` references), and the definitions it uses."""
    pending, uses = [schema], set()
    lost: str | None = None
    while pending:
        node = pending.pop()
        if isinstance(node, list):
            pending.extend(node)
        elif isinstance(node, dict):
            lost = lost or refused_ref(node)
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(_DEFS):
                uses.add(ref[len(_DEFS):].split("/", 1)[0].replace("~1", "/").replace("~0", "~"))
            pending.extend(value for key, value in node.items() if key not in _LITERALS)
    return lost, uses


class LostRefs:
    """Which `$ref` that could not be resolved (a `refusal`) a schema reaches, itself or through the `#/$defs/<name>`
    definitions it uses: how a reader decides what a lost file costs one tool (its input: the tool; its output:
    the output schema). The definitions are read once, and a definition's verdict is found once for all the tools
    that use it (Microsoft Graph's definitions reach one another: walking each tool's closure would be quadratic)."""

    def __init__(self, definitions: Mapping[str, Any]) -> None:
        own: dict[str, str] = {}
        used_by: dict[str, set[str]] = {}
        for name, definition in definitions.items():
            lost, uses = _own_lost_and_uses(definition)
            if lost is not None:
                own[name] = lost
            for used in uses:
                used_by.setdefault(used, set()).add(name)
        # A definition that uses a lost one is lost too: spread each loss back along the references, once.
        self._lost = dict(own)
        pending = list(own)
        while pending:
            name = pending.pop()
            for user in sorted(used_by.get(name, ())):
                if user not in self._lost:
                    self._lost[user] = self._lost[name]
                    pending.append(user)

    def of(self, schema: Any) -> str | None:
        lost, uses = _own_lost_and_uses(schema)
        return lost or next((self._lost[name] for name in sorted(uses) if name in self._lost), None)


def merge(siblings: dict[str, Any], target: Any) -> Any:
    """`{$ref: T, ...siblings}` without the `$ref`, with exactly the same meaning.

    Annotation-only siblings merge into T (siblings win). Otherwise T joins the siblings' `allOf`: both `$ref`
    and `allOf` are in-place applicators in 2020-12, so `unevaluated*` next to them sees the same annotations.
    """
    if not siblings:
        return target
    if target is True:
        return siblings
    if target is False:
        target = {"not": {}}
    if not isinstance(target, dict):
        return siblings
    if all(is_annotation(key) for key in siblings):
        return {**target, **siblings}
    merged = dict(siblings)
    existing = siblings.get("allOf")
    merged["allOf"] = [*existing, target] if isinstance(existing, list) else [target]
    return merged


def prune(scope: Scope, target: Target) -> Any:
    """A referenced schema cut down to its `type` and `description` (following a few `$ref` hops to find them)."""
    node, base = target.node, target.base
    for _ in range(8):
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if not isinstance(ref, str) or "type" in node:
            break
        nxt = scope.resolve(ref, scope.apply_id(node, base))
        if isinstance(nxt, Failure):
            break
        node, base = nxt.node, nxt.base
    if not isinstance(node, dict):
        return node
    return {key: node[key] for key in ("type", "description") if key in node}


__all__ = ["REFUSAL_MARK", "Report", "Walker", "merge", "prune", "refusal", "refused_ref"]
