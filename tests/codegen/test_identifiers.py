"""`identifiers.words`: the ASCII shortcut and the remembered splits give what folding gives."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from compiler.codegen.stubs import identifiers
from compiler.codegen.stubs.identifiers import fold_ascii, snake_name, words


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_ascii_text_is_its_own_folding(text: str) -> None:
    """What lets `fold_ascii` return ASCII text as it is: NFKC changes no ASCII text, and nothing is left to fold."""
    assert unicodedata.normalize("NFKC", text) == text
    assert fold_ascii(text) == text


@given(st.text())
def test_a_remembered_split_is_the_split_of_the_folding(text: str) -> None:
    assert words(text) == identifiers._WORD.findall(fold_ascii(text))
    assert words(text) == identifiers._WORD.findall(fold_ascii(text))  # the second time from memory


def test_a_remembered_split_is_a_new_list_each_time() -> None:
    first = words("termsAndConditions-id")
    first.append("changed")
    assert words("termsAndConditions-id") == ["terms", "And", "Conditions", "id"]


def test_a_very_long_name_is_split_but_not_remembered() -> None:
    identifiers._split_words.cache_clear()
    long_name = "segment" * 1000
    assert snake_name(long_name, fallback="f", prefix="p").startswith("segmentsegment")
    assert identifiers._split_words.cache_info().currsize == 0
    words("shortName")
    assert identifiers._split_words.cache_info().currsize == 1
