"""The nearest known name to one that is not known: every "did you mean" of the compiler's messages comes from here."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def nearest(name: str, known: Iterable[str]) -> str | None:
    """The known name closest to `name` (difflib's ratio at least 0.6), or None."""
    found = difflib.get_close_matches(name, list(known), n=1)
    return found[0] if found else None


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`; did you mean 'x'?` for the nearest known name, or nothing."""
    near = nearest(name, known)
    return f"; did you mean {near!r}?" if near is not None else ""
