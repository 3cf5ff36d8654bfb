"""Typed stand-in for the generated `_tables.py`, so mypy checks the static modules here in the repository.

Never copied into a router (`codegen.router.static_files` skips `.pyi`). It declares what every generated
`_tables.py` defines (`templates/router/_tables.py.jinja`); a test compares the two.
"""

from collections.abc import Mapping
from typing import Final

from ._types import (
    BudgetSpec,
    HttpApiSpec,
    NameEntry,
    PolicySpec,
    RateLimitSpec,
    RetrySpec,
    ServerSpec,
    ToolSpec,
)

POLICY: Final[PolicySpec]
SECRET_ENV: Final[tuple[str, ...]]
PROJECT: Final[str]
TARGETS: Final[tuple[str, ...]]
AUDIT_DSN: Final[str | None]
RATE_LIMITS: Final[tuple[RateLimitSpec, ...]]
RESULT_BUDGETS: Final[tuple[BudgetSpec, ...]]
RETRIES: Final[tuple[RetrySpec, ...]]
SERVERS: Final[Mapping[str, ServerSpec]]
HTTP_APIS: Final[Mapping[str, HttpApiSpec]]
TOOLS: Final[Mapping[str, ToolSpec]]
NAME_MAPS: Final[Mapping[str, Mapping[str, NameEntry]]]
