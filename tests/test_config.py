"""The project file: every section typed, unknown keys refused with their location and the nearest valid name,
validated whether or not code is generated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compiler.config import PolicyConfig, config_from_data
from compiler.infra.diagnostics import CompilerError
from tests.support.cli import run_toolc


def _error(data: object) -> tuple[str, str, str]:
    with pytest.raises(CompilerError) as caught:
        config_from_data(data, root=Path("."), source="toolc.yaml")
    diagnostic = caught.value.diagnostic
    return diagnostic.code, diagnostic.pointer, diagnostic.message


def test_an_unknown_policy_key_is_an_error_naming_the_nearest_valid_one() -> None:
    code, pointer, message = _error({"policy": {"deny_tool": ["*delete*"]}})
    assert (code, pointer) == ("TC110", "/policy/deny_tool")
    assert "unknown key 'deny_tool'" in message and "did you mean 'deny_tools'?" in message


@pytest.mark.parametrize(("data", "pointer", "suggestion"), [
    ({"outptu": "out"}, "/outptu", "output"),
    ({"resolver": {"max_dept": 2}}, "/resolver/max_dept", "max_depth"),
    ({"names": {"namesakes": "skip"}}, "/names/namesakes", "namesake"),
    ({"providers": {"anthropic_stric": True}}, "/providers/anthropic_stric", "anthropic_strict"),
    ({"openapi": [{"path": "a.yaml", "base_uri": "x"}]}, "/openapi/0/base_uri", "base_url"),
    ({"mcp_servers": [{"id": "a", "comand": ["x"]}]}, "/mcp_servers/0/comand", "command"),
])
def test_every_section_refuses_unknown_keys(data: object, pointer: str, suggestion: str) -> None:
    code, found, message = _error(data)
    assert (code, found) == ("TC110", pointer)
    assert f"did you mean {suggestion!r}?" in message


def test_an_unknown_key_with_no_near_name_lists_the_valid_ones() -> None:
    _, _, message = _error({"policy": {"zzz": 1}})
    assert "valid keys: allow_tools, deny_tools" in message


def test_router_settings_are_typed_policy_fields() -> None:
    policy = PolicyConfig(admin_min_risk="HIGH", audit_db="audit/a.db", max_concurrency=3)
    assert (policy.admin_min_risk, policy.audit_db, policy.max_concurrency) == ("high", "audit/a.db", 3)
    assert PolicyConfig(admin_min_risk=None).admin_min_risk is None
    assert _error({"policy": {"audit_db": ""}})[1] == "/policy/audit_db"


def test_policy_is_validated_without_codegen(tmp_path: Path) -> None:
    (tmp_path / "toolc.yaml").write_text("codegen: false\npolicy:\n  deny_tool: ['*']\n")
    result = run_toolc("compile", "--no-codegen", "-c", tmp_path / "toolc.yaml")
    assert result.exit_code == 2
    assert "TC110" in result.stderr and "deny_tools" in result.stderr


def test_a_document_given_as_the_project_file_says_so(tmp_path: Path) -> None:
    code, _, message = _error({"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {}})
    assert code == "TC110" and "an OpenAPI document, not a project file" in message
    code, _, message = _error({"tools": [{"name": "x", "inputSchema": {"type": "object"}}]})
    assert code == "TC110" and "an MCP tool listing" in message


def test_every_problem_of_the_project_file_is_reported_at_once_with_a_suggestion(tmp_path: Path) -> None:
    """Three typos (a misspelt required key, a misspelt section, a misspelt target): three diagnostics in one run,
    each located and each naming what was meant; not one bare "Field required"."""
    (tmp_path / "toolc.yaml").write_text("openapi:\n  - id: p\n    pathh: params.yaml\npolcy:\n  deny_tools: []\n"
                                         "targets: [openai-chat, claud]\n")
    report = tmp_path / "out" / "report.json"
    result = run_toolc("compile", "-c", tmp_path / "toolc.yaml", "--report", report)
    assert result.exit_code == 2
    lines = [line.removeprefix(f"{tmp_path}/") for line in result.stderr.strip().splitlines()]
    assert lines == [
        "toolc.yaml /openapi/0/pathh: error[TC110]: unknown key 'pathh'; did you mean 'path'? ('path' is required)",
        "toolc.yaml /polcy: error[TC110]: unknown key 'polcy'; did you mean 'policy'?",
        "toolc.yaml /targets: error[TC110]: unknown target 'claud'; did you mean 'claude'?",
    ], result.stderr
    written = json.loads(report.read_text())  # the README: written even when the compile fails
    assert [d["pointer"] for d in written["diagnostics"]] == ["/openapi/0/pathh", "/polcy", "/targets"]


def test_targets_in_the_project_file_take_the_command_line_aliases() -> None:
    config = config_from_data({"targets": ["claude", "openai"]}, root=Path("."), source="toolc.yaml")
    assert config.targets == ("anthropic", "openai-chat", "openai-responses")
