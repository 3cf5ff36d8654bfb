"""The project file's `audit.dsn`: what is baked into the generated router, and what is refused (TC670, TC671)."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.codegen.router.audit import audit_dsn
from compiler.config import AuditConfig, config_from_data
from compiler.infra.diagnostics import CompilerError, Diagnostics


@pytest.mark.parametrize("dsn", [
    "${FLEET_AUDIT_DSN}",
    "${env:FLEET_AUDIT_DSN}",
    "postgresql://toolc:${AUDIT_PASSWORD}@db.internal:5432/audit",
    "postgres://toolc@db.internal/audit?sslmode=require",
    "host=db.internal dbname=audit user=toolc password=${AUDIT_PASSWORD}",
    "host=db.internal dbname=audit user=toolc password='${AUDIT_PASSWORD}'",
    "host=db.internal dbname=audit",  # libpq then reads PGPASSWORD or ~/.pgpass
])
def test_references_and_password_free_dsns_are_baked_as_written(dsn: str) -> None:
    diagnostics = Diagnostics()
    assert audit_dsn(AuditConfig(dsn=dsn), diagnostics) == dsn
    assert list(diagnostics) == []


@pytest.mark.parametrize(("dsn", "code"), [
    ("postgresql://toolc:hunter2@db.internal/audit", "TC670"),
    ("postgresql://toolc@db.internal/audit?password=hunter2", "TC670"),
    ("host=db.internal password=hunter2", "TC670"),
    ("host=db.internal password='pre${X}'", "TC670"),  # half a reference is half a literal
    ("mysql://toolc@db.internal/audit", "TC671"),
    ("just words", "TC671"),
    ("", "TC671"),
])
def test_a_literal_password_or_a_non_dsn_is_refused(dsn: str, code: str) -> None:
    diagnostics = Diagnostics()
    assert audit_dsn(AuditConfig(dsn=dsn), diagnostics) is None
    assert [(d.code, d.pointer) for d in diagnostics] == [(code, "/audit/dsn")]
    assert "hunter2" not in "".join(d.render() for d in diagnostics)


def test_no_audit_section_means_sqlite() -> None:
    config = config_from_data({}, root=Path("."), source="toolc.yaml")
    assert audit_dsn(config.audit, Diagnostics()) is None


def test_the_audit_section_is_typed() -> None:
    config = config_from_data({"audit": {"dsn": "${X}"}}, root=Path("."), source="toolc.yaml")
    assert config.audit.dsn == "${X}"
    with pytest.raises(CompilerError, match="audit"):
        config_from_data({"audit": {"dsn": "${X}", "pasword": "typo"}}, root=Path("."), source="toolc.yaml")
