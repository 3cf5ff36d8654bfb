# Typed stand-in for the generated `_parts.py` (`compiler.codegen.router.parts`), so the static modules type-check
# in this repository; the generated module imports both from `audit_pg` or from `audit`.
from collections.abc import Mapping

from .audit import AuditSink

def configured_sink(environ: Mapping[str, str], sqlite_path: str) -> AuditSink: ...
def configured_dsn(environ: Mapping[str, str]) -> str | None: ...
