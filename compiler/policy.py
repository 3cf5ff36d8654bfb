"""Risk level and side-effect inference (seed 000's keyword rules), and the allow/deny filter.

Evidence: for OpenAPI operations the HTTP method, raised (never lowered) by state-changing verbs in the operation's
id, path or summary (`operation_risk`: a `GET /auth.revoke` revokes), and set per tool glob by the project file
(`openapi[].risk` / `read_only`); for MCP tools keywords in the tool's name (and description, for the network
effect). MCP annotations are the server's own claims, and a server can lie (`delete_everything` declared
read-only): by default they may only RAISE the level and add side effects. Only for a server the project file
marks `trusted: true` do they also lower it (a trusted `readOnlyHint: true` tool is LOW whatever its name says).
"""

from __future__ import annotations

import fnmatch
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from compiler.infra.suggest import did_you_mean
from compiler.ir import Annotations, HttpBinding, RiskLevel, Tool

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

READ_ONLY_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Safe methods (RFC 9110): the operation is read-only unless its words or the project file say otherwise."""
WRITE_EFFECTS = frozenset({"remote.write", "remote.delete"})

# Verbs that say an operation changes or destroys state whatever its method (seed 000's CRITICAL keywords, plus the
# ones real APIs put on GETs and POSTs: Slack's `GET /auth.revoke`, `POST /cache/purge`). Matched as whole words
# and plurals only ("revokes", not "revoked"): a GET listing "deleted_items" or "commits" reads.
OPERATION_KEYWORDS: tuple[tuple[RiskLevel, str, tuple[str, ...]], ...] = (
    (RiskLevel.CRITICAL, "remote.delete",
     ("delete", "destroy", "drop", "erase", "purge", "remove", "revoke", "truncate", "wipe")),
    (RiskLevel.HIGH, "remote.write",
     ("cancel", "disable", "execute", "kill", "logout", "reboot", "reset", "restart", "shutdown", "terminate",
      "unsubscribe")),
)

_OPERATION_VERBS: dict[str, tuple[int, str]] = {
    form: (rank, keyword) for rank, (_, _, keywords) in enumerate(OPERATION_KEYWORDS)
    for keyword in keywords for form in (keyword, f"{keyword}s", f"{keyword}es")}
"""Each verb form → (its class's place in OPERATION_KEYWORDS, the keyword)."""
_VERB_HINT = re.compile("|".join(keyword for _, _, keywords in OPERATION_KEYWORDS for keyword in keywords))
"""A cheap first look (on lower-cased text; IGNORECASE is five times slower): most operations have no such verb
anywhere, and splitting their words costs more."""
_Setting = TypeVar("_Setting", RiskLevel, bool)
_WORD = re.compile(r"[a-z]+")
_PATH_VARIABLE = re.compile(r"\{[^{}]*\}")
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


UNMATCHED_POLICY_PATTERN = "TC326"
"""warning: a name or pattern of the project file matches no tool: a `policy` list's, or a source's `allow_tools`,
`deny_tools` or `fixed_params` tool name (a deny rule that matches nothing protects nothing, and a preset for a
misspelt tool leaves the real one's argument to the model)."""


def unmatched_source_names(names: Iterable[str], allow: Iterable[str], deny: Iterable[str],
                           fixed: Iterable[str]) -> list[str]:
    """What is wrong with a source's `allow_tools`, `deny_tools` and `fixed_params` tool names against the names of
    all its tools (before selection), one sentence each: matched as `is_selected` matches (deny also case-folded),
    a `fixed_params` name exactly (`*` is every operation), with the nearest name where one is close."""
    names = sorted(set(names))
    folded = [_fold(name) for name in names]
    problems: list[str] = []
    for key, patterns in (("allow_tools", allow), ("deny_tools", deny)):
        for pattern in patterns:
            if not any(fnmatch.fnmatchcase(name, pattern) for name in names) and not (
                    key == "deny_tools" and any(fnmatch.fnmatchcase(name, _fold(pattern)) for name in folded)):
                problems.append(f"{key}: {pattern!r} matches none of its {len(names)} tools"
                                f"{did_you_mean(pattern, names)}")
    for name in fixed:
        if name != "*" and name not in names:
            problems.append(f"fixed_params: no tool is named {name!r}, so its presets apply to nothing"
                            f"{did_you_mean(name, names)}")
    return problems


def unmatched_policy_patterns(tools: Iterable[Tool], lists: Mapping[str, Iterable[str]]) -> list[tuple[str, int, str]]:
    """(key, index, pattern) of every pattern in `lists` that matches no tool, matched as the generated router
    matches it: `allow_tools` exactly, `deny_tools` and `admin_tools` also case-folded (the safe side), and
    `deny_side_effect_tags` against the tools' side-effect tags."""
    if not any(lists.values()):
        return []  # the common case: no names to check (folding every tool id and name: 0.12 s on Graph)
    tools = list(tools)
    names = [(tool.id, tool.name) for tool in tools]
    folded = [tuple(_fold(name) for name in pair) for pair in names]
    tags = {tag for tool in tools for tag in tool.side_effects}
    unmatched: list[tuple[str, int, str]] = []
    for key, patterns in lists.items():
        for index, pattern in enumerate(patterns):
            if key == "deny_side_effect_tags":
                found = any(fnmatch.fnmatchcase(tag, pattern) for tag in tags)
            else:
                found = any(fnmatch.fnmatchcase(name, pattern) for pair in names for name in pair) or (
                    key != "allow_tools"
                    and any(fnmatch.fnmatchcase(name, _fold(pattern)) for pair in folded for name in pair))
            if not found:
                unmatched.append((key, index, pattern))
    return unmatched


@dataclass(frozen=True, slots=True)
class RiskAssessment:
    """An OpenAPI operation's risk, side effects and read-only flag, with why when not the method alone."""

    level: RiskLevel
    side_effects: tuple[str, ...]
    read_only: bool
    reason: str | None = None


def operation_risk(operation_id: str, summary: str, path: str, method: str) -> RiskAssessment:
    """The method's evidence, raised (never lowered) by a state-changing verb in the operation's id, the literal
    segments of its path or the first word of its summary (summaries start with their verb: "Revokes a token")."""
    method = method.upper()
    level = METHOD_RISK.get(method, RiskLevel.MEDIUM)
    effects = {*METHOD_SIDE_EFFECTS.get(method, ()), "network.http"}
    texts = (operation_id, _PATH_VARIABLE.sub(" ", path), " ".join(summary.split()[:1]))
    hits = _verb_hits(texts) if any(not text.isascii() or _VERB_HINT.search(text.lower()) for text in texts) else []
    if hits:
        rank, order, keyword = min(hits)  # the most severe class; within it, the id before the path and summary
        place = ("operationId", "path", "summary")[order]
        keyword_level, effect, _ = OPERATION_KEYWORDS[rank]
        effects.add(effect)
        if keyword_level > level:
            reason = f"{keyword!r} in its {place} raises {method} from {level.label} to {keyword_level.label}"
            return RiskAssessment(keyword_level, tuple(sorted(effects)), False, reason)
    read_only = method in READ_ONLY_METHODS and not effects & WRITE_EFFECTS
    return RiskAssessment(level, tuple(sorted(effects)), read_only)


def _verb_hits(texts: tuple[str, ...]) -> list[tuple[int, int, str]]:
    """(class rank, which text, keyword) for each verb form among the texts' words."""
    return [(rank, order, keyword) for order, text in enumerate(texts) for word in _words(text)
            if word in _OPERATION_VERBS for rank, keyword in (_OPERATION_VERBS[word],)]


def overridden(assessment: RiskAssessment, *, risk: tuple[RiskLevel, str] | None,
               read_only: tuple[bool, str] | None) -> RiskAssessment:
    """The project file's word (`openapi[].risk` / `read_only`, each with the glob that said it) over the inferred
    one: it may lower as well as raise, as `trusted` does for an MCP server's annotations."""
    reasons = [assessment.reason] if assessment.reason else []
    level, effects, is_read_only = assessment.level, set(assessment.side_effects), assessment.read_only
    if risk is not None and risk[0] != level:
        reasons.append(f"the project file sets risk {risk[0].label} ({risk[1]!r}; inferred {level.label})")
        level = risk[0]
    if read_only is not None and read_only[0] != is_read_only:
        is_read_only = read_only[0]
        reasons.append(f"the project file sets read_only {str(is_read_only).lower()} ({read_only[1]!r})")
        if is_read_only:
            effects -= WRITE_EFFECTS
        elif not effects & WRITE_EFFECTS:
            effects.add("remote.write")
    if len(reasons) == len([assessment.reason] if assessment.reason else []):
        return assessment
    return RiskAssessment(level, tuple(sorted(effects)), is_read_only, "; ".join(reasons))


def risk_setting(name: str, tool_id: str, risks: Mapping[str, RiskLevel]) -> tuple[RiskLevel, str] | None:
    """The risk the project file's globs give a tool, with the glob; where several match, the highest."""
    return max(_matching(name, tool_id, risks), default=None)


def read_only_setting(name: str, tool_id: str, flags: Mapping[str, bool]) -> tuple[bool, str] | None:
    """`read_only` as the project file's globs give it, with the glob; where several match, `false` wins."""
    return min(_matching(name, tool_id, flags), default=None)


def _matching(name: str, tool_id: str, settings: Mapping[str, _Setting]) -> list[tuple[_Setting, str]]:
    """(value, glob) for each glob matching the tool's name or id (case-sensitive, like `allow_tools`)."""
    return [(value, glob) for glob, value in settings.items() if glob_matches(glob, name, tool_id)]


def glob_matches(glob: str, name: str, tool_id: str) -> bool:
    return fnmatch.fnmatchcase(name, glob) or fnmatch.fnmatchcase(tool_id, glob)


def is_read_only(tool: Tool) -> bool:
    """An HTTP operation: its method, unless its words or the project file said otherwise (`annotations`); an MCP
    tool: nothing beyond reaching the network among its side effects."""
    if isinstance(tool.binding, HttpBinding):
        hint = tool.annotations.read_only_hint
        return hint if hint is not None else tool.binding.method.upper() in READ_ONLY_METHODS
    return not set(tool.side_effects) - {"network.http"}


def operation_hints(method: str, assessment: RiskAssessment) -> Annotations:
    """What the assessment says that the method does not (the rest the method says, `router_serve`): empty for
    most operations, so their IR is what it was."""
    method = method.upper()
    read_only = assessment.read_only if assessment.read_only != (method in READ_ONLY_METHODS) else None
    destructive = "remote.delete" in assessment.side_effects
    return Annotations(read_only_hint=read_only,
                       destructive_hint=destructive if destructive != (method == "DELETE") else None)
