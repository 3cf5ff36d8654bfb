"""Applying a name-map shape: the arguments a model produced, back in the tool's own form.

The one implementation of the rules in `compiler.providers.namemap` (format 1): `namemap.arguments_to_wire` runs
it on a `schemas/<target>.names.json` map, and every generated router runs this very file, copied verbatim as
`toolc_router/shapes.py` (`codegen.router`), on the maps baked into its `_tables`. So it imports the standard
library only (a router must not need `compiler`) and is kept in the generated code's format (ruff, 88 columns).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

MAX_JSON_DEPTH = 64
"""Levels of nesting below the top a JSON text from a model may have (the router's `validate.MAX_DEPTH`)."""
_STRING_OR_BRACKET = re.compile(
    r'"[^"\\]*+(?:\\.?[^"\\]*+)*+(?:"|\Z)|[\[\]{}]', re.DOTALL
)
"""A string (an unterminated one runs to the end: one pass, never a retry) or a bracket outside strings."""

Shape = Mapping[str, Any]
"""How to rewrite one value: keys `rename`, `optional`, `properties`, `items`, `anyOf`, `keys`, `ref`,
`entries`, `json` (see `compiler.providers.namemap`); `{}` leaves the value as it is."""


class TooDeep(ValueError):
    """A JSON text nested deeper than allowed: refused before `json.loads` recurses into it."""


def nesting_over(text: str, max_depth: int = MAX_JSON_DEPTH) -> bool:
    """Whether `text` opens more than `max_depth + 1` brackets at once outside its strings (exact, linear, no
    decoding). Python's `json` recurses once per level: a few thousand levels raise RecursionError."""
    if text.count("[") + text.count("{") <= max_depth + 1:
        return False  # the common case: too few brackets to be too deep, strings or not
    depth = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        bracket = text[match.start()]
        if bracket in "[{":
            depth += 1
            if depth > max_depth + 1:
                return True
        elif bracket in "]}":
            depth -= 1
    return False


def loads(text: str, max_depth: int = MAX_JSON_DEPTH, **options: Any) -> Any:
    """`json.loads(text, **options)` for text a model wrote: TooDeep (a ValueError) past `max_depth` levels."""
    if nesting_over(text, max_depth):
        raise TooDeep(f"nested deeper than {max_depth} levels; refused")
    return json.loads(text, **options)


def rewrite(value: Any, shape: Shape, defs: Mapping[str, Shape]) -> Any:
    """`value` (as the model produced it) rewritten by `shape`; `defs` holds the shapes `ref`s name. A JSON string
    nested too deeply raises TooDeep (the call is refused, never decoded)."""
    if "ref" in shape:
        shape = defs.get(shape["ref"], {})
    if isinstance(value, dict):
        optional = shape.get("optional", ())
        rename = shape.get("rename", {})
        properties = shape.get("properties", {})
        out: dict[str, Any] = {}
        for key, item in value.items():
            if item is None and key in optional:
                continue  # strict mode made this optional key required but nullable: null means "not given"
            out[rename.get(key, key)] = (
                rewrite(item, properties[key], defs) if key in properties else item
            )
        value = out
    elif isinstance(value, list) and "items" in shape:
        value = [rewrite(item, shape["items"], defs) for item in value]
    value = _restore(value, shape, defs)
    # A union: the first alternative the (already rewritten) value fits says how to rewrite inside it.
    for branch in shape.get("anyOf", ()):
        if _fits(value, defs.get(branch["ref"], {}) if "ref" in branch else branch):
            return rewrite(value, branch, defs)
    return value


def _restore(value: Any, shape: Shape, defs: Mapping[str, Shape]) -> Any:
    """Undo OpenAI strict's reversible transforms: a map sent as `{key, value}` entries becomes the object again,
    a JSON-encoded string the value it encodes (a string that is not JSON is left for validation to refuse)."""
    if (
        "entries" in shape
        and isinstance(value, list)
        and all(
            isinstance(item, dict) and set(item) == {"key", "value"} for item in value
        )
    ):
        return {
            str(item["key"]): rewrite(item["value"], shape["entries"], defs)
            for item in value
        }
    if shape.get("json") and isinstance(value, str):
        try:
            return loads(value)
        except TooDeep:
            raise
        except ValueError:
            return value
    return value


def _fits(value: Any, branch: Shape) -> bool:
    if "keys" in branch:
        return isinstance(value, dict) and set(value) <= set(branch["keys"])
    if "items" in branch or "entries" in branch:
        return isinstance(value, list)
    if branch.get("json"):
        return isinstance(value, str)
    return True
