"""Diagnostic codes of provider lowering (TC401-TC459, TC770-TC779 for request fitting) and the one place their
severity is decided.

The loss report is made of these: every keyword a lowering drops, moves into a description or weakens is one
diagnostic with the target as `provider`, the tool id and a JSON pointer into the *lowered* schema (which mirrors
the source schema with `$ref`s followed or bundled). Losses are INFO: a real OpenAPI document has thousands of
them, and `--strict` should fail on problems that stop a tool from working, not on documented dialect limits.
"""

from __future__ import annotations

from compiler.infra.diagnostics import Severity

DESCRIBED = "TC401"
"""A keyword the dialect cannot express was moved into the node's description (the model still reads it)."""
DROPPED = "TC402"
"""A keyword was dropped (annotations, vendor extensions, keywords with no counterpart)."""
ONE_OF = "TC403"
"""`oneOf` written as `anyOf`: instances matching several branches are now accepted."""
ALL_OF = "TC404"
"""`allOf` members merged with conflicts (first wins), or kept only as text."""
CLOSED_OBJECT = "TC405"
"""`additionalProperties: false` added (strict modes): keys the source allowed implicitly are refused."""
NULL_IS_OMITTED = "TC406"
"""An optional property that already allowed null: after strict lowering, null means omitted."""
NOT_STRICT = "TC407"
"""The schema cannot be strict for this target: sent with `strict: false` (reasons in the message)."""
ROOT_HOISTED = "TC408"
"""A root `anyOf`/`oneOf`/`allOf` was hoisted into one object (alternatives described)."""
ITEMS_TYPED = "TC409"
"""An array without typed `items` was given a type."""
ENUM_REWRITTEN = "TC410"
"""`const`/`enum` rewritten or described (non-string enums, mixed types)."""
TYPE_REWRITTEN = "TC411"
"""A type the dialect cannot express (several types in one node) was weakened."""
OPEN_OBJECT = "TC412"
"""`additionalProperties`/`patternProperties` dropped: the map's value schema is no longer checked."""
DESCRIPTION_TRUNCATED = "TC414"
"""The tool description was cut to the provider's limit."""
NAME_MANGLED = "TC415"
"""The tool name was rewritten to the provider's charset and length."""
NAME_CLASH = "TC416"
"""Two tools share a provider name and the namesake strategy is `raise`."""
NAMESAKE = "TC417"
"""A namesake was renamed, skipped or overridden (the strategy in `names.namesake`)."""
KEY_RENAMED = "TC418"
"""An argument key was renamed to the provider's key pattern (the name map undoes it)."""
RECURSION_PRUNED = "TC419"
"""A recursive schema was cut (the dialect has no references)."""
TOO_MANY_TOOLS = "TC420"
"""More tools than the provider accepts in one request."""
STRICT_BUDGET = "TC421"
"""Anthropic strict limits per request (20 tools / 24 optional / 16 union parameters) reached."""
MAP_ENTRIES = "TC422"
"""Reversible (OpenAI strict): a map sent as an array of `{key, value}` entries; the router builds the object back."""
JSON_ENCODED = "TC423"
"""Reversible (OpenAI strict): a free-form or untyped value sent as a JSON-encoded string; the router decodes it."""
GEMINI_REQUIRED_DROPPED = "TC424"
"""Gemini: a `required` entry naming no property was dropped (Gemini drops it silently otherwise)."""
GEMINI_RECURSION_PRUNED = "TC425"
"""Gemini: a recursive schema was cut for `parameters` (no references); Gemini's own code for TC419."""
EXAMPLE_DROPPED = "TC426"
"""Claude: a document example was not sent as an `input_example` (it does not validate, or is over the limits)."""
MALFORMED_SCHEMA = "TC429"
"""The tool's input schema is not a well-formed JSON Schema (`properties` not an object, ...): left out."""
INVALID_OUTPUT = "TC430"
"""A lowered definition fails the provider's validator: the tool is left out for that target (a bug)."""
UNKNOWN_TOOL = "TC440"
"""`toolc explain`: no tool with that id or name."""
OVER_BUDGET = "TC770"
"""A target's tools file costs more tokens than the project's `budgets:` allow (the largest tools are named)."""
DISCOVERY_FORM = "TC771"
"""More tools than one request accepts: `schemas/<target>.json` holds the discovery form; toolsets hold the tools."""
EMPTY_TOOLSET = "TC772"
"""A `toolsets.globs` entry matches no tool."""
DEFERRED_OVER_LIMIT = "TC773"
"""The provider's deferred form would exceed a request (size or tool count): not written; send toolset files."""

INLINE_OVER_BUDGET = "TC450"
"""Inlined, the tool's schema would pass `providers.max_inline_nodes` and the target cannot share `$defs`: left out."""
SHARED_DEFS = "TC451"
"""Inlined, the tool's schema would pass `providers.max_inline_nodes`: sent with its definitions in `$defs`."""

SEVERITY: dict[str, Severity] = {
    INLINE_OVER_BUDGET: Severity.WARNING,
    NAME_CLASH: Severity.ERROR,
    INVALID_OUTPUT: Severity.ERROR,
    UNKNOWN_TOOL: Severity.ERROR,
    OVER_BUDGET: Severity.ERROR,
    DISCOVERY_FORM: Severity.WARNING,
    EMPTY_TOOLSET: Severity.WARNING,
    DEFERRED_OVER_LIMIT: Severity.WARNING,
    NAMESAKE: Severity.WARNING,
    MALFORMED_SCHEMA: Severity.WARNING,
    TOO_MANY_TOOLS: Severity.INFO,  # the fact; TC771 is the one warning, with what to send instead
    STRICT_BUDGET: Severity.WARNING,
}
"""Anything not listed is INFO (the loss report)."""


def severity(code: str) -> Severity:
    return SEVERITY.get(code, Severity.INFO)
