"""The one list of provider targets. Every other target list derives from it: config's default targets, the
`--target` aliases, CLI choices, the emit order, the lock's and the router's per-target tables.

Adding a provider: write one dialect module (a `Dialect` subclass, see `dialect.py` and docs/ARCHITECTURE.md),
then its name to `compiler/targets.py` and its instance to `_DIALECTS` below.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compiler.providers import anthropic, gemini, openai
from compiler.providers.base import Checked
from compiler.providers.dialect import Dialect
from compiler.providers.validate import Violation
from compiler.targets import ALIASES, TARGETS

_DIALECTS: tuple[Dialect, ...] = (openai.CHAT, openai.RESPONSES, anthropic.ANTHROPIC, gemini.GEMINI)

PROVIDERS: dict[str, Dialect] = {dialect.target: dialect for dialect in _DIALECTS}
"""Target name → its dialect, in the order of `targets.TARGETS`."""

__all__ = ["ALIASES", "PROVIDERS", "TARGETS", "keeps_strict_parameters", "validate"]


def validate(target: str, definition: Mapping[str, Any], checked: Checked | None = None) -> list[Violation]:
    """Violations of one definition emitted for `target` (empty: valid): its dialect's own validation."""
    return PROVIDERS[target].check(definition, checked)


def keeps_strict_parameters(target: str) -> bool:
    """Whether a strict lowering's parameters are kept past lowering: only a target with a per-request strict
    budget reads them (`lower.over_budget`); elsewhere they would be carried back from the workers and cached for
    nothing (each OpenAI target's were 9 MB of a 25 MB index on Microsoft Graph)."""
    return PROVIDERS[target].budget is not None
