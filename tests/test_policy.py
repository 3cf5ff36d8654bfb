"""`policy.operation_risk`: an OpenAPI operation's method, raised (never lowered) by the verbs in its id, path or
summary (issue 21)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from compiler import policy
from compiler.ir import RiskLevel
from compiler.policy import RiskAssessment, operation_risk, overridden
from tests.support.cli import run_toolc
from tests.support.paths import FIXTURES
from tests.support.providers import make_tool

LOW, MEDIUM, HIGH, CRITICAL = RiskLevel.LOW, RiskLevel.MEDIUM, RiskLevel.HIGH, RiskLevel.CRITICAL


@pytest.mark.parametrize(("operation_id", "summary", "path", "method", "level", "effect", "place"), [
    ("get_auth_revoke", "", "/auth.revoke", "GET", CRITICAL, "remote.delete", "operationId"),  # Slack's
    ("tokenInfo", "", "/tokens/{id}/revoke", "GET", CRITICAL, "remote.delete", "path"),
    ("tokenInfo", "Revokes a token.", "/tokens/{id}", "GET", CRITICAL, "remote.delete", "summary"),
    ("cachePurge", "", "/cache", "POST", CRITICAL, "remote.delete", "operationId"),
    ("resetPassword", "", "/password", "GET", HIGH, "remote.write", "operationId"),
    ("sessions", "Logout everywhere", "/sessions", "HEAD", HIGH, "remote.write", "summary"),
])
def test_a_state_changing_verb_raises_the_method(operation_id: str, summary: str, path: str, method: str,
                                                 level: RiskLevel, effect: str, place: str) -> None:
    assessment = operation_risk(operation_id, summary, path, method)
    assert assessment.level == level
    assert effect in assessment.side_effects and "network.http" in assessment.side_effects
    assert assessment.read_only is False
    assert assessment.reason is not None and f"in its {place} raises {method}" in assessment.reason


@pytest.mark.parametrize(("operation_id", "summary", "path", "method", "level", "read_only"), [
    ("repos/list-commits", "List commits", "/repos/{owner}/{repo}/commits", "GET", LOW, True),  # nouns read
    ("listDeletedItems", "List deleted items", "/deleted-items", "GET", LOW, True),  # past participles too
    ("getItem", "Get an item", "/items/{delete}", "GET", LOW, True),  # a path variable's name is no verb
    ("getItem", "Get an item; removes nothing", "/items", "GET", LOW, True),  # only the summary's first word
    ("dropdownOptions", "", "/dropdown", "GET", LOW, True),  # whole words only
    ("searchPets", "Search pets", "/pets/search", "POST", HIGH, False),  # a reading verb never lowers
    ("listThings", "List things", "/things", "DELETE", CRITICAL, False),
    ("revokeToken", "", "/tokens/{id}", "DELETE", CRITICAL, False),  # already as high as it gets: no reason
])
def test_words_never_lower_and_nouns_do_not_raise(operation_id: str, summary: str, path: str, method: str,
                                                  level: RiskLevel, read_only: bool) -> None:
    assessment = operation_risk(operation_id, summary, path, method)
    assert (assessment.level, assessment.read_only, assessment.reason) == (level, read_only, None)


def test_the_project_file_sets_risk_and_read_only_either_way_and_says_so() -> None:
    search = operation_risk("searchPets", "Search pets", "/pets/search", "POST")
    lowered = overridden(search, risk=(LOW, "search*"), read_only=(True, "search*"))
    assert lowered == RiskAssessment(LOW, ("network.http",), True, "the project file sets risk low ('search*'; "
                                     "inferred high); the project file sets read_only true ('search*')")
    revoke = operation_risk("auth_revoke", "", "/auth.revoke", "GET")
    raised = overridden(revoke, risk=(MEDIUM, "*revoke*"), read_only=None)
    assert raised.level == MEDIUM and raised.read_only is False
    assert raised.reason == ("'revoke' in its operationId raises GET from low to critical; the project file sets "
                             "risk medium ('*revoke*'; inferred critical)")
    plain = operation_risk("getPet", "", "/pets/{id}", "GET")
    assert overridden(plain, risk=(LOW, "*"), read_only=(True, "*")) is plain  # saying what is inferred: no reason
    written = overridden(plain, risk=None, read_only=(False, "getPet"))
    assert written.side_effects == ("network.http", "remote.write") and written.read_only is False


def test_policy_patterns_that_match_no_tool_are_warned_as_the_router_matches_them(tmp_path: Path) -> None:
    """A deny rule that matches nothing protects nothing: TC326 for each, at its pointer, through the CLI; an
    error under --strict. Deny and admin patterns match case-folded (as the router's safe side), allow exactly."""
    shutil.copy(FIXTURES / "openapi" / "params.yaml", tmp_path / "params.yaml")
    (tmp_path / "toolc.yaml").write_text(
        "openapi:\n  - {id: p, path: params.yaml}\npolicy:\n"
        "  deny_tools: ['*delte*', '*PET*']\n  allow_tools: ['listpets', 'listPets']\n  admin_tools: ['nope']\n"
        "  deny_side_effect_tags: ['remote.write', 'remote.nuke']\n")
    result = run_toolc("compile", "-c", tmp_path / "toolc.yaml", "--no-codegen")
    assert result.exit_code == 0, result.stderr
    warned = sorted(line.split(": warning[TC326]")[0].strip() for line in result.stderr.splitlines()
                    if "warning[TC326]" in line)
    assert warned == ["/policy/admin_tools/0", "/policy/allow_tools/0", "/policy/deny_side_effect_tags/1",
                      "/policy/deny_tools/0"]
    assert "'*delte*' matches no tool id or name" in result.stderr
    assert run_toolc("compile", "-c", tmp_path / "toolc.yaml", "--no-codegen", "--strict").exit_code == 1


def test_a_project_without_policy_patterns_folds_no_tool_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """Folding every tool's id and name is what matching the patterns costs (0.12 s on Microsoft Graph's 11,422
    tools): with no pattern to match, none is folded."""
    def unwanted(text: str) -> str:
        raise AssertionError(f"folded {text!r} with no pattern to match")

    monkeypatch.setattr(policy, "_fold", unwanted)
    tools = [make_tool({"type": "object"}, name=f"t{i}") for i in range(3)]
    assert policy.unmatched_policy_patterns(tools, {"allow_tools": (), "deny_tools": [], "admin_tools": ()}) == []


def test_source_names_that_match_no_tool_are_warned_with_the_nearest_name(tmp_path: Path) -> None:
    """A source's allow_tools / deny_tools pattern or fixed_params tool name that matches none of its tools (before
    selection) is TC326, for OpenAPI documents and MCP listings alike: a preset for a misspelt tool name leaves the
    real tool's argument to the model."""
    shutil.copy(FIXTURES / "openapi" / "params.yaml", tmp_path / "params.yaml")
    shutil.copy(FIXTURES / "mcp" / "mcp-server-time.json", tmp_path / "time.json")
    (tmp_path / "toolc.yaml").write_text(
        "openapi:\n  - id: p\n    path: params.yaml\n    allow_tools: [getPet, listPet]\n"
        "    fixed_params: {getpet: {id: 1}, getPet: {id: 2}}\n"
        "recordings:\n  - id: t\n    path: time.json\n    deny_tools: [convert_tim]\n")
    result = run_toolc("compile", "-c", tmp_path / "toolc.yaml", "--no-codegen")
    assert result.exit_code == 0, result.stderr
    warned = [line for line in result.stderr.splitlines() if "warning[TC326]" in line]
    assert len(warned) == 3, result.stderr
    assert any("allow_tools: 'listPet' matches none of its 8 tools; did you mean 'listPets'?" in line
               for line in warned)
    assert any("fixed_params: no tool is named 'getpet'" in line and "did you mean 'getPet'?" in line
               for line in warned)
    assert any("server 't': deny_tools: 'convert_tim'" in line and "did you mean 'convert_time'?" in line
               for line in warned)
