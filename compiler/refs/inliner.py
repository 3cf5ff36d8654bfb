"""`inline`: the same schema with no `$ref` at all.

Each `$ref` is replaced by its target, expanded in turn, merged with the ref's siblings (`walker.merge`).
A target already being expanded `k` times on the current path is expanded again while `k <= max_depth`,
then pruned to its type and description (TC205, once per tool and ref); past half of `codes.MAX_NESTING`
a recursive target is pruned at once, so unrolling never runs into the nesting limit (TC208). `count` is the size of the output
tree (a memoised result counts its full size each time it is used): past `node_budget`, refs are pruned
(TC207), so exponential fan-out ends in bounded time and output.

Memo: the expansion of a shared definition that met no pruning, failure, diagnostic or non-shared target
is the same for every tool and depth, so it is kept per `defs` object with its size.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from compiler.refs import codes
from compiler.refs.pointers import DEFAULT_BASE, Loc
from compiler.refs.scope import Scope, Target
from compiler.refs.walker import Report, Walker, merge, prune, refusal

InlineMemo = dict[str, tuple[Any, int]]


class Inliner(Walker):
    def __init__(
        self,
        scope: Scope,
        report: Report,
        memo: InlineMemo | None,
        *,
        max_depth: int,
        node_budget: int,
        once: Hashable,
    ) -> None:
        super().__init__(scope, report)
        self.memo = memo if not scope.shadowed else None
        self.max_depth = max_depth
        self.budget = node_budget
        self.once = once
        self.active: dict[Hashable, int] = {}
        self.local: dict[Hashable, tuple[Any, int, int]] = {}
        self.memoised: list[Any] = []
        """What this call added to `memo`, in order (inner definitions before the ones that use them)."""

    def run(self, schema: Any) -> Any:
        self.active[id(schema)] = 1
        return self.walk(schema, DEFAULT_BASE, "", 0, root=True)

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
        target = self.checked(ref, base, loc)
        if target is None:
            return refusal(out, ref)
        del out["$ref"]
        opened = self.active.get(target.key, 0)
        # Past half the nesting limit a recursive ref is not unrolled again: unrolling would reach the limit
        # (TC208, an error) where pruning the recursion is the usual warning.
        if opened > self.max_depth or (opened and depth > codes.MAX_NESTING // 2):
            unrolled = min(opened - 1, self.max_depth)
            message = (
                f"recursive $ref {ref!r} unrolled {unrolled} time(s), then pruned to its type and "
                f"description"
            )
            self.note(codes.RECURSION_PRUNED, message, loc, (self.once, ref))
            return merge(out, prune(self.scope, target))
        if target.shared is None or not ref.startswith("#"):
            self.impure += 1
        return merge(out, self._expand(target, opened, ref, loc, depth))

    def _expand(self, target: Target, opened: int, ref: str, loc: Loc, depth: int) -> Any:
        memo = self.memo
        shared = target.shared if memo is not None else None
        if shared is not None and memo is not None:
            hit = memo.get(shared)
            if hit is not None:
                if self.count + hit[1] <= self.budget:
                    self.count += hit[1]
                    return hit[0]
                return self._over_budget(target, ref, loc)
        if self.count >= self.budget:
            return self._over_budget(target, ref, loc)
        key = target.key
        # Within one call the expansion is a function of the target and the open targets on the path: a
        # recursive cluster (Kubernetes' JSONSchemaProps) repeats the same expansions many times over.
        path_key = (key, frozenset(item for item in self.active.items() if item[1]))
        local = self.local.get(path_key)
        if local is not None:
            result, size, impure = local
            if self.count + size <= self.budget:
                self.count += size
                self.impure += impure
                return result
            return self._over_budget(target, ref, loc)
        self.active[key] = opened + 1
        count, impure, emitted, cuts = self.count, self.impure, self.emitted, self.cuts
        result = self.walk(target.node, target.base, target.loc, depth + 2)
        self.active[key] = opened
        if self.cuts == cuts:
            self.local[path_key] = (result, self.count - count, self.impure - impure)
        if shared is not None and memo is not None and self.impure == impure and self.emitted == emitted:
            memo[shared] = (result, self.count - count)
            self.memoised.append(result)
        return result

    def _over_budget(self, target: Target, ref: str, loc: Loc) -> Any:
        message = (
            f"inlining reached the node budget ({self.budget}); $ref {ref!r} and every later one is "
            f"pruned to type and description"
        )
        self.note_once_per_call(codes.BUDGET_EXCEEDED, "", message, loc)
        self.cuts += 1
        self.count += 1
        return prune(self.scope, target)
