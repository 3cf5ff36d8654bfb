"""The project file's `audit:` section → what the generated router's `audit_pg.py` bakes (`CONFIGURED_DSN`).

The DSN is baked as written, `${ENV}` references unexpanded (the router expands them when it connects), so a
password must be one: a literal one would be written into generated code.

    TC670 error    a literal password in `audit.dsn` (nothing is baked; use `${ENV}` or PGPASSWORD / .pgpass)
    TC671 error    `audit.dsn` is not a PostgreSQL DSN (a `postgresql://` URL, `key=value` pairs, or `${ENV}`)
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

from compiler.config import AuditConfig
from compiler.infra.diagnostics import Diagnostics

LITERAL_PASSWORD = "TC670"
NOT_A_DSN = "TC671"

_REFERENCE = re.compile(r"\$\{(?:env:)?[A-Za-z_][A-Za-z0-9_]*\}")
_PAIR = re.compile(r"\s*([A-Za-z_]+)\s*=\s*('(?:[^'\\]|\\.)*'|[^\s']+)\s*")
_TOKEN = "TOOLCREF{}Z"


def _passwords(dsn: str) -> list[str] | None:
    """The password values `dsn` spells (references replaced by tokens), or None when it is not a DSN."""
    if "://" in dsn:
        try:
            parts = urlsplit(dsn)
            found = [parts.password] if parts.password else []
        except ValueError:
            return None
        if parts.scheme not in ("postgres", "postgresql"):
            return None
        return found + parse_qs(parts.query).get("password", [])
    pairs: list[tuple[str, str]] = []
    position = 0
    while position < len(dsn):  # key=value pairs must cover the whole string
        match = _PAIR.match(dsn, position)
        if match is None or match.end() == position:
            return None
        pairs.append((match.group(1), match.group(2)))
        position = match.end()
    if not pairs:
        return None
    return [value.strip("'") for key, value in pairs if key == "password"]


def audit_dsn(audit: AuditConfig, diagnostics: Diagnostics) -> str | None:
    """The DSN to bake, or None (SQLite, or an invalid DSN reported as an error)."""
    dsn = audit.dsn
    if dsn is None:
        return None
    references: list[str] = []

    def token(match: re.Match[str]) -> str:
        references.append(match.group(0))
        return _TOKEN.format(len(references) - 1)

    masked = _REFERENCE.sub(token, dsn.strip())
    if re.fullmatch(r"(TOOLCREF\d+Z)+", masked):
        return dsn  # the whole DSN comes from the environment
    passwords = _passwords(masked)
    if not masked or passwords is None:
        diagnostics.error(NOT_A_DSN, "audit.dsn must be a PostgreSQL DSN: a postgresql:// URL, key=value pairs, "
                          "or an ${ENV} reference", source="audit", pointer="/audit/dsn")
        return None
    if any(not re.fullmatch(r"(TOOLCREF\d+Z)+", password) for password in passwords):
        diagnostics.error(LITERAL_PASSWORD, "audit.dsn holds a literal password: it would be written into generated "
                          "code; use an ${ENV} reference (or PGPASSWORD / ~/.pgpass) instead", source="audit",
                          pointer="/audit/dsn")
        return None
    return dsn
