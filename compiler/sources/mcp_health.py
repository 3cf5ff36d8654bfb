"""A server's health, as seed 000's `health_check` reports it: healthy, degraded or unhealthy.

- unhealthy: it could not be listed (did not start, no answer within `timeout_ms`, protocol or transport error);
- degraded: it was listed, but something is off: a warning while listing (non-JSON on stdout, a repeated cursor,
  the page cap), tools the compiler has to skip (invalid schemas, duplicate names), or an answer that took more
  than half of its `timeout_ms`;
- healthy: listed, clean, in time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compiler.infra.diagnostics import Diagnostics, Severity
from compiler.sources.mcp_fetch import Outcome
from compiler.sources.recording import read_recording

HEALTHY, DEGRADED, UNHEALTHY = "healthy", "degraded", "unhealthy"
SLOW_FRACTION = 0.5


@dataclass(frozen=True)
class Health:
    server: str
    status: str
    tools: int
    seconds: float
    protocol_version: str | None
    reasons: tuple[str, ...]

    def summary(self) -> str:
        head = f"{self.tools} tools, {self.seconds:.1f}s"
        if self.protocol_version:
            head += f", protocol {self.protocol_version}"
        return "; ".join((head, *self.reasons))

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "tools": self.tools, "seconds": round(self.seconds, 3),
                "protocol_version": self.protocol_version, "reasons": list(self.reasons)}


def assess(outcome: Outcome) -> Health:
    server = outcome.server
    reasons = [f"[{d.code}] {d.message}" for d in outcome.diagnostics if d.severity is Severity.ERROR]
    document = outcome.document
    if document is None or reasons:
        return Health(server.id, UNHEALTHY, 0, outcome.seconds, None, tuple(reasons or ["not listed"]))
    reasons = [f"[{d.code}] {d.message}" for d in outcome.diagnostics if d.severity is Severity.WARNING]
    scratch = Diagnostics()
    read_recording(document, source_id=server.id, location=server.id, diagnostics=scratch)
    skipped = [d for d in scratch if d.severity is not Severity.INFO]
    if skipped:
        reasons.append(f"{len(skipped)} tool(s) cannot be compiled, e.g. [{skipped[0].code}] "
                       f"{skipped[0].tool or skipped[0].pointer}: {skipped[0].message}")
    if outcome.seconds > SLOW_FRACTION * server.timeout_ms / 1000:
        reasons.append(f"slow: {outcome.seconds:.1f}s of a {server.timeout_ms} ms timeout")
    initialize = document.get("initialize") or {}
    version = initialize.get("protocolVersion") if isinstance(initialize, dict) else None
    return Health(server.id, DEGRADED if reasons else HEALTHY, outcome.tool_count, outcome.seconds,
                  version if isinstance(version, str) else None, tuple(reasons))
