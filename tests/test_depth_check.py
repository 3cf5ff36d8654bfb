"""The nesting check every JSON document passes before recursive code sees it (`infra.loading.check_depth`): the
verdict and its location, on documents deep, wide and deep, and past what orjson can write."""

from __future__ import annotations

from typing import Any

import pytest

from compiler.infra import loading
from compiler.infra.diagnostics import CompilerError
from compiler.infra.limits import NESTING_TOO_DEEP, Limits

LIMITS = Limits(max_depth=8)


def _nested(levels: int, leaf: Any) -> Any:
    """`levels` containers, alternating objects and lists, around `leaf`."""
    node = leaf
    for level in range(levels, 0, -1):
        node = {"k": node} if level % 2 else [node]
    return node


def _verdict(data: Any) -> str | None:
    try:
        loading.check_depth(data, source="doc.json", limits=LIMITS)
    except CompilerError as exc:
        assert exc.diagnostic.code == NESTING_TOO_DEEP
        return exc.diagnostic.pointer
    return None


@pytest.mark.parametrize(("data", "pointer"), [
    (_nested(8, "text"), None),
    (_nested(8, {}), "/k/0/k/0/k/0/k/0"),  # an empty container past the limit counts, as it always did
    (_nested(8, []), "/k/0/k/0/k/0/k/0"),
    (_nested(9, 1), "/k/0/k/0/k/0/k/0"),
    ({"wide": [_nested(6, "x\n" + " " * 40)], "deep": _nested(8, None)}, "/deep/k/0/k/0/k/0/k"),
    ({"a": [1, 2**70, _nested(7, 1)]}, "/a/2/k/0/k/0/k/0"),  # orjson cannot write 2**70: the loop decides
    (_nested(300, 1), "/k/0/k/0/k/0/k/0"),  # past orjson's 254 levels too
    (_nested(7, [0] * 10_000), None),  # wide at the bottom: indented, it would be 7 levels of padding per zero
])
def test_the_verdict_and_its_location_are_the_loop_s(data: Any, pointer: str | None) -> None:
    assert _verdict(data) == pointer == loading._too_deep_pointer(data, LIMITS.max_depth)
