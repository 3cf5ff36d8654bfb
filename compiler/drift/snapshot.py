"""A syrupy extension for tool schemas: one readable `.tools.json` file per assertion, canonical so that only
meaningful changes show up as snapshot failures.

The canonical form is `compiler.drift.canonical.canonical_tools` (described there).
"""

from __future__ import annotations

from typing import Any

from syrupy.extensions.json import JSONSnapshotExtension

from compiler.drift.canonical import canonical_tools

__all__ = ["ToolSchemaExtension"]


class ToolSchemaExtension(JSONSnapshotExtension):
    """`assert tools == snapshot.use_extension(ToolSchemaExtension)`; update with `pytest --snapshot-update`."""

    file_extension = "tools.json"

    def serialize(self, data: Any, *, exclude: Any = None, include: Any = None, matcher: Any = None) -> Any:
        return super().serialize(canonical_tools(data), exclude=exclude, include=include, matcher=matcher)
