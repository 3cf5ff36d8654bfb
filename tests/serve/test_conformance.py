"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, run with npm's Node 22) against
`toolc serve --transport http` on the default project's `generated/`: every server scenario of the suite, pending
ones included. A tools-only server must pass the lifecycle, tools, DNS-rebinding and SSE-stream scenarios; the
rest need what `toolc serve` does not offer (resources, prompts, logging, completion, sampling, elicitation) or
call the reference server's own test tools, and each is listed with its reason. A listed failure that starts
passing, or a scenario in neither list, fails the test: the lists stay honest as the suite and the server move."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.conformance import SuiteRun, failed, node_version, require_conformance, run_suite
from tests.support.paths import ROOT
from tests.support.serve import serving_http

pytestmark = pytest.mark.servers

PASSING = {
    "server-initialize": "initialize and the initialized notification",
    "ping": "answers {}",
    "tools-list": "every served tool has a name, an input schema and a description (the operation's own, else its "
                  "title, else its method and path: the params fixture's createPet has none in the document)",
    "tools-call-error": "`test_error_handling` is not a served tool: the call is refused as an unknown tool, an "
                        "isError result whose text says why, which is what the scenario checks",
    "tools-call-simple-text": "vacuously: `test_simple_text` is not served and the scenario only wants a text "
                              "content item, which the unknown tool's refusal is",
    "dns-rebinding-protection": "a non-loopback Host/Origin is refused with 4xx, a loopback one accepted",
    "server-sse-multiple-streams": "three concurrent POSTs on one session all answered (JSON; SSE is optional)",
    "server-sse-polling": "the POST is answered with JSON, so the SSE priming checks do not apply (INFO only)",
}
"""Scenarios a tools-only server must pass, and why `toolc serve` does."""

REFERENCE_TOOL = "calls the reference server's own test tool `{}`, which a compiled project does not serve"
EXPECTED_FAILURES = {
    "logging-set-level": "no logging capability: logging/setLevel is Method not found",
    "completion-complete": "no completion capability (nothing to complete without prompts or resource templates)",
    "tools-call-with-logging": "no logging capability (logging/setLevel first), and "
                               + REFERENCE_TOOL.format("test_tool_with_logging"),
    "tools-call-image": REFERENCE_TOOL.format("test_image_content"),
    "tools-call-audio": REFERENCE_TOOL.format("test_audio_content"),
    "tools-call-embedded-resource": REFERENCE_TOOL.format("test_embedded_resource"),
    "tools-call-mixed-content": REFERENCE_TOOL.format("test_multiple_content_types"),
    "tools-call-with-progress": REFERENCE_TOOL.format("test_tool_with_progress"),
    "tools-call-sampling": "toolc serve never asks the client to sample; "
                           + REFERENCE_TOOL.format("test_sampling"),
    "tools-call-elicitation": "toolc serve never elicits from the client; " + REFERENCE_TOOL.format("test_elicitation"),
    "elicitation-sep1034-defaults": "toolc serve never elicits from the client; "
                                    + REFERENCE_TOOL.format("test_elicitation_sep1034_defaults"),
    "elicitation-sep1330-enums": "toolc serve never elicits from the client; "
                                 + REFERENCE_TOOL.format("test_elicitation_sep1330_enums"),
    "json-schema-2020-12": REFERENCE_TOOL.format("json_schema_2020_12_tool"),
    "resources-list": "no resources capability",
    "resources-read-text": "no resources capability",
    "resources-read-binary": "no resources capability",
    "resources-templates-read": "no resources capability",
    "resources-subscribe": "no resources capability",
    "resources-unsubscribe": "no resources capability",
    "prompts-list": "no prompts capability",
    "prompts-get-simple": "no prompts capability",
    "prompts-get-with-args": "no prompts capability",
    "prompts-get-embedded-resource": "no prompts capability",
    "prompts-get-with-image": "no prompts capability",
}
"""Scenarios `toolc serve` fails, each with its reason."""


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SuiteRun]:
    require_conformance()
    audit = tmp_path_factory.mktemp("conformance") / "audit.sqlite3"  # the refused calls are audited: not in ROOT
    environ = {key: value for key, value in os.environ.items() if not key.startswith("TOOLC_")}
    with serving_http(ROOT / "toolc.yaml", {**environ, "TOOLC_AUDIT_DB": str(audit)}) as (url, _):
        yield run_suite(f"{url}/mcp", sorted(EXPECTED_FAILURES))


def problems(checks: list[dict[str, object]]) -> list[str]:
    return [f"{check['id']}: {check['status']} {check.get('errorMessage') or ''}".strip()
            for check in checks if check["status"] in ("FAILURE", "WARNING")]


def test_the_suite_runs_on_node_22() -> None:
    assert node_version().startswith("v22."), node_version()


def test_every_scenario_is_listed(suite: SuiteRun) -> None:
    assert not PASSING.keys() & EXPECTED_FAILURES.keys()
    unlisted = sorted(suite.checks.keys() - PASSING.keys() - EXPECTED_FAILURES.keys())
    gone = sorted((PASSING.keys() | EXPECTED_FAILURES.keys()) - suite.checks.keys())
    assert not unlisted, f"new scenarios: put each in PASSING or EXPECTED_FAILURES with its reason: {unlisted}"
    assert not gone, f"listed scenarios the suite no longer has (or did not run): {gone}\n{suite.output[-2000:]}"


@pytest.mark.parametrize("scenario", sorted(PASSING))
def test_tools_only_scenario_passes(suite: SuiteRun, scenario: str) -> None:
    assert scenario in suite.checks, suite.output[-2000:]
    assert not failed(suite.checks[scenario]), problems(suite.checks[scenario])


@pytest.mark.parametrize("scenario", sorted(EXPECTED_FAILURES))
def test_expected_failure_still_fails(suite: SuiteRun, scenario: str) -> None:
    assert scenario in suite.checks, suite.output[-2000:]
    assert failed(suite.checks[scenario]), (
        f"{scenario} now passes: move it to PASSING (it was expected to fail: {EXPECTED_FAILURES[scenario]})")


def test_the_suite_agrees(suite: SuiteRun) -> None:
    """The suite's own verdict with EXPECTED_FAILURES as its baseline: no unexpected failure, no stale entry."""
    assert suite.returncode == 0, suite.output[-3000:]

