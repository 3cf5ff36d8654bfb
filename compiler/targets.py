"""The compile targets by name: a leaf module, so that the project file (`config.py`) can check target names
without importing the dialects. Each dialect takes its `target` from here and the registry
(`compiler.providers.registry`) maps these names to dialects in this order (`tests/providers/test_registry.py`)."""

from __future__ import annotations

OPENAI_CHAT = "openai-chat"
OPENAI_RESPONSES = "openai-responses"
ANTHROPIC = "anthropic"
GEMINI = "gemini"

TARGETS: tuple[str, ...] = (OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC, GEMINI)
"""Every target, in the order targets are listed and emitted by default."""

ALIASES: dict[str, tuple[str, ...]] = {
    "openai": (OPENAI_CHAT, OPENAI_RESPONSES),
    "claude": (ANTHROPIC,),
    "all": TARGETS,
}
"""`--target` names that stand for several targets (`openai`, `claude`, `all`)."""
