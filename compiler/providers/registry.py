"""The one list of provider targets. Every other target list derives from it: config's default targets, the
`--target` aliases, CLI choices, the emit order, the lock's and the router's per-target tables.

Adding a provider: write one dialect module (a `Dialect` subclass, see `dialect.py` and docs/ARCHITECTURE.md),
then add its instance to `_DIALECTS` below.
"""

from __future__ import annotations

from compiler.providers import anthropic, gemini, openai
from compiler.providers.dialect import Dialect

_DIALECTS: tuple[Dialect, ...] = (openai.CHAT, openai.RESPONSES, anthropic.ANTHROPIC, gemini.GEMINI)

PROVIDERS: dict[str, Dialect] = {dialect.target: dialect for dialect in _DIALECTS}
"""Target name → its dialect, in the order targets are listed and emitted by default."""
TARGETS: tuple[str, ...] = tuple(PROVIDERS)


def _aliases() -> dict[str, tuple[str, ...]]:
    found: dict[str, list[str]] = {}
    for dialect in _DIALECTS:
        for alias in dialect.aliases:
            found.setdefault(alias, []).append(dialect.target)
    return {**{alias: tuple(targets) for alias, targets in found.items()}, "all": TARGETS}


ALIASES: dict[str, tuple[str, ...]] = _aliases()
"""`--target` names that stand for several targets (`openai`, `claude`, `all`)."""
