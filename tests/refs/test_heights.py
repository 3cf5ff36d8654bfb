"""How deep an inlined result nests (`resolver._deeper_than`): measured per distinct container, and not again below
a memoised definition whose height the resolver keeps (`_Memo.heights`)."""

from __future__ import annotations

import sys
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.infra.diagnostics import Diagnostics
from compiler.refs import RefResolver
from compiler.refs.codes import MAX_OUTPUT_DEPTH, TOO_DEEP
from compiler.refs.resolver import _deeper_than, _height
from compiler.schema import IdentityMemo

json_trees = st.recursive(
    st.none() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=30)


def _plain(node: Any) -> int:
    if isinstance(node, dict):
        node = list(node.values())
    if not isinstance(node, list):
        return 0
    return 1 + max((_plain(child) for child in node), default=0)


def _containers(node: Any) -> list[Any]:
    found: list[Any] = []
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, dict | list):
            found.append(current)
            pending.extend(current.values() if isinstance(current, dict) else current)
    return found


@settings(max_examples=200, deadline=None)
@given(json_trees, st.data())
def test_known_heights_give_the_same_answer_as_walking_everything(tree: Any, data: st.DataObject) -> None:
    """Shared subtrees whose heights are known (as a memoised definition's are) change nothing: the same height,
    the same verdict at every limit."""
    shared = [tree, tree] if isinstance(tree, dict | list) else tree  # one subtree twice: shared, as memo hits are
    known: IdentityMemo[int] = IdentityMemo()
    for container in _containers(shared):
        if data.draw(st.booleans()):
            known.put(container, _plain(container))
    assert _height(shared, sys.maxsize, known) == _plain(shared)
    for limit in range(_plain(shared) + 2):
        assert _deeper_than(shared, limit, known) == (_plain(shared) > limit)
        assert _deeper_than(shared, limit, IdentityMemo()) == (_plain(shared) > limit)


def test_memoised_definitions_are_measured_once_and_a_chain_of_them_past_the_limit_is_still_cut() -> None:
    """Each inlining reuses the definitions the one before memoised (so its own walk stays shallow); the output
    they add up to passes MAX_OUTPUT_DEPTH and is cut (TC208) though no walk went that deep."""
    defs: dict[str, Any] = {f"D{i}": {"type": "object", "properties": {"n": {"$ref": f"#/$defs/D{i + 1}"}}}
                            for i in range(130)}
    defs["D130"] = {"type": "string"}
    resolver = RefResolver(Diagnostics())
    cut = []
    for start in range(120, -1, -10):
        resolver.diagnostics = Diagnostics()
        result = resolver.inline({"type": "object", "properties": {"x": {"$ref": f"#/$defs/D{start}"}}}, defs,
                                 tool=f"t{start}")
        if resolver.diagnostics.codes() == {TOO_DEEP}:
            assert result == {}
            cut.append(start)
        else:
            assert _plain(result) <= MAX_OUTPUT_DEPTH and not resolver.diagnostics.items
    assert cut == [10, 0]
    memo = resolver._memo(defs)
    assert memo.heights.get(memo.inlined[False]["D20"][0]) == _plain(memo.inlined[False]["D20"][0])
