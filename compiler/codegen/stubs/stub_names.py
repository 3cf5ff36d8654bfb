"""A source's stub names: each tool's function name, each function's model class stem, and which function names
were cut (TC612) or renamed for a collision (TC604). The stubs (`stub_packages`) and code mode
(`router.codemode`) name functions alike.

`unique_names` reads every name of the source, so naming is one job per source, not per tool: made once per
compile (before the router's child is forked, so both use it) and kept for the next compile by what it reads,
the set of tool names and the identifier length limit (issue 27: Microsoft Graph's 11,422 names took 0.3 s in
the stubs and again in code mode, after any change to any tool). One file per output folder
(`.toolc-cache/<output>.names.json`), holding only this compile's sources; toolc's identity is in the store's
envelope, so another toolc's names are never read, and a damaged entry is made again.
"""

from __future__ import annotations

import hashlib
import keyword
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler.codegen.stubs.identifiers import name_hash, pascal_name, snake_name, unique_names
from compiler.incremental import store
from compiler.infra import limits
from compiler.infra.diagnostics import Diagnostics
from compiler.infra.serialize import compact_json

KIND = "names"
_VERSION = "1"
FUNCTION_RESERVED = frozenset({"models", "tools", "annotations", "context"})
"""Submodule names (a function `tools` would hide the `tools` module in the package) and module-level names."""


@dataclass(frozen=True)
class SourceNames:
    functions: Mapping[str, str]
    """Tool name → its stub's function name."""
    classes: Mapping[str, str]
    """Function name → the stem of its models (`<stem>Input`, `<stem>Output`)."""
    cut: frozenset[str]
    """Tool names longer than `limits.max_identifier_length`, whose function name was cut (TC612)."""
    renamed: frozenset[str]
    """Tool names whose function name is not their plain one: another tool's sanitises alike (TC604)."""


def plain_function_name(raw: str) -> str:
    return snake_name(raw, fallback="tool", prefix="tool", reserved=FUNCTION_RESERVED)


def make_names(tool_names: Iterable[str]) -> SourceNames:
    distinct = sorted(set(tool_names))
    functions = unique_names(distinct, plain_function_name)
    classes = unique_names(functions.values(), lambda raw: pascal_name(raw, fallback="Tool"))
    cap = limits.current().max_identifier_length
    cut = frozenset(raw for raw in distinct if len(raw) > cap and functions[raw].endswith(name_hash(raw)))
    renamed = frozenset(raw for raw in distinct if raw not in cut and functions[raw] != plain_function_name(raw))
    return SourceNames(functions, classes, cut, renamed)


def _key(distinct: list[str]) -> str:
    return hashlib.sha256(compact_json([limits.current().max_identifier_length, distinct])).hexdigest()


class StubNames:
    """One compile's names, per set of tool names: `of` each (from the last compile's when it named the same set),
    then `save`. Without `out_dir` nothing is read or kept."""

    def __init__(self, out_dir: Path | None, diagnostics: Diagnostics) -> None:
        self._out_dir = out_dir
        entry = store.load(out_dir, KIND, diagnostics, _well_formed) if out_dir is not None else None
        self._previous: dict[str, Any] = entry.payload if entry is not None and entry.key == _VERSION else {}
        self._now: dict[str, SourceNames] = {}

    def of(self, tool_names: Iterable[str]) -> SourceNames:
        distinct = sorted(set(tool_names))
        key = _key(distinct)
        found = self._now.get(key)
        if found is None:
            found = _decoded(self._previous.get(key), distinct) or make_names(distinct)
            self._now[key] = found
        return found

    def save(self) -> None:
        if self._out_dir is not None:
            store.save(self._out_dir, KIND, store.Entry(_VERSION, {key: _encoded(names)
                                                                   for key, names in self._now.items()}))


def _encoded(names: SourceNames) -> list[Any]:
    return [dict(names.functions), dict(names.classes), sorted(names.cut), sorted(names.renamed)]


def _decoded(item: Any, distinct: list[str]) -> SourceNames | None:
    """The names kept for `distinct`, or None when the entry is missing or does not name exactly them."""
    if not (isinstance(item, list) and len(item) == 4):
        return None
    functions, classes, cut, renamed = item
    try:
        if not (_names_map(functions, distinct, FUNCTION_RESERVED)
                and _names_map(classes, sorted(set(functions.values())), frozenset())
                and isinstance(cut, list) and isinstance(renamed, list) and set(cut) | set(renamed) <= set(distinct)):
            return None
    except TypeError:  # a name that is not a string
        return None
    return SourceNames(functions, classes, frozenset(cut), frozenset(renamed))


def _names_map(found: Any, keys: list[str], reserved: frozenset[str]) -> bool:
    """`found` names exactly `keys`, each a distinct identifier that is neither a keyword nor `reserved` (a crafted
    entry naming two tools alike would make one `def` hide the other)."""
    return (isinstance(found, dict) and sorted(found) == keys and len(set(found.values())) == len(found)
            and all(isinstance(value, str) and value.isidentifier() and not keyword.iskeyword(value)
                    and value not in reserved for value in found.values()))


def _well_formed(payload: Any) -> bool:
    return isinstance(payload, dict)
