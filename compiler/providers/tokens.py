"""Token cost of what toolc emits, counted with a real tokenizer that works offline.

OpenAI: the `o200k_base` encoding (GPT-4o and later) from `bpe-openai`, which ships its vocabulary in the wheel
(tiktoken downloads vocabularies at run time, so it is not used: tiktoken 0.14.0's `get_encoding("o200k_base")`
raised ConnectionError here without network). The count is of the exact bytes toolc writes
(a file: the file as written; a tool: its definition as toolc writes JSON, `canonical_json`, on its own). What a provider bills for tools also
includes a fixed wrapper it adds around the list; that overhead is not in these numbers.

Claude and Gemini publish no offline tokenizer. Their figures are **estimates**: the same o200k_base count of their
own emitted JSON (a modern BPE vocabulary of similar size; treat it as ±20 %). `METHOD` says so in every report.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from functools import cache
from pathlib import Path
from typing import Any

from compiler.infra.serialize import canonical_json

ENCODING = "o200k_base"
COUNTED = f"counted: {ENCODING} (bpe-openai) over the exact emitted JSON"
ESTIMATED = f"estimated: {ENCODING} count of the exact emitted JSON (no offline tokenizer is published; ±20 %)"


_BINDINGS = "bpe_openai._bindings"
"""bpe-openai's Rust tokenizer (typed in the wheel's `_bindings.pyi`): it holds its vocabularies itself."""


@cache
def _encoding() -> Any:
    """The o200k_base tokenizer. Only commands that count tokens pay for it, and only its Rust backend is loaded:
    importing the `bpe_openai` package decodes three vocabularies in Python (0.5 s of CPU, the largest fixed cost
    of a compile) for its tiktoken-compatible wrapper, which toolc does not use."""
    return _bindings().tokenizer_for_encoding(ENCODING)


def _bindings() -> Any:
    loaded = sys.modules.get(_BINDINGS)
    if loaded is not None:
        return loaded
    path = _bindings_file()
    spec = importlib.util.spec_from_file_location(_BINDINGS, path) if path is not None else None
    if spec is None or spec.loader is None:
        return importlib.import_module(_BINDINGS)  # laid out differently: the ordinary (slower) import
    module = importlib.util.module_from_spec(spec)
    sys.modules[_BINDINGS] = module  # a later `import bpe_openai` (the tests) finds it: initialised once
    spec.loader.exec_module(module)
    return module


def _bindings_file() -> Path | None:
    package = importlib.util.find_spec("bpe_openai")  # finds the package without running its __init__
    folders = package.submodule_search_locations or [] if package is not None else []
    candidates = (Path(folder) / f"_bindings{suffix}" for folder in folders
                  for suffix in importlib.machinery.EXTENSION_SUFFIXES)
    return next((path for path in candidates if path.is_file()), None)


def _encode(text: str) -> int:
    """Tokens of `text`, as bpe-openai's `encode_ordinary` counts them (text that is not valid Unicode, a lone
    surrogate, is counted with the replacement character, as it does). The tokenizer's `count` runs the same
    pre-tokenizer and byte-pair encoder as `encode` without building the list of token ids (a fifth less CPU on
    a compile's lines; the property tests check it against `encode_ordinary`)."""
    if not text:
        return 0
    try:
        count: int = _encoding().count(text)
    except UnicodeEncodeError:
        count = _encoding().count(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))
    return count


def preload() -> None:
    """Load the tokenizer now (before forking workers, which then share it)."""
    _encoding()


CHUNK = 200_000
"""The encoder refuses a text of 1,000,000 characters or more: long texts are counted in pieces."""


def _cut(text: str, start: int) -> int:
    """A cut after `start` that no o200k_base token crosses, or the end of the text. The pre-tokenizer ends a
    piece just after a newline unless `/` or more line breaks follow (possibly after blanks): indented JSON has
    one such cut per line."""
    at = start + CHUNK
    while at < len(text):
        if text[at - 1] == "\n" and text[at] != "/":
            blank = at
            while blank < len(text) and text[blank] in " \t":
                blank += 1
            if blank < len(text) and text[blank] not in "\r\n" and not text[blank].isspace():
                return at
        at += 1
    return len(text)


def count_text(text: str) -> int:
    """Tokens of `text` in o200k_base (special-token text counts as ordinary text), exactly as one encode call of
    the whole text would give."""
    total = start = 0
    while start < len(text):
        end = _cut(text, start) if len(text) - start > CHUNK else len(text)
        total += _encode(text[start:end])
        start = end
    return total


def _encode_text(text: bytes) -> int:
    piece = text.decode("utf-8")
    return _encode(piece) if len(piece) < CHUNK else count_text(piece)


SEGMENT = 64
"""A long line is counted in segments of at least this many bytes, cut where no token crosses (`_segments`)."""


class _Segments(dict[bytes, int]):
    """A segment of a line (the last one with its line break) → its tokens. The same descriptions recur in lines
    that differ elsewhere (a parameter's description in each dialect, with what each moved into it appended; a
    tool's description whole and cut to 1,024 characters): their shared segments are encoded once."""

    def __missing__(self, segment: bytes) -> int:
        found = self[segment] = _encode_text(segment)
        return found


_SEGMENTS = _Segments()


def _is_word_byte(byte: int) -> bool:
    return 0x21 <= byte <= 0x7E  # printable ASCII other than the space


def _segments(line: bytes) -> list[bytes]:
    """`line` cut before single spaces between two printable ASCII characters, `SEGMENT` bytes or more apart. The
    pre-tokenizer starts a piece at such a space (` word`, ` (`, or the space alone before a digit) and no piece
    before it takes it in (a word, a number or a run of punctuation stops at a space): the tokens of the line are
    the sum of its segments'. Cuts at ASCII bytes never split a UTF-8 character."""
    found: list[bytes] = []
    start, at = 0, SEGMENT
    while True:
        at = line.find(b" ", at, len(line) - 1)
        if at < 0:
            break
        if _is_word_byte(line[at - 1]) and _is_word_byte(line[at + 1]):
            found.append(line[start:at])
            start, at = at, at + SEGMENT
        else:
            at += 1
    found.append(line[start:])
    return found


def _encode_line(line: bytes) -> int:
    """Tokens of `line` followed by a line break."""
    if len(line) < 2 * SEGMENT:
        return _encode_text(line + b"\n")
    *inner, last = _segments(line)
    return sum(map(_SEGMENTS.__getitem__, inner)) + _SEGMENTS[last + b"\n"]


class _Spaces(dict[int, int]):
    """n → tokens of a run of n spaces on its own."""

    def __missing__(self, count: int) -> int:
        found = self[count] = _encode(" " * count)
        return found


class _Indented(dict[bytes, int]):
    """A line's text after its indentation, with one space before it → its tokens (with the line break)."""

    def __missing__(self, rest: bytes) -> int:
        found = self[rest] = _encode_line(rest)
        return found


class _Lines(dict[bytes, int]):
    """Line → tokens of the line with its line break, in canonical JSON. Lines repeat across tools and files (a shared
    schema appears in every tool that uses it): each distinct line is counted once, on its first lookup, and
    repeats are only looked up (`sum(map(...))` over a file's lines runs in C).

    The same text recurs at many depths (a definition inlined at every level it is used, the same tool in two
    arrays): an indented line is encoded once per text. o200k_base's pre-tokenizer cuts `k >= 1` leading spaces
    before a non-space into `k - 1` spaces on their own (`\\s+(?!\\S)`) and a piece that starts with the last space,
    whatever follows: so tokens(k spaces + text) = tokens(k - 1 spaces alone) + tokens(one space + text)."""

    def __missing__(self, line: bytes) -> int:
        text = line.lstrip(b" ")
        indent = len(line) - len(text)
        found = self[line] = _encode_line(line) if not indent or not text \
            else _SPACES[indent - 1] + _INDENTED[line[indent - 1:]]
        return found


_SPACES = _Spaces()
_INDENTED = _Indented()


_LINES = _Lines()
"""Shared by every file and tool of a process."""


def line_count(line: bytes) -> int:
    """Tokens of one line of canonical JSON with its line break."""
    return _LINES[line]


def count_bytes(data: bytes) -> int:
    """Tokens of a file toolc writes (`canonical_json`: indented JSON), exactly as one encode of the whole text.

    Counted line by line: in indented JSON every line break is followed by indentation and then `"`, a bracket or a
    value, never `/` or another break, so the pre-tokenizer ends a piece at each one and no token crosses a line
    (hypothesis checks the sum against one direct count)."""
    lines = data.split(b"\n")
    last = lines.pop()
    return sum(map(_LINES.__getitem__, lines)) + (count_text(last.decode("utf-8")) if last else 0)


_SHIFT = 40
"""`_Placed` packs two counts in one int: a definition's lines never add up to 2**40 tokens."""


class _Placed(dict[bytes, int]):
    """A line of a definition as placed in a tools array (`pad` before every line but its first, `{`) → its
    tokens as placed, shifted left by `_SHIFT`, plus the tokens of the line as the definition on its own has it
    (without `pad`; the first line: with `pad`, as placed): one lookup and one sum give both counts of
    `count_placed`."""

    def __init__(self, pad: bytes) -> None:
        super().__init__()
        self.pad = pad

    def __missing__(self, line: bytes) -> int:
        alone, placed = (line[len(self.pad):], line) if line.startswith(self.pad) else (line, self.pad + line)
        found = self[line] = _LINES[alone] | _LINES[placed] << _SHIFT
        return found


_PLACED: dict[bytes, _Placed] = {}


def count_placed(placed: bytes, pad: bytes) -> tuple[int, int]:
    """(tokens of a definition on its own, as canonical JSON with its final line break; the same count with `pad`
    before every line), from the definition as it sits in a tools array: its first line `{`, every other line
    after `pad`, no final line break (`spans.place`). A definition's cost on its own and inside the array."""
    lines = placed.split(b"\n")
    if lines[0] != b"{" or not pad:
        raise ValueError("a placed definition is an object, indented inside its array")
    known = _PLACED.get(pad) or _PLACED.setdefault(pad, _Placed(pad))
    both = sum(map(known.__getitem__, lines))
    return both & ((1 << _SHIFT) - 1), both >> _SHIFT


def count_json(value: Any) -> int:
    """Tokens of `value` written as toolc writes JSON (`canonical_json`; how a tool's definition is counted)."""
    return count_bytes(canonical_json(value))


def method(exact: bool) -> str:
    """How a target's figures are obtained (`Dialect.tokenizer_exact`: its own tokenizer is o200k_base)."""
    return COUNTED if exact else ESTIMATED
