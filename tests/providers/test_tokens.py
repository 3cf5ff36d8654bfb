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


_WORDS = st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=12) | st.sampled_from(
    ["the", "Repository", "(minLength=1)", "123", "'s", "a.b", "/path", "\u00e9t\u00e9", "\u00a0", "\u3000", "-", "\"",
     "\\n", "x\u0301", "ALLCaps", "  ", "\t", "9,000", ",", "http://example.com/a?b=c"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_WORDS, min_size=64, max_size=160), st.sampled_from(["", ",", "\",", "}"]))
def test_a_long_line_counted_in_segments_counts_as_one_encode(words: list[str], end: str) -> None:
    """Long lines (descriptions) are counted in segments cut before a space (`tokens._segments`), each segment
    remembered; the sum is one encode of the line with its line break, whatever the words around the cuts."""
    line = ("  \"description\": \"" + " ".join(words) + end).encode("utf-8")
    assert len(line) >= 2 * tokens.SEGMENT
    assert b"".join(tokens._segments(line)) == line
    assert tokens._encode_line(line) == len(_ORDINARY(line.decode("utf-8") + "\n"))
    assert tokens._encode_line(line[1:]) == len(_ORDINARY(line[1:].decode("utf-8") + "\n"))  # remembered pieces


def test_the_same_description_in_two_lines_is_encoded_once_but_for_its_ends() -> None:
    text = " ".join(["Lists the repositories the authenticated user can reach"] * 6)
    first, second = (f'{key}: "{text}{end}'.encode() for key, end in (('"description"', '",'), ('"summary"', '"')))
    assert tokens._encode_line(first) == len(_ORDINARY(first.decode() + "\n"))
    shared = set(tokens._segments(first)[1:-1]) & set(tokens._segments(second)[1:-1])
    assert shared and all(segment in tokens._SEGMENTS for segment in shared)
    assert tokens._encode_line(second) == len(_ORDINARY(second.decode() + "\n"))
