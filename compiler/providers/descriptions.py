"""Cut a description to a provider's cap at a sentence or word boundary, never mid-word, with an ellipsis.

The full text stays where nothing caps it: `catalog.json`, the stubs' docstrings and the router's discovery
catalog (`toolc_describe_tool` returns it).
"""

from __future__ import annotations

import re

ELLIPSIS = "…"
_SENTENCE_END = re.compile(r"[.!?](?=\s)|\n")
MIN_SENTENCE_SHARE = 0.5
"""Cut at a sentence end only if it keeps at least this share of the room; otherwise at a word boundary."""


def cut(text: str, limit: int) -> str:
    """`text` if it fits; else a prefix ending at a sentence end or word boundary, plus `…`, of at most `limit`
    characters."""
    if len(text) <= limit:
        return text
    room = limit - len(ELLIPSIS)
    head = text[:room]
    ends = [match.end() for match in _SENTENCE_END.finditer(text[:room + 1]) if match.end() <= room]
    if ends and ends[-1] >= room * MIN_SENTENCE_SHARE:
        return head[:ends[-1]].rstrip() + ELLIPSIS
    if not text[room].isspace():
        space = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
        if space > 0:
            head = head[:space]
    return head.rstrip() + ELLIPSIS
