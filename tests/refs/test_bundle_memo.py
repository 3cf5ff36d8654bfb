"""`bundle` through the memo of shared definitions: a memoised definition's dependencies are named once per call,
however many of the definitions in the closure use them, and the bundle is the one a fresh resolver makes."""

from __future__ import annotations

from typing import Any

import pytest

from compiler.infra.diagnostics import Diagnostics
from compiler.refs import RefResolver, bundler
from compiler.refs.scope import Target

# Every definition uses every later one: a closure of n definitions has n * (n - 1) / 2 edges.
DEFS: dict[str, Any] = {f"D{i}": {"type": "object", "properties": {f"p{j}": {"$ref": f"#/$defs/D{j}"}
                                                                   for j in range(i + 1, 12)}}
                        for i in range(12)}


def test_a_memoised_closure_names_each_definition_once(monkeypatch: pytest.MonkeyPatch) -> None:
    resolver = RefResolver(Diagnostics())
    tools = [{"type": "object", "properties": {"a": {"$ref": f"#/$defs/D{i}"}}} for i in (0, 1, 0)]
    first = resolver.bundle(tools[0], DEFS, tool="first")  # fills the memo
    made: list[str] = []
    real = Target

    def counted(*args: Any, **kwargs: Any) -> Any:
        made.append(kwargs.get("shared", ""))
        return real(*args, **kwargs)

    monkeypatch.setattr(bundler, "Target", counted)
    again = [resolver.bundle(tool, DEFS, tool=f"t{k}") for k, tool in enumerate(tools)]
    assert len(made) <= 3 * len(DEFS)  # one per definition and call, not one per edge (66 per call)
    fresh = [RefResolver(Diagnostics()).bundle(tool, DEFS) for tool in tools]
    assert again == fresh and again[0] == first
    assert sorted(again[0]["$defs"]) == sorted(DEFS)
    assert sorted(again[1]["$defs"]) == sorted(f"D{i}" for i in range(1, 12))
