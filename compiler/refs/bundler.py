"""`bundle`: a self-contained schema whose every `$ref` is `#/$defs/<name>` of its own root.

Each reached target is lifted once into `$defs` (shared definitions keep their names; the schema's own
`$defs` too; `#/definitions/X` becomes `X`; other pointers, anchors and `$id` resources get a deterministic
name from their location, made unique with `_2`, `_3` ...). `$id`/`$anchor` are dropped below the root: once
every ref is a root-local pointer, identifiers would only change what those pointers mean.

Memo: a shared definition whose refs all lead to shared definitions by fragment (`#/$defs/N`) bundles to
the same output for every tool, so that output and its dependency names are kept per `defs` object.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from compiler.refs.pointers import DEFAULT_BASE, Loc, defs_ref, escape_token
from compiler.refs.scope import Scope, Target
from compiler.refs.walker import Report, Walker, refusal

BundleMemo = dict[str, tuple[Any, tuple[str, ...]]]


class Bundler(Walker):
    def __init__(self, scope: Scope, report: Report, memo: BundleMemo | None) -> None:
        super().__init__(scope, report)
        self.memo = memo if not scope.shadowed else None
        self.names: dict[Any, str] = {}
        self.taken: set[str] = set()
        self.queue: deque[tuple[str, Target]] = deque()
        self.out_defs: dict[str, Any] = {}
        self.deps: list[str] = []

    def run(self, schema: Any) -> Any:
        root = self.walk(schema, DEFAULT_BASE, "", 0, root=True)
        while self.queue:
            name, target = self.queue.popleft()
            shared = target.shared if self.memo is not None else None
            if shared is not None and self.memo is not None:
                hit = self.memo.get(shared)
                if hit is not None:
                    self.out_defs[name] = hit[0]
                    for dep in hit[1]:
                        self._name_shared(dep)
                    continue
            impure, emitted = self.impure, self.emitted
            self.deps = []
            self.out_defs[name] = self.walk(target.node, target.base, target.loc, 1)
            if (
                shared is not None
                and self.memo is not None
                and self.impure == impure
                and self.emitted == emitted
            ):
                self.memo[shared] = (self.out_defs[name], tuple(self.deps))
        if not isinstance(root, dict):
            return root
        if not self.out_defs and root is schema and "$defs" not in schema and "definitions" not in schema:
            return root
        result = dict(root)
        result.pop("$defs", None)
        if self.out_defs:
            result["$defs"] = {name: self.out_defs[name] for name in sorted(self.out_defs)}
        return result

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
        if target.shared is not None and ref.startswith("#"):
            self.deps.append(target.shared)
        else:
            self.impure += 1
        new = defs_ref(self._name(target))
        if new == ref and not changed:
            return node
        out["$ref"] = new
        return out

    def _name(self, target: Target) -> str:
        name = self.names.get(target.key)
        if name is not None:
            return name
        if target.shared is not None:
            name = target.shared
        elif target.own_def is not None:
            name = target.own_def
        else:
            hint = target.hint or "def"
            name, n = hint, 2
            while name in self.taken or name in self.scope.own_defs or name in self.scope.defs:
                name, n = f"{hint}_{n}", n + 1
        self.names[target.key] = name
        self.taken.add(name)
        self.queue.append((name, target))
        return name

    def _name_shared(self, name: str) -> None:
        if ("$defs", name) in self.names:  # `Target.key` of a shared definition: named already, nothing to make
            return
        node = self.scope.defs[name]
        self._name(
            Target(
                node,
                self.scope.root_base,
                "/$defs/" + escape_token(name),
                name,
                shared=name,
            )
        )
