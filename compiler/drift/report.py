"""Render a DriftReport as text, markdown, JSON or GitHub Actions workflow commands. Deterministic: the same
report gives the same bytes (changes sorted by level, then tool, pointer and rule)."""

from __future__ import annotations

from collections.abc import Callable

from compiler.drift.diff import DriftReport
from compiler.drift.rules import Change, Level
from compiler.infra.serialize import canonical_json

FORMATS = ("text", "markdown", "json", "github")


def _order(change: Change) -> tuple[int, str, str, str, str]:
    worst = change.levels.worst()
    return (-(worst if worst is not None else -1), *change.sort_key())


def _ordered(report: DriftReport) -> list[Change]:
    return sorted(report.changes, key=_order)


def _label(level: Level | None) -> str:
    return level.name if level is not None else "-"


def _headline(report: DriftReport) -> str:
    s = report.summary()
    tools = s["tools"]
    worst = s["worst"] or "none"
    return (f"{tools['old']} → {tools['new']} tools: {tools['added']} added, {tools['removed']} removed, "
            f"{tools['renamed']} renamed, {tools['changed']} changed; {s['changes']} changes "
            f"(ERR {s['levels']['ERR']}, WARN {s['levels']['WARN']}, INFO {s['levels']['INFO']}); worst: {worst}")


def _verdict(report: DriftReport, fail_on: Level) -> list[str]:
    lines: list[str] = []
    if report.files:
        lines.append(f"{len(report.files)} generated file(s) differ from the output folder:")
        lines.extend(f"  {state:8} {path}" for path, state in sorted(report.files.items()))
    if report.fails(fail_on):
        at_level = sum(1 for c in report.changes if (worst := c.levels.worst()) is not None and worst >= fail_on)
        reasons = [f"{at_level} change(s) at or above {fail_on.name}"] if at_level else []
        reasons += [f"{len(report.files)} generated file(s) out of date"] if report.files else []
        fix = f"; run `{report.refresh}` to refresh the output" if report.refresh else ""
        lines.append(f"drift: {' and '.join(reasons)}{fix}")
    return lines


def render_text(report: DriftReport, fail_on: Level) -> str:
    lines = [_headline(report)]
    for change in _ordered(report):
        levels = change.levels
        lines.append(f"{_label(levels.worst()):4} {change.tool}{change.pointer} [{change.change}] {change.message} "
                     f"(stub {_label(levels.stub)}, wire {_label(levels.wire)}, model {_label(levels.model)})")
    lines.extend(_verdict(report, fail_on))
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: DriftReport, fail_on: Level) -> str:
    lines = ["## toolc drift report", "", _headline(report), ""]
    summary = report.summary()
    lines += ["| audience | ERR | WARN | INFO |", "|---|---|---|---|"]
    for audience, counts in summary["audiences"].items():
        lines.append(f"| {audience} | {counts['ERR']} | {counts['WARN']} | {counts['INFO']} |")
    if report.changes:
        lines += ["", "| level | tool | change | pointer | stub | wire | model | message |",
                  "|---|---|---|---|---|---|---|---|"]
        for change in _ordered(report):
            levels = change.levels
            lines.append(
                f"| {_label(levels.worst())} | `{_cell(change.tool)}` | {change.change} | `{_cell(change.pointer)}` | "
                f"{_label(levels.stub)} | {_label(levels.wire)} | {_label(levels.model)} | {_cell(change.message)} |")
    verdict = _verdict(report, fail_on)
    if verdict:
        lines += ["", *(f"> {line.strip()}" for line in verdict)]
    return "\n".join(lines) + "\n"


def render_json(report: DriftReport, fail_on: Level) -> str:
    data = report.to_json()
    data["summary"]["fail_on"] = fail_on.name
    data["summary"]["failed"] = report.fails(fail_on)
    return canonical_json(data).decode()


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


_COMMANDS = {Level.ERR: "error", Level.WARN: "warning", Level.INFO: "notice"}


def render_github(report: DriftReport, fail_on: Level) -> str:
    """GitHub Actions workflow commands: one annotation per change (INFO as notices), then the verdict."""
    lines: list[str] = []
    for change in _ordered(report):
        worst = change.levels.worst() or Level.INFO
        title = _escape_property(f"toolc {change.change}: {change.tool}")
        levels = change.levels
        body = (f"{change.tool}{change.pointer}: {change.message} (stub {_label(levels.stub)}, wire "
                f"{_label(levels.wire)}, model {_label(levels.model)})")
        lines.append(f"::{_COMMANDS[worst]} title={title}::{_escape_data(body)}")
    for path, state in sorted(report.files.items()):
        lines.append(f"::error file={_escape_property(path)},title=toolc drift::{_escape_data(f'{path} is {state}')}")
    verdict = _verdict(report, fail_on)
    lines.append(_headline(report))
    if verdict:
        lines.append(f"::error title=toolc::{_escape_data(verdict[-1])}")
    return "\n".join(lines) + "\n"


RENDERERS: dict[str, Callable[[DriftReport, Level], str]] = {
    "text": render_text, "markdown": render_markdown, "json": render_json, "github": render_github,
}


def render(report: DriftReport, fmt: str, fail_on: Level) -> str:
    return RENDERERS[fmt](report, fail_on)
