"""Shared by the serve tests: a project compiled by `toolc compile` (an OpenAPI fixture behind a loopback HTTP
server that records raw requests, and the recorded listings of mcp-server-time and server-everything, which run
for real), and `toolc serve` started as a subprocess."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import yaml

from tests.servers.inprocess import free_port
from tests.servers.real import EVERYTHING
from tests.support.cli import run_toolc
from tests.support.loopback import stop, wait_for_port
from tests.support.paths import FIXTURES

SPEC_HASH = "sha256:served"
API_KEY = "k-served-123456"
BEARER = "bearer-for-params"
"""The token of the document's default scheme: a call without it is refused (issue 21)."""
PRESETS = {"session": "s-fixed", "dryRun": True}
"""updatePet's preset parameters (a cookie and a query parameter), hidden from the model, merged by the router."""


def write_project(folder: Path, node: str) -> Path:
    project = {
        "name": "served project",
        "output": "out",
        "mcp_servers": [
            {"id": "time", "command": [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"],
             "recording": str(FIXTURES / "mcp" / "mcp-server-time.json")},
            {"id": "everything", "command": [node, str(EVERYTHING), "stdio"],
             "recording": str(FIXTURES / "mcp" / "server-everything.json")},
        ],
        "openapi": [{"id": "params", "path": str(FIXTURES / "openapi" / "params.yaml"),
                     "base_url": "${PARAMS_API_URL}/v1", "fixed_params": {"updatePet": PRESETS}}],
        "policy": {"deny_tools": ["get-env"]},
    }
    path = folder / "toolc.yaml"
    path.write_text(yaml.safe_dump(project, sort_keys=False))
    result = run_toolc("compile", "-c", path)
    assert result.exit_code == 0, result.stderr
    return path


def serve_env(api_url: str, **extra: str) -> dict[str, str]:
    environ = {key: value for key, value in os.environ.items() if not key.startswith("TOOLC_")}
    return {**environ, "PARAMS_API_URL": api_url, "TOOLC_PARAMS_APIKEY": API_KEY, "TOOLC_PARAMS_BEARER": BEARER,
            **extra}


def serve_args(project: Path, *extra: str) -> list[str]:
    return ["-m", "compiler", "serve", "-c", str(project), "--spec-hash", SPEC_HASH, "--project-id", "served",
            *extra]


@contextmanager
def serving_http(project: Path, environ: dict[str, str], *extra: str, log: IO[bytes] | None = None,
                 port: int | None = None) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`toolc serve --transport http` on 127.0.0.1:<port, or a free one>; yields (base URL, process); stops it with
    SIGTERM. Its stderr goes to `log` when given (the caller's to read and close)."""
    port = port or free_port()
    own_log = log is None
    log = tempfile.TemporaryFile() if log is None else log  # noqa: SIM115 - closed in the finally below
    process = subprocess.Popen([sys.executable, *serve_args(project, "--transport", "http", "--port", str(port),
                                                            *extra)],
                               env=environ, stdout=subprocess.DEVNULL, stderr=log, cwd=project.parent)
    try:
        wait_for_port(port, process, "toolc serve", log=log)
        yield f"http://127.0.0.1:{port}", process
    finally:
        stop(process, timeout_s=30)
        if own_log:
            log.close()


def audit_rows(project: Path, database: Path | None = None) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(invocation id, event type, tool id, payload) of every row in the project's audit database."""
    with sqlite3.connect(database or project.parent / "toolc_audit.sqlite3") as connection:
        rows = connection.execute(
            "SELECT invocation_id, event_type, tool_id, payload FROM task_audits ORDER BY id").fetchall()
    return [(i, kind, tool, json.loads(payload)) for i, kind, tool, payload in rows]
