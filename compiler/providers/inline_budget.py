"""The per-tool size budget of inlined schemas (`providers.max_inline_nodes`).

Inlining copies every definition a tool reaches into the tool; on documents whose definitions reach most of the
others (Microsoft Graph's entities link to each other) one tool inlines to millions of schema objects, and 11,000
such tools do not fit in memory or in a request. Before inlining, each tool is sized (`RefResolver.inlined_size`,
which stops at the budget). Sizing the same big definition again for every tool that names it would cost more
than the lowering, so each shared definition a tool names directly is sized once per build: an over-budget
definition makes every tool naming it over budget (it is expanded there from the same start, so the count is the
same). Tools whose named definitions are each within budget are then sized whole.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from compiler.ir import JsonObject, Tool
from compiler.refs import RefResolver
from compiler.schema import subschemas

_SHARED_PREFIX = "#/$defs/"


def _named_refs(schema: Any) -> Iterator[str]:
    """`$ref`s to shared definitions written in the tool's own schema (references are not followed)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, (dict, Mapping)):  # dict first: no ABC check
            continue
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_SHARED_PREFIX):
            yield ref
        stack.extend(sub for _step, sub in subschemas(node))


class InlineSizer:
    """Sizes tools against one budget for one set of shared definitions (one per source and budget)."""

    def __init__(self, resolver: RefResolver, defs: Mapping[str, JsonObject], budget: int, max_depth: int) -> None:
        self.resolver = resolver
        self.defs = defs
        self.budget = budget
        self.max_depth = max_depth
        self._fits: dict[str, bool] = {}
        self._tools: dict[str, tuple[Tool, bool]] = {}
        """Tool id → the tool and its verdict: every target that inlines asks (and the strict budget asks again)."""

    def _definition_fits(self, ref: str) -> bool:
        found = self._fits.get(ref)
        if found is None:
            found = self._fits[ref] = self.resolver.inlined_size(
                {"$ref": ref}, self.defs, limit=self.budget, max_depth=self.max_depth) is not None
        return found

    def over(self, tool: Tool) -> bool:
        known = self._tools.get(tool.id)
        if known is not None and known[0] is tool:
            return known[1]
        verdict = self._over(tool.input_schema)
        self._tools[tool.id] = (tool, verdict)
        return verdict

    def _over(self, schema: JsonObject) -> bool:
        own = "$defs" in schema or "definitions" in schema  # own definitions may shadow shared names
        if not own and not all(self._definition_fits(ref) for ref in sorted(set(_named_refs(schema)))):
            return True
        return self.resolver.inlined_size(schema, self.defs, limit=self.budget, max_depth=self.max_depth) is None
