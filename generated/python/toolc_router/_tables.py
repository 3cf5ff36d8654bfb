"""The project's tools, servers, HTTP APIs, policy and provider name maps, baked in by toolc. Do not edit.

No secret is stored here: credentials and environment-specific values are `${ENV}` references, expanded at call time.

The per-tool tables (`TOOLS`, `NAME_MAPS`) are data, not code: `_tables.json` beside this module, read on first use,
each entry made a `ToolSpec`/`NameEntry` when it is first looked up and then kept. A big API's tables (Microsoft
Graph: 11k tools) would otherwise be a Python module of tens of megabytes, compiled on every import.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any, Final, TypeVar

from ._types import (
    CRITICAL,
    AuthScheme,
    BudgetSpec,
    HttpApiSpec,
    HttpArg,
    HttpSpec,
    NameEntry,
    PolicySpec,
    RateLimitSpec,
    RetrySpec,
    ServerSpec,
    ToolSpec,
)

_FILE = Path(__file__).with_name("_tables.json")
_Value = TypeVar("_Value")


@cache
def _data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_FILE.read_bytes())
    return data


class _Table(Mapping[str, _Value]):
    """A read-only table whose rows come from `_tables.json` when first needed; a row becomes its value when it is
    first looked up."""

    def __init__(
        self, rows: Callable[[], Mapping[str, Any]], make: Callable[[Any], _Value]
    ) -> None:
        self._rows = rows
        self._make = make
        self._made: dict[str, _Value] = {}

    def __getitem__(self, key: str) -> _Value:
        if key not in self._made:
            self._made[key] = self._make(self._rows()[key])
        return self._made[key]

    def __contains__(self, key: object) -> bool:
        return key in self._rows()

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows())

    def __len__(self) -> int:
        return len(self._rows())


def _http(row: Mapping[str, Any]) -> HttpSpec:
    """A field left out of the file takes its dataclass default (the compiler leaves out values equal to it)."""
    fields = {
        **row,
        "arguments": tuple(HttpArg(**argument) for argument in row["arguments"]),
    }
    if "security" in row:
        fields["security"] = tuple(
            tuple(AuthScheme(**scheme) for scheme in alternative)
            for alternative in row["security"]
        )
    return HttpSpec(**fields)


def _tool(row: Mapping[str, Any]) -> ToolSpec:
    fields = dict(row)
    for name in ("side_effects", "aliases"):  # JSON arrays; the specs hold tuples
        if name in fields:
            fields[name] = tuple(fields[name])
    if fields.get("http") is not None:
        fields["http"] = _http(fields["http"])
    return ToolSpec(**fields)


def _name_entry(row: Mapping[str, Any]) -> NameEntry:
    return NameEntry(row["tool_id"], arguments=row["arguments"], defs=row["defs"])


@cache
def _names(index: int) -> Mapping[str, NameEntry]:
    """One distinct name table; targets whose maps are equal share it."""
    return _Table(lambda: _data()["name_tables"][index], _name_entry)


POLICY: Final = PolicySpec(
    allow_tools=(),
    deny_tools=(),
    deny_side_effect_tags=(),
    admin_tools=(),
    admin_token_env="TOOLC_ADMIN_TOKEN",
    admin_min_risk=CRITICAL,
    max_concurrency=10,
    audit_db="toolc_audit.sqlite3",
)

SECRET_ENV: Final[tuple[str, ...]] = (
    "TOOLC_ADMIN_TOKEN",
    "TOOLC_PARAMS_APIKEY",
    "TOOLC_PARAMS_BEARER",
)
"""Environment variables holding secrets: their values are redacted from errors and audit rows."""

PROJECT: Final[str] = "toolc default project"
"""The project's name: the MCP server name `serve` announces."""

TARGETS: Final[tuple[str, ...]] = (
    "anthropic",
    "gemini",
    "openai-chat",
    "openai-responses",
)
"""The provider targets compiled (sorted: the order provider names are looked up in)."""

AUDIT_DSN: Final[str | None] = None
"""`audit.dsn` from the project file, `${ENV}` references unexpanded (TOOLC_AUDIT_DSN overrides it)."""

RATE_LIMITS: Final[tuple[RateLimitSpec, ...]] = ()
"""`gateway.rate_limits`: token buckets every matching call takes from, in the project file's order."""

RESULT_BUDGETS: Final[tuple[BudgetSpec, ...]] = ()
"""`gateway.result_budget`: the first rule matching a call cuts its result for the model."""

RETRIES: Final[tuple[RetrySpec, ...]] = ()
"""`gateway.retries`: the first rule matching a call bounds its retries (none matching: 2 retries, 5 s)."""

SERVERS: Final[Mapping[str, ServerSpec]] = {
    "everything": ServerSpec(
        id="everything",
        transport="stdio",
        command=(
            "node",
            "tests/servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
            "stdio",
        ),
        env={},
        cwd=None,
        url=None,
        headers={},
        timeout_ms=30000,
        deny_side_effect_tags=(),
    ),
    "fetch": ServerSpec(
        id="fetch",
        transport="stdio",
        command=("mcp-server-fetch",),
        env={},
        cwd=None,
        url=None,
        headers={},
        timeout_ms=30000,
        deny_side_effect_tags=(),
    ),
    "filesystem": ServerSpec(
        id="filesystem",
        transport="stdio",
        command=(
            "node",
            "tests/servers/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
            ".",
        ),
        env={},
        cwd=None,
        url=None,
        headers={},
        timeout_ms=30000,
        deny_side_effect_tags=(),
    ),
    "git": ServerSpec(
        id="git",
        transport="stdio",
        command=("mcp-server-git", "--repository", "."),
        env={},
        cwd=None,
        url=None,
        headers={},
        timeout_ms=30000,
        deny_side_effect_tags=(),
    ),
    "memory": ServerSpec(
        id="memory",
        transport="stdio",
        command=(
            "node",
            "tests/servers/node_modules/@modelcontextprotocol/server-memory/dist/index.js",
        ),
        env={},
        cwd=None,
        url=None,
        headers={},
        timeout_ms=30000,
        deny_side_effect_tags=(),
    ),
    "sequential-thinking": ServerSpec(
        id="sequential-thinking",
        transport="stdio",
        command=(
            "node",
            "tests/servers/node_modules/@modelcontextprotocol/server-sequential-thinking/dist/index.js",
        ),
        env={},
        cwd=None,
        url=None,
        headers={},
        timeout_ms=30000,
        deny_side_effect_tags=(),
    ),
    "time": ServerSpec(
        id="time",
        transport="stdio",
        command=("mcp-server-time", "--local-timezone", "UTC"),
        env={},
        cwd=None,
        url=None,
        headers={},
        timeout_ms=30000,
        deny_side_effect_tags=(),
    ),
}

HTTP_APIS: Final[Mapping[str, HttpApiSpec]] = {
    "params": HttpApiSpec(
        id="params",
        base_url="https://eu.example.test/v1",
        timeout_ms=30000,
        deny_side_effect_tags=(),
        auth={"apiKey": "${TOOLC_PARAMS_APIKEY}", "bearer": "${TOOLC_PARAMS_BEARER}"},
        base_url_env="TOOLC_BASE_URL_PARAMS",
    ),
    "petstore": HttpApiSpec(
        id="petstore",
        base_url="http://127.0.0.1:8080/api",
        timeout_ms=30000,
        deny_side_effect_tags=(),
        auth={},
        base_url_env="TOOLC_BASE_URL_PETSTORE",
    ),
}

TOOLS: Final[Mapping[str, ToolSpec]] = _Table(lambda: _data()["tools"], _tool)
"""Tool id → how to call it (and what policy knows about it)."""

NAME_MAPS: Final[Mapping[str, Mapping[str, NameEntry]]] = _Table(
    lambda: _data()["name_maps"], _names
)
"""Provider target → provider-facing tool name → the tool and the argument shape it maps back to."""
