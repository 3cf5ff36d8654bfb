"""Risk level and side-effect inference (seed 000's keyword rules), and the allow/deny filter.

Evidence: the HTTP method for OpenAPI operations, else keywords in the tool's name (and description, for the
network effect). MCP annotations are the server's own claims, and a server can lie (`delete_everything` declared
read-only): by default they may only RAISE the level and add side effects. Only for a server the project file
marks `trusted: true` do they also lower it (a trusted `readOnlyHint: true` tool is LOW whatever its name says).
"""

from __future__ import annotations

import fnmatch
import re
import unicodedata
from collections.abc import Iterable

from compiler.ir import Annotations, RiskLevel

# Seed 000, MCPAdapter: keyword → level, checked from the most severe down.
RISK_KEYWORDS: tuple[tuple[RiskLevel, tuple[str, ...]], ...] = (
    (RiskLevel.CRITICAL, ("delete", "drop", "destroy", "payment", "remove", "purge")),
    (RiskLevel.HIGH, ("write", "update", "modify", "create", "edit", "move", "execute", "exec", "commit", "push")),
    (RiskLevel.MEDIUM, ("network", "fetch", "http", "api", "url", "download", "upload")),
    (RiskLevel.LOW, ("read", "get", "list", "search", "echo")),
)

# Seed 000, SIDE_EFFECT_MAPPING, extended with the obvious synonyms.
SIDE_EFFECT_KEYWORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("fs.write", ("write", "edit", "create", "move", "save", "update", "modify", "commit")),
    ("fs.delete", ("delete", "remove", "destroy", "drop", "purge")),
    ("network.http", ("network", "fetch", "http", "url", "download", "upload")),
    ("payments", ("payment", "charge", "refund", "payout", "invoice")),
    ("system.exec", ("execute", "exec", "shell", "command", "run")),
)

# HTTP methods as evidence: what the method alone says about an operation.
METHOD_RISK: dict[str, RiskLevel] = {
    "GET": RiskLevel.LOW,
    "HEAD": RiskLevel.LOW,
    "OPTIONS": RiskLevel.LOW,
    "TRACE": RiskLevel.LOW,
    "POST": RiskLevel.HIGH,
    "PUT": RiskLevel.HIGH,
    "PATCH": RiskLevel.HIGH,
    "DELETE": RiskLevel.CRITICAL,
}
METHOD_SIDE_EFFECTS: dict[str, tuple[str, ...]] = {
    "POST": ("remote.write",),
    "PUT": ("remote.write",),
    "PATCH": ("remote.write",),
    "DELETE": ("remote.delete",),
}

_WORD = re.compile(r"[a-z]+")
_MCP_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
NO_ANNOTATIONS = Annotations()


def _words(*texts: str) -> set[str]:
    """Split camelCase, snake_case, kebab-case and prose into lower-case words."""
    words: set[str] = set()
    for text in texts:
        text = unicodedata.normalize("NFKC", text)  # fullwidth letters fold to ASCII ones
        spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
        words.update(_WORD.findall(spaced.lower()))
    return words


def _keyword_hits(words: set[str], keywords: Iterable[str]) -> bool:
    # A keyword matches a whole word or a word's stem ("deletes", "deleting", "writer").
    return any(word == kw or word.startswith(kw) for kw in keywords for word in words)


def infer_risk(
    name: str,
    description: str,
    annotations: Annotations = NO_ANNOTATIONS,
    http_method: str | None = None,
    *,
    trusted: bool = False,
) -> tuple[RiskLevel, tuple[str, ...]]:
    """Return the tool's risk level and its sorted side-effect tags (annotations lower it only when `trusted`).

    An untrusted MCP tool whose name is outside the MCP name charset (`plain_name`) is at least HIGH: keywords
    cannot be read from `delete_everything` spelled with a Cyrillic `e`, and deny patterns cannot match it."""
    if trusted:
        return _infer(name, description, annotations, http_method)
    plain_level, plain_effects = _infer(name, description, NO_ANNOTATIONS, http_method)
    hinted_level, hinted_effects = _infer(name, description, annotations, http_method)
    level = max(plain_level, hinted_level)
    if http_method is None and not plain_name(name):
        level = max(level, RiskLevel.HIGH)
    return level, tuple(sorted({*plain_effects, *hinted_effects}))


def plain_name(name: str) -> bool:
    """Whether `name` keeps to the MCP tool-name charset (`[A-Za-z0-9_.-]`, 1 to 128 characters)."""
    return _MCP_NAME.fullmatch(name) is not None


def _infer(name: str, description: str, annotations: Annotations,
           http_method: str | None) -> tuple[RiskLevel, tuple[str, ...]]:
    # Only the name decides the level from keywords: descriptions of read-only tools routinely mention
    # "create" or "delete" ("list the files created..."), names rarely lie.
    name_words = _words(name)

    if annotations.read_only_hint is True:
        # Read-only changes nothing, but reaching the open world (fetching a URL) is still a network effect.
        reaches_out = annotations.open_world_hint is not False and _keyword_hits(name_words, SIDE_EFFECT_KEYWORDS[2][1])
        return (RiskLevel.MEDIUM, ("network.http",)) if reaches_out else (RiskLevel.LOW, ())
    if http_method is not None:
        level = METHOD_RISK.get(http_method.upper(), RiskLevel.MEDIUM)
        effects = set(METHOD_SIDE_EFFECTS.get(http_method.upper(), ()))
        if annotations.open_world_hint is not False:
            effects.add("network.http")
        if level is RiskLevel.LOW:
            return level, tuple(sorted(effects))
    else:
        level = RiskLevel.LOW
        effects = set()
        for keyword_level, keywords in RISK_KEYWORDS:
            if _keyword_hits(name_words, keywords):
                level = keyword_level
                break
        for tag, keywords in SIDE_EFFECT_KEYWORDS:
            if _keyword_hits(name_words, keywords):
                effects.add(tag)
        if annotations.open_world_hint is True and _keyword_hits(
            name_words | _words(description[:300]), SIDE_EFFECT_KEYWORDS[2][1]
        ):
            effects.add("network.http")

    if annotations.destructive_hint is True:
        level = max(level, RiskLevel.HIGH)
        if http_method is None:
            effects.add("fs.delete" if _keyword_hits(name_words, SIDE_EFFECT_KEYWORDS[1][1]) else "fs.write")
    elif annotations.destructive_hint is False and annotations.read_only_hint is False:
        # Additive only (MCP spec): it writes, but destroys nothing.
        level = min(max(level, RiskLevel.MEDIUM), RiskLevel.HIGH)
        effects.discard("fs.delete")
        if http_method is None and not effects:
            effects.add("fs.write")
    if annotations.idempotent_hint is True and level is RiskLevel.CRITICAL and annotations.destructive_hint is not True:
        level = RiskLevel.HIGH
    return level, tuple(sorted(effects))


def is_selected(tool_name: str, allow: Iterable[str], deny: Iterable[str]) -> bool:
    """Allow and deny lists of names or shell-style patterns; an empty allow list allows everything. Deny patterns
    also match case-folded NFKC forms (the server picks the names: `*delete*` covers `bulkDelete`), allow patterns
    match exactly (the safe side of each), as in the generated router's policy."""
    allow = tuple(allow)
    if allow and not any(fnmatch.fnmatchcase(tool_name, pattern) for pattern in allow):
        return False
    folded = _fold(tool_name)
    return not any(fnmatch.fnmatchcase(tool_name, pattern) or fnmatch.fnmatchcase(folded, _fold(pattern))
                   for pattern in deny)


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()
