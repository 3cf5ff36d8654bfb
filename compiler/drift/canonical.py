"""The canonical form of tool schemas used by snapshots and by the diff's restructuring check.

- `required` (a list of strings) and `type` (a list of type names) are sorted: their order means nothing to a
  validator, to the stubs or to the model.
- `enum` keeps its order: the model reads the values in that order and the stubs' `Literal[...]` follows it.
- A list of tool definitions (dicts with a `name`, or `{"function": {"name"}}`) is sorted by name.
Dict keys are sorted by the JSON encoders (`serialize.canonical_json`, syrupy's JSON extension).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_SET_KEYWORDS = ("required", "type")


def _tool_name(item: Any) -> str | None:
    if not isinstance(item, Mapping):
        return None
    if isinstance(item.get("name"), str):
        return str(item["name"])
    function = item.get("function")
    if isinstance(function, Mapping) and isinstance(function.get("name"), str):
        return str(function["name"])
    return None


def canonical_tools(data: Any) -> Any:
    """The canonical form described in the module docstring (a copy; the input is not changed)."""
    if isinstance(data, Mapping):
        out: dict[str, Any] = {}
        for key, value in data.items():
            if key in _SET_KEYWORDS and isinstance(value, list) and all(isinstance(v, str) for v in value):
                out[key] = sorted(value)
            else:
                out[key] = canonical_tools(value)
        return out
    if isinstance(data, list | tuple):
        items = [canonical_tools(item) for item in data]
        names = [_tool_name(item) for item in items]
        if items and all(name is not None for name in names):
            return [item for _, item in sorted(zip(names, items, strict=True), key=lambda pair: str(pair[0]))]
        return items
    return data
