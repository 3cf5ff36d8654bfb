"""`RefResolver`: the one object sources, providers and codegen resolve `$ref`s through."""

from __future__ import annotations

import sys
from collections.abc import Hashable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from compiler.infra import limits
from compiler.infra.diagnostics import CompilerError, Diagnostic, Diagnostics, Severity
from compiler.infra.loading import parse_document, read_bytes
from compiler.ir import JsonObject
from compiler.refs import codes
from compiler.refs.bundler import BundleMemo, Bundler
from compiler.refs.external import ExternalBundler, main_file, needs_bundling
from compiler.refs.inliner import InlineMemo, Inliner
from compiler.refs.scope import Scope
from compiler.refs.walker import Report, Walker
from compiler.schema import IdentityMemo, is_legacy

NO_DEFS: Mapping[str, JsonObject] = MappingProxyType({})

_MEMO_SLOTS = 8
_BUDGET_EVERY = 32
"""Resolutions between two looks at the memory budget (reading /proc/self/statm costs a few microseconds)."""


class _Memo:
    """Per shared-definitions object: its bundled and inlined definitions (keeps `defs` alive, so its id is
    never reused while cached)."""

    def __init__(self, defs: Mapping[str, Any]) -> None:
        self.defs = defs
        self.bundled: dict[bool, BundleMemo] = {False: {}, True: {}}
        self.inlined: dict[bool, InlineMemo] = {False: {}, True: {}}
        self.heights: IdentityMemo[int] = IdentityMemo()
        """The JSON levels of each inlined definition in `inlined` (`_height`)."""

    def measure(self, memoised: list[Any]) -> None:
        """Keep the heights of definitions an inlining just memoised (in the order it did: the ones they use
        first), so that checking a tool's depth stops where a memoised definition starts."""
        for result in memoised:
            self.heights.put(result, _height(result, sys.maxsize, self.heights))


class _Inlining(NamedTuple):
    """One `inline` call: its arguments (`key`: depth, source and tool), its result and what it reported that the
    same call made again would report again."""

    schema: JsonObject
    defs: Mapping[str, JsonObject]
    key: tuple[int, str, str]
    result: JsonObject
    replay: list[tuple[str, str, str]]
    """(code, message, pointer) of each diagnostic reported without a once-key."""


class _Sized(NamedTuple):
    """The last `inlined_size` call whose walk was clean: nothing pruned, cut, failed or reported, and no target
    outside the shared definitions. Its result is what `inline` makes of the same call, which reports nothing."""

    schema: JsonObject
    defs: Mapping[str, JsonObject]
    depth: int
    result: JsonObject


def _deeper_than(root: Any, limit: int, known: IdentityMemo[int]) -> bool:
    """Whether `root` nests more than `limit` JSON levels."""
    return _height(root, limit, known) > limit


def _height(root: Any, limit: int, known: IdentityMemo[int]) -> int:
    """The JSON levels of `root` (a scalar: 0; a container: one more than its tallest child), or, once some
    container passes `limit`, that container's height. Results share subtrees (memoised definitions), so heights
    are kept per object: linear in the distinct containers, a loop rather than recursion, and never below a
    container whose height `known` holds (the memoised definitions', measured once for every tool)."""
    if not isinstance(root, dict | list):
        return 0
    found = known.get(root)
    if found is not None:
        return found
    heights: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in heights:
            continue
        children = [c for c in (node.values() if isinstance(node, dict) else node) if isinstance(c, dict | list)]
        if done:
            height = 1 + max((heights[id(c)] for c in children), default=0)
            if height > limit:
                return height
            heights[id(node)] = height
            continue
        stack.append((node, True))
        for child in children:
            if id(child) not in heights:
                found = known.get(child)
                if found is None:
                    stack.append((child, False))
                else:
                    heights[id(child)] = found
    return heights[id(root)]


class RefResolver:
    """Resolves `$ref`s for every source. Results are read-only: they share unchanged subtrees with the input
    and with each other (memoised definitions); copy before mutating. The shared `defs` passed to `bundle` and
    `inline` must not be mutated after first use (results are memoised per `defs` object)."""

    def __init__(self, diagnostics: Diagnostics, *, max_depth: int = 3, node_budget: int = 200_000) -> None:
        self.diagnostics = diagnostics
        self.max_depth = max_depth
        self.node_budget = node_budget
        self._memos: dict[int, _Memo] = {}
        self._once: set[Hashable] = set()
        self._calls = 0
        self._last_inlining: _Inlining | None = None
        self._last_sized: _Sized | None = None
        """The last clean sizing: a tool is sized, then inlined (`providers.inline_budget`), and walked once."""
        """The last `inline` call: the targets of one tool, lowered one after another, ask for it again."""

    # -- files ------------------------------------------------------------------------------------------

    def load_document(
        self, path: Path, *, root: Path | None = None, display: str | None = None
    ) -> JsonObject:
        """Parse `path` and pull in every relative-file `$ref` reachable from it (see `refs.external`).

        Raises `CompilerError` only when the main file itself cannot be read or parsed."""
        where = display or str(path)
        raw = read_bytes(path, display=where)
        data = parse_document(raw, source=where, suffix=path.suffix)
        if not needs_bundling(raw):
            return data  # type: ignore[no-any-return]
        if not isinstance(data, dict):
            raise CompilerError(
                Diagnostic.of(codes.NOT_AN_OBJECT, "a document with file $refs must be a JSON object", source=where)
            )

        def report(code: str, message: str, source: str, pointer: str) -> None:
            if code in _LOST_FILE_REFS:
                # The `$ref` became a `refusal`; what that costs is decided per tool by the source's reader
                # (`walker.LostRefs`): a tool whose input needs it is skipped, one whose output needs it loses its
                # output schema. A document is not refused whole for one broken file: a warning here (the
                # registry's `also` for TC201-TC204).
                self.diagnostics.report(code, message, severity=Severity.WARNING, source=source, pointer=pointer)
                return
            self._emit(code, message, source=source, tool="", pointer=pointer)

        bundler = ExternalBundler(report, root if root is not None else path.resolve().parent)
        result: JsonObject = bundler.run(main_file(path, where, data))
        return result

    # -- schemas ----------------------------------------------------------------------------------------

    def bundle(
        self,
        schema: JsonObject,
        defs: Mapping[str, JsonObject] = NO_DEFS,
        *,
        source: str = "",
        tool: str = "",
    ) -> JsonObject:
        """Self-contained: every `$ref` is `#/$defs/<name>` of the result; only reached definitions are kept;
        recursion kept; `$ref` siblings kept (2020-12 style). Exact semantics are preserved."""
        scope = Scope(schema, defs, legacy=is_legacy(schema))
        memo = self._memo(defs).bundled[scope.legacy] if defs else None
        report = self._reporter(source, tool)
        return self._run(Bundler(scope, report, memo), schema, report)

    def inline(
        self,
        schema: JsonObject,
        defs: Mapping[str, JsonObject] = NO_DEFS,
        *,
        max_depth: int | None = None,
        source: str = "",
        tool: str = "",
    ) -> JsonObject:
        """No `$ref` at all; recursion unrolled to `max_depth` then pruned (TC205); fan-out bounded (TC207)."""
        depth = self.max_depth if max_depth is None else max_depth
        last = self._last_inlining
        if last is not None and last.schema is schema and last.defs is defs and last.key == (depth, source, tool):
            for code, message, pointer in last.replay:
                self._emit(code, message, source=source, tool=tool, pointer=pointer)
            return last.result
        shared = self._memo(defs) if defs else None
        replay: list[tuple[str, str, str]] = []
        report = self._reporter(source, tool, replay)
        sized = self._last_sized
        if sized is not None and sized.schema is schema and sized.defs is defs and sized.depth == depth:
            result = sized.result  # the walk `inlined_size` just made, clean: nothing to report
        else:
            scope = Scope(schema, defs, legacy=is_legacy(schema))
            memo = shared.inlined[scope.legacy] if shared is not None else None
            walker = Inliner(scope, report, memo, max_depth=depth, node_budget=self.node_budget,
                             once=(source, tool))
            result = self._run(walker, schema, report)
            if shared is not None:
                shared.measure(walker.memoised)
        heights = shared.heights if shared is not None else IdentityMemo[int]()
        if _deeper_than(result, codes.MAX_OUTPUT_DEPTH, heights):
            report(codes.TOO_DEEP, f"the inlined schema nests deeper than {codes.MAX_OUTPUT_DEPTH} levels; "
                   "replaced by {}", "", None)
            result = {}
        self._last_inlining = _Inlining(schema, defs, (depth, source, tool), result, replay)
        return result

    def inlined_size(
        self,
        schema: JsonObject,
        defs: Mapping[str, JsonObject] = NO_DEFS,
        *,
        limit: int,
        max_depth: int | None = None,
    ) -> int | None:
        """The node count `inline` would produce, or None when it passes `limit` (the walk stops there, so a
        schema whose inlined form is huge costs `limit` nodes to size). Reports nothing; shares `inline`'s memo
        (a walk cut short is impure, so nothing it saw is memoised)."""
        scope = Scope(schema, defs, legacy=is_legacy(schema))
        shared = self._memo(defs) if defs else None
        memo = shared.inlined[scope.legacy] if shared is not None else None
        walker = Inliner(scope, _silent, memo, max_depth=self.max_depth if max_depth is None else max_depth,
                         node_budget=min(limit, self.node_budget), once=None)
        try:
            result = walker.run(schema)
        except RecursionError:
            return None
        if shared is not None:
            shared.measure(walker.memoised)
        over = walker.count > limit or any(code == codes.BUDGET_EXCEEDED for code in walker.said_codes())
        if not over and walker.impure == 0 and walker.cuts == 0 and not walker.said_codes():
            self._last_sized = _Sized(schema, defs, walker.max_depth, result)
        return None if over else walker.count

    @staticmethod
    def scope(schema: JsonObject, defs: Mapping[str, JsonObject] = NO_DEFS) -> Scope:
        """How `bundle` and `inline` see `schema`'s references, for a reader that follows them lazily (drift):
        `scope.resolve(ref, scope.root_base)` is the node a `$ref` names, or a `Failure`."""
        return Scope(schema, defs, legacy=is_legacy(schema))

    # -- internals --------------------------------------------------------------------------------------

    def _run(self, walker: Walker, schema: JsonObject, report: Report) -> JsonObject:
        self._calls += 1
        if self._calls % _BUDGET_EVERY == 0 and limits.over_budget():
            # Resolution is where a compile grows (every tool of every target); the pipeline turns this into
            # TC139 for the stage that was running.
            raise MemoryError("the compile's memory budget (limits.memory_mb) is spent")
        try:
            result: JsonObject = walker.run(schema)
        except RecursionError:  # a safety net: the walkers' own depth limit should always come first
            report(codes.TOO_DEEP, "schema nesting too deep to resolve", "", None)
            return {}
        return result

    def _memo(self, defs: Mapping[str, Any]) -> _Memo:
        memo = self._memos.get(id(defs))
        if memo is None or memo.defs is not defs:
            if len(self._memos) >= _MEMO_SLOTS:
                self._memos.pop(next(iter(self._memos)))
            memo = self._memos[id(defs)] = _Memo(defs)
        return memo

    def _reporter(self, source: str, tool: str, replay: list[tuple[str, str, str]] | None = None) -> Report:
        """`replay` collects what the same call made again would report (what is reported once is not)."""

        def report(code: str, message: str, pointer: str, once: Hashable | None) -> bool:
            if once is not None:
                key = (code, once)
                if key in self._once:
                    return False
                self._once.add(key)
            elif replay is not None:
                replay.append((code, message, pointer))
            self._emit(code, message, source=source, tool=tool, pointer=pointer)
            return True

        return report

    def _emit(self, code: str, message: str, *, source: str, tool: str, pointer: str) -> None:
        self.diagnostics.report(code, message, source=source, tool=tool, pointer=pointer)


_LOST_FILE_REFS = frozenset({codes.NETWORK_REF, codes.OUTSIDE_ROOT, codes.BAD_POINTER, codes.MISSING_FILE})
"""What `refs.external` replaces with a `refusal` while pulling files in."""


def _silent(code: str, message: str, pointer: str, once: Hashable | None) -> bool:
    return False
