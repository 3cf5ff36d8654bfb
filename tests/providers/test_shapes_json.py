"""`shapes.nesting_over` and `shapes.loads`: JSON text from a model is measured before `json` recurses into it.
The measure must be exact (brackets inside strings do not count, escaped quotes do not end a string) and linear
(an unterminated string or a run of backslashes is one pass, never a retry from each position)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.providers.shapes import MAX_JSON_DEPTH, TooDeep, loads, nesting_over

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab,:'),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='[]{}"\\k'), inner, max_size=3),
    max_leaves=40,
)


def depth(value: Any) -> int:
    """Containers open at once: 0 for a scalar, 1 for `[]`."""
    if isinstance(value, dict):
        return 1 + max((depth(item) for item in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(item) for item in value), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, st.integers(min_value=-1, max_value=6))
def test_the_measure_is_exact(value: Any, max_depth: int) -> None:
    text = json.dumps(value)
    assert nesting_over(text, max_depth) == (depth(value) > max_depth + 1)


@pytest.mark.parametrize(("text", "over"), [
    ('["[[[[[[[["]', False),            # brackets inside a string
    ('["a\\"[[[[[[[["]', False),        # an escaped quote does not end the string
    ('["a\\\\", [[[[[[[]]]]]]]]', True),  # an escaped backslash does
    ('"[[[[[[[[[[', False),             # an unterminated string runs to the end
    ("[[[[[[[[[[", True),               # unclosed brackets still count
])
def test_strings_do_not_count(text: str, over: bool) -> None:
    assert nesting_over(text, 1) is over


def test_hostile_text_is_measured_exactly() -> None:
    """Escapes that never end a string, and a string that never ends: measured, not mistaken for nesting. How long
    they take (one linear pass) is `bench/bench_hostile.py`'s to report, not a test's to assert."""
    assert nesting_over('["' + '\\"' * 300_000) is False
    assert nesting_over('["' + "\\" * 600_001) is False
    assert nesting_over("[" * 70 + '"\\"' * 300_000) is True


def test_loads_refuses_what_json_would_recurse_into() -> None:
    with pytest.raises(TooDeep):
        loads("[" * 100_000 + "]" * 100_000)
    assert loads("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)) is not None
    with pytest.raises(ValueError, match="Expecting"):
        loads('{"a": ')
