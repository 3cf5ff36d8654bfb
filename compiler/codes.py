"""The registry of diagnostic codes: every code toolc reports, its severity and a one-line summary.

Severity is decided here, once: `Diagnostic.of` and `Diagnostics.report` take it from this table, and a
`Diagnostic` whose severity the table does not allow for its code is a bug in toolc (`ValueError`). A code whose
severity legitimately changes with context says so (`also`, `when`): TC201-TC204 are errors where a schema is
resolved and warnings while `load_document` pulls files in; the code that raises them in that context passes the
severity, and only a severity listed here is accepted.

The README's table of codes is generated from this registry (`python -m tests.support.code_table`), and
`tests/test_codes.py` keeps the three in step: this table, the README, and the `TCnnn` literals in `compiler/`
and `templates/router/static/`. Adding a code is one line in `_CODES`, in code order (plus its constant where it
is raised); then `python -m tests.support.code_table` rewrites the README's table.

Modules keep their named constants (`NETWORK_REF = "TC201"`) next to the code that raises them; this module
imports nothing of toolc's, so every floor can use it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass


class Severity(enum.StrEnum):
    """ERROR fails the compile (nothing is written); WARNING fails it only under --strict."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


ERROR, WARNING, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO


@dataclass(frozen=True, slots=True)
class Code:
    code: str
    severity: Severity
    """What the code is wherever no context says otherwise."""
    summary: str
    """One line for the README's table."""
    also: Severity | None = None
    """A second severity the code takes in the context `when` names; raisers in that context pass it."""
    when: str = ""
    """That context, as the README's "meaning" cell says it."""

    def allows(self, severity: Severity) -> bool:
        return severity is self.severity or severity is self.also

    def meaning(self) -> str:
        """The README's "meaning" cell: the summary, and the context where the severity changes."""
        return f"{self.summary} ({self.when})" if self.when else self.summary


_PULLING_FILES_IN = "a warning when pulling files in: the tools that need it pay, TC302 / TC318"

_CODES = (
    # TC1xx  reading input: files, JSON/YAML syntax, kind detection, the project file, resource limits
    Code("TC101", ERROR, "malformed json"),
    Code("TC102", ERROR, "malformed yaml"),
    Code("TC103", ERROR, "unreadable"),
    Code("TC104", ERROR, "unknown kind"),
    Code("TC105", ERROR, "too deep"),
    Code("TC106", ERROR, "duplicate source"),
    Code("TC107", ERROR, "unknown target"),
    Code("TC110", ERROR, "invalid config"),
    Code("TC111", WARNING, "a literal preset that looks like a secret (move it to the environment: `${NAME}`)"),
    Code("TC120", ERROR, "cannot write"),
    Code("TC130", ERROR, "document too big (default `max_document_mb: 64`)"),
    Code("TC131", ERROR, "nesting too deep (default `max_depth: 64`)"),
    Code("TC132", ERROR, "alias budget or alias cycle (default `max_alias_nodes: 100000`)"),
    Code("TC133", ERROR, "non-JSON YAML tag"),
    Code("TC134", ERROR, "number too long (default `max_number_length: 100`)"),
    Code("TC135", ERROR, "mapping key not a string"),
    Code("TC136", ERROR, "number not finite"),
    Code("TC137", ERROR, "not UTF-8 text"),
    Code("TC139", ERROR, "out of memory (default `memory_mb: 4096`)"),
    Code("TC140", INFO, "a cache file beside the output ignored (corrupted, another format, or written by another toolc): the work is done again"),
    # TC2xx  `$ref` resolution
    Code("TC201", ERROR, "network ref", also=WARNING, when=_PULLING_FILES_IN),
    Code("TC202", ERROR, "outside root", also=WARNING, when=_PULLING_FILES_IN),
    Code("TC203", ERROR, "bad pointer", also=WARNING, when=_PULLING_FILES_IN),
    Code("TC204", ERROR, "missing file", also=WARNING, when=_PULLING_FILES_IN),
    Code("TC205", WARNING, "recursion pruned"),
    Code("TC206", ERROR, "empty loop"),
    Code("TC207", WARNING, "budget exceeded"),
    Code("TC208", ERROR, "too deep (100 schema levels walked, 230 levels inlined)"),
    Code("TC209", WARNING, "unsupported"),
    Code("TC210", ERROR, "not an object"),
    # TC3xx  sources: OpenAPI operations, MCP listings
    Code("TC301", ERROR, "not openapi"),
    Code("TC302", WARNING, "operation skipped"),
    Code("TC303", INFO, "missing operation id"),
    Code("TC304", WARNING, "duplicate operation id"),
    Code("TC305", INFO, "argument renamed"),
    Code("TC306", WARNING, "bad object"),
    Code("TC307", WARNING, "unresolved ref"),
    Code("TC308", INFO, "ignored callbacks"),
    Code("TC309", INFO, "unsupported media type"),
    Code("TC310", INFO, "dropped extensions"),
    Code("TC311", INFO, "not selected"),
    Code("TC312", ERROR, "unknown fixed param (error: a preset is never dropped)"),
    Code("TC313", WARNING, "unknown security scheme"),
    Code("TC314", INFO, "ignored header"),
    Code("TC315", WARNING, "server variable without a default, or outside its enum"),
    Code("TC316", ERROR, "ambiguous preset (a collision-renamed argument; lists the candidates)"),
    Code("TC317", ERROR, "preset cannot be applied"),
    Code("TC318", WARNING, "a tool's output schema needs a `$ref` that could not be resolved: kept without one"),
    Code("TC319", INFO, "credential parameter: hidden from the model, filled from the credential (once per source)"),
    Code("TC325", WARNING, "a `risk` / `read_only` glob of an `openapi:` entry matches no tool"),
    Code("TC326", WARNING, "a name or pattern of the project file matches no tool, as it is matched where it "
         "applies: a `policy` list (`allow_tools`, `deny_tools`, `admin_tools`, `deny_side_effect_tags`), or a "
         "source's `allow_tools`, `deny_tools` or `fixed_params` tool name (with the nearest name): a deny rule "
         "that matches nothing protects nothing"),
    Code("TC350", ERROR, "not a listing"),
    Code("TC351", WARNING, "bad tool"),
    Code("TC352", WARNING, "duplicate tool"),
    Code("TC353", ERROR, "bad page"),
    Code("TC354", INFO, "tool deselected"),
    # TC4xx  provider lowering (the loss report), request fitting
    Code("TC401", INFO, "described"),
    Code("TC402", INFO, "dropped"),
    Code("TC403", INFO, "one of"),
    Code("TC404", INFO, "all of"),
    Code("TC405", INFO, "closed object"),
    Code("TC406", INFO, "null is omitted"),
    Code("TC407", INFO, "not strict"),
    Code("TC408", INFO, "root hoisted"),
    Code("TC409", INFO, "items typed"),
    Code("TC410", INFO, "enum rewritten"),
    Code("TC411", INFO, "type rewritten"),
    Code("TC412", INFO, "open object"),
    Code("TC414", INFO, "description truncated"),
    Code("TC415", INFO, "name mangled"),
    Code("TC416", ERROR, "name clash"),
    Code("TC417", WARNING, "namesake"),
    Code("TC418", INFO, "key renamed"),
    Code("TC419", INFO, "recursion pruned"),
    Code("TC420", INFO, "too many tools for one request (a note: TC771 is the warning, with what to send instead)"),
    Code("TC421", WARNING, "strict budget"),
    Code("TC422", INFO, "map sent as `{key, value}` entries (reversible)"),
    Code("TC423", INFO, "free-form/untyped value sent as a JSON string (reversible)"),
    Code("TC424", INFO, "Gemini: `required` entry naming no property dropped"),
    Code("TC425", INFO, "Gemini: recursion pruned"),
    Code("TC426", INFO, "Claude: document example not sent as an `input_example`"),
    Code("TC429", WARNING, "malformed schema"),
    Code("TC430", ERROR, "invalid output"),
    Code("TC440", ERROR, "unknown tool"),
    Code("TC450", WARNING, "over budget: inlined, the tool's schema passes "
         "`providers.max_inline_nodes`; left out for that target"),
    Code("TC451", INFO, "shared defs: over the inline budget, the tool is sent to Claude with its "
         "definitions under `$defs`"),
    # TC5xx  live MCP servers
    Code("TC501", ERROR, "cannot start"),
    Code("TC502", ERROR, "missing variable"),
    Code("TC503", ERROR, "connect timeout"),
    Code("TC504", ERROR, "connection closed"),
    Code("TC505", ERROR, "request timeout"),
    Code("TC506", ERROR, "server error"),
    Code("TC507", ERROR, "not json rpc", also=WARNING, when="a warning when the listing still succeeded"),
    Code("TC508", WARNING, "repeated cursor"),
    Code("TC509", WARNING, "page cap"),
    Code("TC510", ERROR, "malformed result", also=WARNING,
         when="a warning for a page whose `nextCursor` is not a string: the listing ends there"),
    Code("TC511", ERROR, "unreachable"),
    Code("TC512", ERROR, "incompatible"),
    Code("TC513", INFO, "no tools capability"),
    Code("TC514", ERROR, "stopped by strict"),
    Code("TC515", ERROR, "bad server config"),
    Code("TC516", ERROR, "not utf-8"),
    Code("TC517", ERROR, "unstorable listing"),
    Code("TC520", ERROR, "cannot write"),
    Code("TC530", ERROR, "unexpected"),
    # TC6xx  code generation, the router, `toolc serve`
    Code("TC601", WARNING, "models failed"),
    Code("TC602", WARNING, "model missing"),
    Code("TC603", ERROR, "unsafe module"),
    Code("TC604", INFO, "name collision"),
    Code("TC605", WARNING, "foreign ref"),
    Code("TC606", WARNING, "kept orphan"),
    Code("TC607", ERROR, "keep unparsable"),
    Code("TC608", WARNING, "bundle failed"),
    Code("TC610", WARNING, "shadowing package"),
    Code("TC611", WARNING, "bad pattern"),
    Code("TC612", INFO, "name cut (default `max_identifier_length: 80`)"),
    Code("TC630", ERROR, "unroutable tool"),
    Code("TC631", WARNING, "literal secret"),
    Code("TC632", INFO, "no launch details"),
    Code("TC633", WARNING, "no base url"),
    Code("TC634", ERROR, "(retired: policy settings are typed config fields, a bad one is TC110)"),
    Code("TC636", ERROR, "render failed"),
    Code("TC638", ERROR, "ruff format failed (no `python/` files emitted)"),
    Code("TC640", WARNING, "ambiguous served name (one name, two tools: `toolc serve` refuses it without `?provider=`)"),
    Code("TC642", WARNING, "`gateway.pinning.off` names a server that is not in `mcp_servers`"),
    Code("TC650", WARNING, "uncheckable pattern"),
    Code("TC660", ERROR, "unusable JWKS (`gateway.auth.jwks`)"),
    Code("TC661", ERROR, "private key material in the JWKS"),
    Code("TC662", WARNING, "JWKS file missing at compile time"),
    Code("TC670", ERROR, "literal audit password"),
    Code("TC671", ERROR, "not a postgres dsn"),
    Code("TC680", ERROR, "serve refused"),
    Code("TC681", ERROR, "nothing to serve"),
    Code("TC682", ERROR, "the router was compiled without its server (`router.serve: false` in the project file)"),
    Code("TC690", WARNING, "odd tool name (outside the MCP charset: risk high)"),
    # TC7xx  drift, reports, request budgets
    Code("TC701", WARNING, "no lock"),
    Code("TC702", ERROR, "bad lock"),
    Code("TC703", WARNING, "no catalog"),
    Code("TC704", ERROR, "compile failed"),
    Code("TC705", ERROR, "kind mismatch"),
    Code("TC710", ERROR, "file drift"),
    Code("TC711", ERROR, "tool drift"),
    Code("TC760", ERROR, "cannot write the report (`--report`; its folder is created when missing)"),
    Code("TC770", ERROR, "token budget exceeded"),
    Code("TC771", WARNING, "too many tools for one request: discovery form written"),
    Code("TC772", WARNING, "toolset globs match no tool"),
    Code("TC773", WARNING, "the provider's deferred form would exceed a request (size or tool count): not written"),
    # TC9xx  internal
    Code("TC999", ERROR, "internal error (a bug in toolc, e.g. a name map that does not match its catalog)"),
)


def _by_code(codes: tuple[Code, ...]) -> dict[str, Code]:
    registry: dict[str, Code] = {}
    for entry in codes:
        if entry.code in registry:
            raise ValueError(f"{entry.code} is registered twice in compiler/codes.py")
        if (entry.also is None) != (not entry.when):
            raise ValueError(f"{entry.code}: `also` and `when` go together (a second severity needs its context)")
        registry[entry.code] = entry
    return registry


CODES: Mapping[str, Code] = _by_code(_CODES)
"""Every code, in code order."""


class UnknownCode(LookupError):
    """A code not in the registry: a bug in toolc (register it in compiler/codes.py)."""

    def __init__(self, code: str) -> None:
        super().__init__(f"diagnostic code {code!r} is not registered: add it to _CODES in compiler/codes.py")


def entry(code: str) -> Code:
    try:
        return CODES[code]
    except KeyError:
        raise UnknownCode(code) from None


def severity(code: str) -> Severity:
    """The code's severity where no context says otherwise."""
    return entry(code).severity


def check_severity(code: str, severity: Severity) -> None:
    """Raise `ValueError` unless the registry allows `severity` for `code` (a bug in toolc, never bad input)."""
    found = entry(code)
    if not found.allows(severity):
        allowed = found.severity.value + (f" or {found.also.value}" if found.also else "")
        raise ValueError(f"{code} is {allowed} in compiler/codes.py, not {severity.value}")
