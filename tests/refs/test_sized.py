"""A tool sized for the inline budget (`inlined_size`) and then inlined is walked once when the sizing walk was
clean; otherwise `inline` walks it again and reports what it finds, exactly as without sizing."""

from __future__ import annotations

from typing import Any

from compiler.infra.diagnostics import Diagnostics
from compiler.refs import RefResolver

DEFS: dict[str, Any] = {
    "Pet": {"type": "object", "properties": {"name": {"type": "string"}, "tag": {"$ref": "#/$defs/Tag"}}},
    "Tag": {"type": "object", "properties": {"label": {"type": "string"}}},
    "Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}},
}
CLEAN = {"type": "object", "properties": {"pet": {"$ref": "#/$defs/Pet"}}}
RECURSIVE = {"type": "object", "properties": {"head": {"$ref": "#/$defs/Node"}}}


def _fresh(schema: dict[str, Any], depth: int = 3) -> tuple[Any, list[str]]:
    diagnostics = Diagnostics()
    result = RefResolver(diagnostics).inline(schema, DEFS, max_depth=depth, source="s", tool="t")
    return result, [diagnostic.render() for diagnostic in diagnostics]


def _sized_then_inlined(schema: dict[str, Any], limit: int = 1000, sized_depth: int = 3,
                        depth: int = 3) -> tuple[RefResolver, Any, list[str]]:
    diagnostics = Diagnostics()
    resolver = RefResolver(diagnostics)
    resolver.inlined_size(schema, DEFS, limit=limit, max_depth=sized_depth)
    assert not diagnostics.items  # sizing reports nothing
    result = resolver.inline(schema, DEFS, max_depth=depth, source="s", tool="t")
    return resolver, result, [diagnostic.render() for diagnostic in diagnostics]


def test_a_clean_sizing_walk_is_the_inlining() -> None:
    resolver, result, said = _sized_then_inlined(CLEAN)
    assert resolver._last_sized is not None and result is resolver._last_sized.result
    assert (result, said) == _fresh(CLEAN) and said == []


def test_a_sizing_walk_that_pruned_recursion_is_walked_again_and_reports_it() -> None:
    resolver, result, said = _sized_then_inlined(RECURSIVE)
    assert resolver._last_sized is None
    assert (result, said) == _fresh(RECURSIVE)
    assert [line for line in said if "TC205" in line]


def test_a_sizing_at_another_depth_or_over_its_limit_is_not_reused() -> None:
    for kwargs in ({"sized_depth": 1, "depth": 2}, {"limit": 2}):
        _resolver, result, said = _sized_then_inlined(CLEAN, **kwargs)
        assert (result, said) == _fresh(CLEAN, kwargs.get("depth", 3))
