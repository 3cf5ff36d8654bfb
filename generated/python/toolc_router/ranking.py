"""Tools ranked for a query a person types: BM25 (`bm25s`) over each tool's name, description and parameter names.

The one implementation of discovery search: `toolc list --search` runs it here, and codegen copies this file into
every router as `ranking.py`, where the `toolc_search_tools` meta-tool runs it over `_catalog.json`. So it imports
nothing from the compiler.

Words are cut the way tool names are written (`conversations_info`, `listForRepo`, `pulls/request-reviewers`,
`PostPaymentIntentsIntentConfirm`), lower-cased, stripped of HTML and of a few words that carry no meaning in a
query ("a", "the", "my", ...), and reduced to their Snowball stem, so "conversation info" finds
`conversations_info` and "merge a PR" finds "Merge a pull request". A query's verb also looks for the verb APIs
use for it ("open a new issue": create). Name, summary and body are scored apart (`SearchIndex`). Ties go to the
tool whose key sorts first, so the same catalog always answers the same.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache

import bm25s  # type: ignore[import-untyped]
import snowballstemmer  # type: ignore[import-untyped]

FIELD_WEIGHTS = {"name": 2.0, "summary": 2.0, "body": 1.0}
MAX_QUERY = 1_000
STEM_CACHE = 1 << 16
_SENTENCE_END = re.compile(r"(?<=[a-z0-9)])[.:;!?](?:\s|$)")
# A query's verbs, as APIs name their operations: "open a new issue" also looks for "create".
_QUERY_VERBS = {
    "add": "create",
    "new": "create",
    "open": "create",
    "make": "create",
    "publish": "create",
    "remove": "delete",
    "erase": "delete",
    "drop": "delete",
    "set": "update",
    "edit": "update",
    "change": "update",
    "modify": "update",
    "fetch": "get",
    "read": "get",
    "show": "get",
    "retrieve": "get",
    "find": "search",
    "all": "list",
}
_HTML = re.compile(r"<[^>]*>|&[a-z]+;|https?://\S+")
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_ABBREVIATIONS = {
    "pr": "pull request",
    "prs": "pull requests",
    "pulls": "pull requests",
    "repo": "repository",
    "repos": "repositories",
}
_STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "the",
        "this",
        "to",
        "what",
        "which",
        "who",
        "with",
        "your",
    ]
)


@dataclass(frozen=True, slots=True)
class SearchEntry:
    """What search reads of one tool: `key` is what a hit returns (the tool id)."""

    key: str
    name: str
    description: str = ""
    parameters: tuple[str, ...] = ()


@cache
def _stemmer() -> snowballstemmer.stemmer:
    return snowballstemmer.stemmer("english")


def words(text: str) -> list[str]:
    """`text` as search terms: split at case changes, punctuation and digits, lower-cased, stemmed."""
    found: list[str] = []
    for word in _WORD.findall(_HTML.sub(" ", text)):
        lowered = word.lower()
        found.extend(_ABBREVIATIONS.get(lowered, lowered).split())
    return [_stem(word) for word in found if word not in _STOP_WORDS]


def query_words(query: str) -> list[str]:
    """`words(query)` and, for each verb a person uses where APIs use another (`_QUERY_VERBS`), that one too. A
    query is a model's text: only its first `MAX_QUERY` characters are read."""
    query = query[:MAX_QUERY]
    plain = [word.lower() for word in _WORD.findall(query)]
    extra = [_QUERY_VERBS[word] for word in plain if word in _QUERY_VERBS]
    return _unique(words(query) + words(" ".join(extra)))


# Snowball is pure Python, and an API's descriptions repeat a few thousand distinct words; bounded, because the
# queries are a model's text and a server runs for weeks.
@lru_cache(maxsize=STEM_CACHE)
def _stem(word: str) -> str:
    stem: str = _stemmer().stemWord(word)
    return stem


def _unique(terms: list[str]) -> list[str]:
    return list(dict.fromkeys(terms))


def _name(entry: SearchEntry) -> list[str]:
    return _unique(words(entry.name))


def _summary(entry: SearchEntry) -> list[str]:
    """The description's first sentence: what the tool does, as its author would put it in a heading."""
    first_line = entry.description.strip().partition("\n")[0]
    return _unique(
        words(_SENTENCE_END.split(_HTML.sub(" ", first_line), maxsplit=1)[0])
    )


def _body(entry: SearchEntry) -> list[str]:
    return words(entry.description) + words(" ".join(entry.parameters))


class SearchIndex:
    """One BM25 index per field of `entries`, built once: the name, the summary (each word once: a name that repeats
    its summary, `pulls/list` and "List pull requests", is not worth more for it) and the body (the whole
    description and the parameter names). A query's score is the fields' scores weighted by `FIELD_WEIGHTS`:
    fields scored apart, so that a long description does not drown a name that says exactly what was asked
    (BM25F's idea). `search` answers in milliseconds for 10,000 tools."""

    def __init__(self, entries: Sequence[SearchEntry]) -> None:
        self._keys = [entry.key for entry in entries]
        self._fields = [
            _Field([read(entry) for entry in entries], FIELD_WEIGHTS[name])
            for name, read in (("name", _name), ("summary", _summary), ("body", _body))
        ]

    def search(self, query: str, limit: int) -> list[str]:
        """The keys of the best `limit` entries for `query`, best first; none when no term of it occurs."""
        terms = query_words(query)
        if not terms or limit <= 0 or not self._keys:
            return []
        totals = [0.0] * len(self._keys)
        for field in self._fields:
            for position, score in enumerate(field.scores(terms)):
                totals[position] += score
        ranked = sorted(
            (-score, key)
            for score, key in zip(totals, self._keys, strict=True)
            if score > 0
        )
        return [key for _, key in ranked[:limit]]


class _Field:
    def __init__(self, documents: list[list[str]], weight: float) -> None:
        self._weight = weight
        self._bm25 = bm25s.BM25(
            k1=1.2, b=0.75
        )  # the textbook values (alike from k1 0.9 to 1.5, b 0.5 to 0.9)
        if documents:
            self._bm25.index(documents, show_progress=False)
        self._vocabulary: dict[str, int] = getattr(self._bm25, "vocab_dict", None) or {}

    def scores(self, terms: list[str]) -> list[float]:
        known = [term for term in terms if term in self._vocabulary]
        if not known:
            return []
        return [self._weight * float(score) for score in self._bm25.get_scores(known)]
