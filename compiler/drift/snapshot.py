"""A syrupy extension for tool schemas: one readable `.tools.json` file per assertion, canonical so that only
meaningful changes show up as snapshot failures.

Canonical form (applied recursively before syrupy's own JSON serialisation, which sorts dict keys):

- `required` (a list of strings) and `type` (a list of type names) are sorted: their order means nothing to a
  validator, to the stubs or to the model.
- `enum` keeps its order: the model reads the values in that order and the stubs' `Literal[...]` follows it,
  so a reordering is a visible change for two audiences of three.
- A list of tool definitions (dicts with a `name`, or OpenAI chat's `{"type": "function", "function": {"name"}}`)
  is sorted by name.
"""

from __future__ import annotations

from typing import Any

from syrupy.extensions.json import JSONSnapshotExtension

from compiler.drift.canonical import canonical_tools

__all__ = ["ToolSchemaExtension", "canonical_tools"]


class ToolSchemaExtension(JSONSnapshotExtension):
    """`assert tools == snapshot.use_extension(ToolSchemaExtension)`; update with `pytest --snapshot-update`."""

    file_extension = "tools.json"

    def serialize(self, data: Any, *, exclude: Any = None, include: Any = None, matcher: Any = None) -> Any:
        return super().serialize(canonical_tools(data), exclude=exclude, include=include, matcher=matcher)
