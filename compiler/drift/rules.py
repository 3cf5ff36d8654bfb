"""The breaking-change rule table (reference/drift.md §4.4) as data, and the `Change` a diff reports.

Every change is judged for three audiences, each at ERR (definite break), WARN (may break; the schema alone
cannot tell) or INFO (not breaking, worth knowing), or not at all (`None`: that audience cannot notice it):

- stub  — code calling the generated typed stubs (Python names, signatures, annotations, the router's policy);
- wire  — code sending JSON arguments / reading JSON results directly (buf's WIRE_JSON);
- model — the LLM that reads the tool definitions (names in prompts, descriptions, token budget).

Rule ids follow oasdiff's (`<direction>-<area>-<action>`). The table is a list of pairs so a duplicate id is an
import-time error rather than a silent override (style.md anti-pattern 3). Deviations from the reference table
are marked `deviation:` below and in README_SECTION.md.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


class Level(enum.IntEnum):
    INFO = 0
    WARN = 1
    ERR = 2

    @classmethod
    def parse(cls, text: str) -> Level:
        return cls[text.upper()]


ERR, WARN, INFO = Level.ERR, Level.WARN, Level.INFO
AUDIENCES = ("stub", "wire", "model")


@dataclass(frozen=True, slots=True)
class Levels:
    stub: Level | None
    wire: Level | None
    model: Level | None

    def worst(self) -> Level | None:
        present = [level for level in (self.stub, self.wire, self.model) if level is not None]
        return max(present) if present else None

    def to_json(self) -> dict[str, str | None]:
        return {audience: (level.name if level is not None else None)
                for audience, level in zip(AUDIENCES, (self.stub, self.wire, self.model), strict=True)}


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    levels: Levels
    anchor: str
    """The oasdiff / buf rule (or reasoning) the levels come from."""
    summary: str


_TABLE: tuple[tuple[str, Level | None, Level | None, Level | None, str, str], ...] = (
    # id, stub, wire, model, anchor, summary
    ("tool-removed", ERR, ERR, ERR, "api-removed-without-deprecation", "tool removed"),
    ("tool-renamed", ERR, ERR, ERR, "api-removed-without-deprecation", "tool renamed (same binding or input schema)"),
    ("tool-added", INFO, INFO, WARN, "endpoint-added", "tool added: token budget and tool selection shift"),
    # deviation: toolc compiles names per provider (DESIGN decision 4), so no provider 400; the model sees a rewrite.
    ("tool-name-invalid", None, None, WARN, "provider name limits", "name is not a valid provider tool name as-is"),
    ("input-required-property-added", ERR, ERR, INFO, "new-required-request-property", "new required input property"),
    ("input-optional-property-added", INFO, INFO, INFO, "new-optional-request-property", "new optional input property"),
    ("input-property-removed", ERR, WARN, INFO, "request-property-removed",
     "input property removed (an open schema: servers ignore the extra key)"),
    ("input-property-removed-closed", ERR, ERR, INFO, "request-property-removed",
     "input property removed and the schema refuses unknown keys"),
    ("input-property-renamed", ERR, ERR, INFO, "FIELD_SAME_JSON_NAME", "input property renamed"),
    ("input-property-became-required", ERR, ERR, INFO, "request-property-became-required", "optional → required"),
    ("input-property-became-optional", INFO, INFO, INFO, "request-property-became-optional", "required → optional"),
    ("input-type-changed", ERR, ERR, INFO, "request-property-type-changed",
     "input type changed or narrowed (type removed, branch removed, no longer nullable)"),
    ("input-type-widened", INFO, INFO, INFO, "request-property-type-generalized", "integer → number, or null allowed"),
    ("input-type-widened-union", WARN, INFO, INFO, "request-property-list-of-types-widened",
     "another type or branch allowed: the stub's annotation becomes a union"),
    ("input-enum-value-removed", ERR, ERR, INFO, "request-property-enum-value-removed", "enum value removed"),
    ("input-became-enum", ERR, ERR, INFO, "request-property-became-enum", "became an enum or const"),
    ("input-enum-value-added", INFO, INFO, INFO, "request-property-enum-value-added", "enum value added"),
    ("input-constraint-tightened", ERR, ERR, INFO, "request-property-max-decreased",
     "max lowered, min raised, pattern added, uniqueItems or allOf added"),
    ("input-constraint-set", WARN, WARN, INFO, "request-property-max-set",
     "constraint set where there was none, or pattern/format changed"),
    ("input-constraint-loosened", INFO, INFO, INFO, "request-property-max-increased", "constraint loosened or removed"),
    ("input-additional-properties-closed", ERR, ERR, INFO, "by analogy", "additionalProperties became false"),
    ("input-default-changed", WARN, WARN, INFO, "request-parameter-default-value-changed",
     "default changed: callers that omit the argument get another behaviour"),
    ("output-schema-removed", ERR, WARN, INFO, "response-body-media-type-schema-removed", "outputSchema removed"),
    ("output-schema-added", INFO, INFO, INFO, "response-body-media-type-schema-added", "outputSchema added"),
    ("output-required-property-removed", ERR, ERR, INFO, "response-required-property-removed",
     "required output property removed"),
    ("output-property-became-optional", ERR, ERR, INFO, "response-property-became-optional", "output required → optional"),
    ("output-property-became-nullable", ERR, ERR, INFO, "response-property-became-nullable", "output may now be null"),
    ("output-optional-property-removed", WARN, WARN, INFO, "response-optional-property-removed",
     "optional output property removed"),
    ("output-property-added", INFO, INFO, INFO, "response-optional-property-added", "output property added"),
    ("output-type-widened", ERR, ERR, INFO, "response-property-type-generalized",
     "output type widened, branch added or enum dropped"),
    ("output-constraint-loosened", ERR, ERR, INFO, "response-property-max-increased", "output max raised / min lowered"),
    ("output-constraint-changed", WARN, WARN, INFO, "response-property-pattern-changed", "output pattern/format changed"),
    ("output-enum-value-added", WARN, WARN, INFO, "response-property-enum-value-added",
     "output enum value added (exhaustive matches break)"),
    ("output-type-changed", ERR, ERR, INFO, "response-property-type-changed", "output type changed (also at the root)"),
    ("output-narrowed", INFO, INFO, INFO, "response-property-enum-value-removed",
     "output narrowed: fewer values, tighter constraints, newly required"),
    ("description-changed", INFO, INFO, WARN, "not reported by oasdiff", "description changed: prompt drift"),
    # deviation: the table lists title with description; the brief and "title-only churn" make it cosmetic for code.
    ("title-changed", None, None, WARN, "title-only churn", "title changed"),
    ("examples-changed", INFO, INFO, WARN, "not reported by oasdiff", "examples changed"),
    ("deprecated-changed", INFO, INFO, WARN, "api-deprecated", "deprecated flag changed"),
    ("annotation-riskier", ERR, INFO, INFO, "MCP annotations",
     "readOnly true→false, destructive false→true, idempotent true→false or openWorld false→true: policy"),
    ("annotation-changed", INFO, INFO, INFO, "MCP annotations", "annotation hint changed to the safer side"),
    ("schema-restructured", None, None, INFO, "compare resolved, key-sorted schemas",
     "$ref/$defs restructured; resolves to the same schema (token count may change)"),
    ("mcp-header-changed", INFO, INFO, INFO, "SEP-2243", "x-mcp-header added or changed"),
    ("mcp-header-invalid", INFO, ERR, INFO, "SEP-2243", "x-mcp-header is not a valid header name"),
    # Not in the reference table: toolc-specific.
    ("binding-changed", INFO, ERR, None, "api-path-removed", "HTTP method, path or argument location changed"),
    ("schema-keyword-changed", WARN, WARN, INFO, "unclassified (openapi-diff)", "a keyword toolc does not classify"),
    ("provider-output-changed", None, None, WARN, "check", "the lowered provider definition changed, the IR did not"),
    ("tool-changed", WARN, WARN, WARN, "check", "tool changed; no previous catalog to classify it against"),
)


def _build_rules() -> dict[str, Rule]:
    rules: dict[str, Rule] = {}
    for rule_id, stub, wire, model, anchor, summary in _TABLE:
        if rule_id in rules:
            raise ValueError(f"duplicate drift rule {rule_id}")
        rules[rule_id] = Rule(rule_id, Levels(stub, wire, model), anchor, summary)
    return rules


RULES: dict[str, Rule] = _build_rules()


@dataclass(frozen=True, slots=True)
class Change:
    tool: str
    """The tool's name (diff) or id (check); for a rename, the new name."""
    change: str
    """A rule id from RULES."""
    pointer: str
    """A JSON pointer into the new tool (`/inputSchema/properties/x`), or the old one when it is gone."""
    message: str

    @property
    def levels(self) -> Levels:
        return RULES[self.change].levels

    def sort_key(self) -> tuple[str, str, str, str]:
        return (self.tool, self.pointer, self.change, self.message)

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "change": self.change, "pointer": self.pointer,
                "levels": self.levels.to_json(), "message": self.message}
