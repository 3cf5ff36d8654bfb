"""A diagnostic's JSON form (what `--report` and the codegen cache hold) names every field, in field order."""

from __future__ import annotations

from dataclasses import asdict, fields

from compiler.infra.diagnostics import Diagnostic, Severity


def test_to_json_is_every_field_in_order_with_the_severity_as_text() -> None:
    diagnostic = Diagnostic(code="TC205", severity=Severity.WARNING, message="recursive $ref pruned",
                            source="graph.json", tool="openapi:graph:op", pointer="/$defs/a", provider="gemini")
    data = diagnostic.to_json()
    assert list(data) == [field.name for field in fields(Diagnostic)]
    assert data == {**asdict(diagnostic), "severity": "warning"}
    assert Diagnostic(**{**data, "severity": Severity(data["severity"])}) == diagnostic
