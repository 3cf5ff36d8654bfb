"""Diagnostics: every problem the compiler finds is a value with a stable code and a location.

Codes are grouped by stage; each module declares the codes it raises as constants next to the code that
raises them, and `compiler/codes.py` registers every one with its severity (the README's table is
generated from it):

    TC1xx  reading input (files, JSON/YAML syntax, kind detection, config)
    TC2xx  $ref resolution (network, outside root, cycles, budget, bad pointers)
    TC3xx  sources (OpenAPI operations, MCP listings)
    TC4xx  provider lowering and the loss report
    TC5xx  live MCP servers
    TC6xx  code generation
    TC7xx  drift
    TC9xx  internal
"""

from __future__ import annotations

import heapq
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from compiler import codes
from compiler.codes import Severity

__all__ = ["CompilerError", "Diagnostic", "Diagnostics", "NoteGroup", "Severity", "group_notes", "reason"]

_SEVERITY_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
_SEVERITIES = {severity.value: severity for severity in Severity}
_checked: set[tuple[str, Severity]] = set()
"""(code, severity) pairs `codes.check_severity` passed (`Diagnostic.from_row`)."""


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
    severity: Severity
    message: str
    source: str = ""
    """The input it concerns: a source id or a file path, with `:line:col` when known."""
    tool: str = ""
    """The tool id, when the problem belongs to one tool."""
    pointer: str = ""
    """A JSON pointer into the tool's schema or the source document."""
    provider: str = ""
    """The target, for lowering diagnostics (the loss report)."""

    def __post_init__(self) -> None:
        codes.check_severity(self.code, self.severity)
        # Notes repeat their messages by the hundred thousand (Microsoft Graph: 236,000 notes, 14,000 messages):
        # one shared string per message is what a compile holds, and what a worker's pickle carries back once.
        object.__setattr__(self, "message", sys.intern(self.message))

    def __reduce__(self) -> tuple[type[Diagnostic], tuple[str, Severity, str, str, str, str, str]]:
        """Pickled as its fields (workers send their diagnostics back): the dataclass default goes through
        `fields()` and one `__setattr__` per field, twice the time for a quarter of a million notes."""
        return Diagnostic, (self.code, self.severity, self.message, self.source, self.tool, self.pointer,
                            self.provider)

    @classmethod
    def of(cls, code: str, message: str, *, severity: Severity | None = None, source: str = "", tool: str = "",
           pointer: str = "", provider: str = "") -> Diagnostic:
        """A diagnostic with the severity the registry gives `code`; `severity` only where the registry lets the
        code change it with context (`compiler/codes.py`)."""
        return cls(code, severity or codes.severity(code), message, source=source, tool=tool, pointer=pointer,
                   provider=provider)

    def location(self) -> str:
        parts = [p for p in (self.source, self.tool) if p]
        where = " ".join(parts)
        if self.pointer:
            where = f"{where} {self.pointer}" if where else self.pointer
        return where or "<project>"

    def render(self) -> str:
        """One line, the way compilers print: `location: severity[CODE]: message`."""
        prefix = f"[{self.provider}] " if self.provider else ""
        return f"{self.location()}: {self.severity.value}[{self.code}]: {prefix}{self.message}"

    def to_json(self) -> dict[str, Any]:
        # Spelt out, in field order, rather than `dataclasses.asdict`, which deep-copies every value: a report of
        # Microsoft Graph's 236,000 diagnostics spent 2 s there.
        return {"code": self.code, "severity": self.severity.value, "message": self.message, "source": self.source,
                "tool": self.tool, "pointer": self.pointer, "provider": self.provider}

    @classmethod
    def from_json(cls, item: Any) -> Diagnostic:
        """The inverse of `to_json` (for diagnostics a cache replays); KeyError, TypeError or ValueError on
        what is not one."""
        return cls(code=item["code"], severity=Severity(item["severity"]), message=item["message"],
                   source=item.get("source", ""), tool=item.get("tool", ""), pointer=item.get("pointer", ""),
                   provider=item.get("provider", ""))

    def to_row(self) -> list[str]:
        """The fields in order, as a cache keeps hundreds of thousands of them (a tenth of `from_json`'s time back)."""
        return [self.code, self.severity.value, self.message, self.source, self.tool, self.pointer, self.provider]

    @classmethod
    def from_row(cls, row: Any) -> Diagnostic:
        """The inverse of `to_row`; KeyError, TypeError or ValueError on what is not one. Made without
        `__post_init__`, whose severity check is done once per code and severity (`_checked`): a recompile of
        Microsoft Graph replays 200,000 cached diagnostics, and the check was a third of making each."""
        code, severity, message, source, tool, pointer, provider = row
        level = _SEVERITIES[severity]
        if (code, level) not in _checked:
            codes.check_severity(code, level)
            _checked.add((code, level))
        made = object.__new__(cls)
        put = object.__setattr__  # as the frozen dataclass's own __init__ sets each field
        put(made, "code", code)
        put(made, "severity", level)
        put(made, "message", sys.intern(message))
        put(made, "source", source)
        put(made, "tool", tool)
        put(made, "pointer", pointer)
        put(made, "provider", provider)
        return made

    def sort_key(self) -> tuple[str, str, str, str, int, str]:
        return (self.source, self.tool, self.provider, self.pointer, _SEVERITY_ORDER[self.severity], self.code)


@dataclass
class Diagnostics:
    """A sink that stages append to. Order of arrival is kept; `sorted()` gives the stable report order."""

    items: list[Diagnostic] = field(default_factory=list)

    def add(self, diagnostic: Diagnostic) -> None:
        self.items.append(diagnostic)

    def extend(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.items.extend(diagnostics)

    def report(self, code: str, message: str, *, severity: Severity | None = None, source: str = "", tool: str = "",
               pointer: str = "", provider: str = "") -> Diagnostic:
        """Append `Diagnostic.of(...)`: the severity is the registry's (see there for `severity`)."""
        diagnostic = Diagnostic.of(code, message, severity=severity, source=source, tool=tool, pointer=pointer,
                                   provider=provider)
        self.items.append(diagnostic)
        return diagnostic

    @property
    def has_errors(self) -> bool:
        return any(d.severity is Severity.ERROR for d in self.items)

    def count(self, severity: Severity) -> int:
        return sum(1 for d in self.items if d.severity is severity)

    def codes(self) -> set[str]:
        return {d.code for d in self.items}

    def sorted(self) -> list[Diagnostic]:
        return sorted(self.items, key=Diagnostic.sort_key)

    def __iter__(self) -> Iterator[Diagnostic]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


_PARTICULARS = re.compile(r"'[^']*'|\"[^\"]*\"|\b\d[\d,.]*")


def reason(message: str) -> str:
    """`message` without its particulars (quoted names and numbers, each written `…`; a code such as TC771 or a
    name such as o200k stays): what notes of one kind share. `name 'a' written as 'b'` and `name 'c' written as
    'd'` are one reason, `dropped readOnly` and `dropped discriminator` two."""
    return _PARTICULARS.sub("…", message)


@dataclass(frozen=True)
class NoteGroup:
    """Diagnostics of one code and one reason: how `-v` prints a big API's loss report (Microsoft Graph's
    236,000 notes are 139 groups)."""

    code: str
    severity: Severity
    reason: str
    count: int
    providers: dict[str, int]
    """Target → how many of the group's notes it has (in target-name order; notes of no target are left out)."""
    first: tuple[Diagnostic, ...]
    """The first few, in report order (`Diagnostic.sort_key`)."""

    def header(self) -> str:
        targets = ", ".join(f"{target} {count:,}" for target, count in self.providers.items())
        return (f"{self.severity.value}[{self.code}]: {self.count:,} notes: {self.reason}"
                + (f" ({targets})" if targets else ""))


def group_notes(diagnostics: Iterable[Diagnostic], *, examples: int = 3) -> list[NoteGroup]:
    """Group by code and reason, in code and reason order; each group with its count per target and its first
    `examples` diagnostics. One pass, and a reason worked out once per distinct message."""
    reasons: dict[str, str] = {}
    members: dict[tuple[str, str], list[Diagnostic]] = {}
    for diagnostic in diagnostics:
        message = diagnostic.message
        why = reasons.get(message)
        if why is None:
            why = reasons[message] = reason(message)
        members.setdefault((diagnostic.code, why), []).append(diagnostic)
    groups: list[NoteGroup] = []
    for (code, why), found in sorted(members.items()):
        providers: dict[str, int] = {}
        for diagnostic in found:
            if diagnostic.provider:
                providers[diagnostic.provider] = providers.get(diagnostic.provider, 0) + 1
        first = tuple(heapq.nsmallest(examples, found, key=Diagnostic.sort_key))
        groups.append(NoteGroup(code, first[0].severity, why, len(found), dict(sorted(providers.items())), first))
    return groups


class CompilerError(Exception):
    """The one root exception: raised only to abort, carrying the diagnostic that explains why."""

    def __init__(self, diagnostic: Diagnostic, *more: Diagnostic, usage: bool = False) -> None:
        super().__init__("\n".join(found.render() for found in (diagnostic, *more)))
        self.diagnostic = diagnostic
        self.diagnostics = (diagnostic, *more)
        """Every problem found before aborting (a project file's are all reported at once), the first first."""
        self.usage = usage
        """The command line asked for something that cannot be (exit 2, like a project-file error)."""
