"""Real drift: `toolc diff` on released versions of MCP servers and of the GitHub REST description.
Reports are snapshot-tested; the GitHub documents are compiled once for the module."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from compiler.cli import main
from compiler.commands.check import compile_alone, diff_inputs
from compiler.drift.diff import DriftReport
from compiler.drift.report import render
from compiler.drift.rules import Level
from tests.support.paths import FIXTURES

FIXTURES = FIXTURES
MCP = FIXTURES / "drift" / "mcp"
GITHUB_OLD = FIXTURES / "drift" / "openapi" / "github-api.github.com@22.0.0.json"
GITHUB_NEW = FIXTURES / "corpus" / "openapi" / "github.json"

MCP_PAIRS = [
    ("server-filesystem@2025.1.14", "server-filesystem@2025.7.1"),
    ("server-filesystem@2025.7.1", "server-filesystem@2026.8.31"),
    ("server-everything@2025.1.14", "server-everything@2026.8.31"),
]


# rule id → the levels each rule fixture states as literals (fixtures/drift/rules/<rule>.json, "levels").
FIXTURE_LEVELS = {data["rule"]: data["levels"] for data in
                  (json.loads(case.read_text()) for case in (FIXTURES / "drift" / "rules").glob("*.json"))}


def _diff(old: Path, new: Path) -> DriftReport:
    return diff_inputs(compile_alone(old), compile_alone(new), old, new)


def _assert_table_levels(report: DriftReport) -> None:
    for change in report.changes:
        if change.change in FIXTURE_LEVELS:
            assert change.levels.to_json() == FIXTURE_LEVELS[change.change], change.to_json()
        if change.change in ("tool-removed", "tool-renamed"):
            assert change.levels.worst() is Level.ERR
        if change.change == "tool-added":
            assert (change.levels.stub, change.levels.wire, change.levels.model) == (Level.INFO, Level.INFO, Level.WARN)


@pytest.mark.parametrize(("old", "new"), MCP_PAIRS, ids=[f"{a}->{b.split('@')[1]}" for a, b in MCP_PAIRS])
def test_mcp_server_drift(old: str, new: str, snapshot: object) -> None:
    report = _diff(MCP / f"{old}.json", MCP / f"{new}.json")
    _assert_table_levels(report)
    assert render(report, "markdown", Level.ERR) == snapshot


def test_server_everything_renames_and_removals() -> None:
    report = _diff(MCP / "server-everything@2025.1.14.json", MCP / "server-everything@2026.8.31.json")
    assert ("add", "get-sum") in report.renamed
    assert ("getTinyImage", "get-tiny-image") in report.renamed
    assert "sampleLLM" in report.removed
    assert report.worst() is Level.ERR and report.fails(Level.ERR)


def test_cli_diff_json_and_exit_code(snapshot: object) -> None:
    old, new = MCP / "server-everything@2025.1.14.json", MCP / "server-everything@2026.8.31.json"
    result = CliRunner().invoke(main, ["diff", str(old), str(new), "--format", "json"])
    assert result.exit_code == 1, result.output
    data = json.loads(result.output)
    assert set(data) == {"changes", "summary"}
    assert set(data["changes"][0]) == {"tool", "change", "pointer", "levels", "message"}
    assert data == snapshot
    # Additions alone stay under the default threshold.
    same = CliRunner().invoke(main, ["diff", str(MCP / "server-filesystem@2025.1.14.json"),
                                     str(MCP / "server-filesystem@2025.7.1.json")])
    assert same.exit_code == 0, same.output


def test_cli_diff_refuses_mixed_kinds(tmp_path: Path) -> None:
    openapi = tmp_path / "openapi.json"  # a real OpenAPI document: the rule fixture's `before`
    openapi.write_text(json.dumps(json.loads((FIXTURES / "drift" / "rules" / "binding-changed.json").read_text())["before"]))
    result = CliRunner().invoke(main, ["diff", str(MCP / "server-everything@2025.1.14.json"), str(openapi)])
    assert result.exit_code != 0
    assert "TC705" in result.output, result.output


@pytest.fixture(scope="module")
def github_report() -> Iterator[DriftReport]:
    yield _diff(GITHUB_OLD, GITHUB_NEW)


@pytest.mark.slow
def test_github_counts(github_report: DriftReport) -> None:
    assert len(github_report.added) == 152
    assert len(github_report.removed) == 37
    _assert_table_levels(github_report)
    issues_update = {(c.change, c.pointer) for c in github_report.changes if c.tool == "issues/update"}
    assert ("input-type-widened-union", "/inputSchema/properties/type/type") in issues_update


@pytest.mark.slow
def test_github_report(github_report: DriftReport, snapshot: object) -> None:
    """The summary and every ERR-level change (the full report is ~2,000 changes)."""
    data = github_report.to_json()
    errors = [c for c in data["changes"] if "ERR" in c["levels"].values()]
    assert {"summary": data["summary"], "errors": errors, "added": github_report.added} == snapshot
