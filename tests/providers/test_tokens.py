"""The token counter's one call into the tokenizer (`tokens._encode`) against bpe-openai's own `encode_ordinary`."""

from __future__ import annotations

import bpe_openai
from hypothesis import example, given, settings
from hypothesis import strategies as st

from compiler.providers import tokens

_ORDINARY = bpe_openai.get_encoding("o200k_base").encode_ordinary


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
@example("")
@example("<|endoftext|> is ordinary text here")
@example(" " * 300 + "}\n")
@example('        "description": "Lists the repositories.",\n')
def test_a_text_counts_as_many_tokens_as_encode_ordinary_gives(text: str) -> None:
    assert tokens._encode(text) == len(_ORDINARY(text))


def test_a_lone_surrogate_counts_as_the_replacement_character() -> None:
    """Not valid Unicode: counted as bpe-openai's wrapper encodes it, with U+FFFD in its place."""
    assert tokens._encode("a\ud800b") == len(_ORDINARY("a\ufffdb"))
