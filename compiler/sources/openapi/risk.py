"""An OpenAPI operation's risk as the reader gives it, and why: `policy.operation_risk` (the method, raised by the
operation's words), then the project file's `risk:` and `read_only:` per tool glob (`config.RiskSettings`).

`assess` is the one function: the reader applies it, and `toolc list` / `toolc explain` call it again on the tool
to say why (the reason is not stored in the IR, so no tool's lock hash moved with it). A glob that matches no tool
of its source is TC325, as an empty toolset is TC772: a typo must not leave a tool at the risk the user meant to
change.
"""

from __future__ import annotations

from dataclasses import replace

from compiler.config import RiskSettings
from compiler.infra.diagnostics import Diagnostics
from compiler.ir import HttpBinding, RiskLevel, Tool
from compiler.policy import (
    RiskAssessment,
    glob_matches,
    operation_hints,
    operation_risk,
    overridden,
    read_only_setting,
    risk_setting,
)
from compiler.sources.openapi.codes import UNMATCHED_RISK_GLOB


def assess(tool: Tool, settings: RiskSettings | None) -> RiskAssessment | None:
    """The risk, side effects and read-only flag of an OpenAPI tool, with the reason where they are not the method's
    alone; None for a tool that is no HTTP operation."""
    if not isinstance(tool.binding, HttpBinding):
        return None
    inferred = operation_risk(tool.name, tool.title or "", tool.binding.path, tool.binding.method)
    if settings is None or not (settings.risk or settings.read_only):
        return inferred
    risks = {glob: RiskLevel.from_label(label) for glob, label in settings.risk.items()}
    return overridden(inferred, risk=risk_setting(tool.name, tool.id, risks),
                      read_only=read_only_setting(tool.name, tool.id, settings.read_only))


def apply_risk_settings(tools: list[Tool], settings: RiskSettings, *, diagnostics: Diagnostics,
                        location: str) -> list[Tool]:
    """One source's tools (`location` its document) with the project file's settings applied."""
    if not settings.risk and not settings.read_only:
        return tools
    for key, globs in (("risk", settings.risk), ("read_only", settings.read_only)):
        for glob in globs:
            if not any(glob_matches(glob, tool.name, tool.id) for tool in tools):
                diagnostics.warning(UNMATCHED_RISK_GLOB, f"the project file's `{key}` glob {glob!r} for this "
                                    "document matches none of its tools", source=location)
    return [_applied(tool, settings) for tool in tools]


def _applied(tool: Tool, settings: RiskSettings) -> Tool:
    assessment = assess(tool, settings)
    if assessment is None or assessment.reason is None or not isinstance(tool.binding, HttpBinding):
        return tool
    return replace(tool, risk=assessment.level, side_effects=assessment.side_effects,
                   annotations=operation_hints(tool.binding.method, assessment))
