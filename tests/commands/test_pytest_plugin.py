"""The pytest plugin and syrupy extension, used from a scratch project as a user would."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

# Imported here so pytester's in-process runs reuse these modules instead of re-importing them each run
# (PyYAML's C loader does not survive a re-import of `yaml` within one process).
import compiler.pipeline  # noqa: F401
from compiler.drift.canonical import canonical_tools
from compiler.drift.snapshot import ToolSchemaExtension
from tests.support.paths import FIXTURES
from tests.support.synthetic import MID, synthetic_openapi

MCP = FIXTURES / "drift" / "mcp"

USER_TEST = """
def test_tools_unchanged(toolc_tools, toolc_snapshot):
    assert toolc_tools("{target}") == toolc_snapshot
"""


def _scratch(pytester: pytest.Pytester, target: str) -> Path:
    root = pytester.path
    # A user's project configures its own plugins; pytest-asyncio wants its loop scope set explicitly.
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    shutil.copy(MCP / "server-everything@2025.1.14.json", root / "listing.json")
    (root / "toolc.yaml").write_text("output: generated\nrecordings:\n  - id: everything\n    path: listing.json\n")
    pytester.makepyfile(test_user=USER_TEST.format(target=target))
    return root


def _break_a_schema(root: Path) -> None:
    listing = json.loads((root / "listing.json").read_text())
    echo = listing["tools_list_pages"][0]["tools"][0]
    assert echo["name"] == "echo"
    echo["inputSchema"]["properties"]["message"]["type"] = "integer"
    (root / "listing.json").write_text(json.dumps(listing))


@pytest.mark.parametrize("target", ["ir", "openai-chat"])
def test_snapshot_fails_on_change_and_passes_after_update(pytester: pytest.Pytester, target: str) -> None:
    root = _scratch(pytester, target)
    first = pytester.runpytest("-p", "no:cacheprovider", "--snapshot-update")
    first.assert_outcomes(passed=1)
    snapshot_file = root / "__snapshots__" / "test_user" / "test_tools_unchanged.tools.json"
    assert snapshot_file.exists()
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)

    _break_a_schema(root)
    failed = pytester.runpytest("-p", "no:cacheprovider")
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(["*integer*"])

    pytester.runpytest("-p", "no:cacheprovider", "--snapshot-update").assert_outcomes(passed=1)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert '"integer"' in snapshot_file.read_text()


def test_broken_project_fails_with_the_diagnostic(pytester: pytest.Pytester) -> None:
    root = _scratch(pytester, "ir")
    (root / "listing.json").write_text("{ not json")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*TC101*"])


def test_without_syrupy_the_snapshot_fixture_says_what_to_install(pytester: pytest.Pytester) -> None:
    """A user who installed toolc without the `pytest` extra has no syrupy (simulated with `-p no:syrupy`): the
    test fails with one line naming the extra and the first `--snapshot-update`, not `fixture 'snapshot' not
    found`; `toolc_tools` alone still works."""
    _scratch(pytester, "ir")
    pytester.makepyfile(test_tools_only="def test_tools(toolc_tools):\n    assert toolc_tools('ir')\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:syrupy")
    result.assert_outcomes(passed=1, errors=1)  # a failing fixture is an error in the test that asked for it
    result.stdout.fnmatch_lines(["*pip install 'toolc?pytest?'*--snapshot-update*"])
    result.stdout.no_fnmatch_line("*fixture 'snapshot' not found*")


def test_canonical_form() -> None:
    tools = [
        {"type": "function", "function": {"name": "b", "parameters": {"required": ["y", "x"], "type": "object"}}},
        {"type": "function", "function": {"name": "a", "parameters": {"type": ["null", "string"],
                                                                      "enum": ["z", "a", None]}}},
    ]
    canonical = canonical_tools(tools)
    assert [t["function"]["name"] for t in canonical] == ["a", "b"]
    assert canonical[1]["function"]["parameters"]["required"] == ["x", "y"]
    assert canonical[0]["function"]["parameters"]["enum"] == ["z", "a", None]  # enum order is kept
    assert tools[0]["function"]["parameters"]["required"] == ["y", "x"]  # the input is untouched
    # A property called `required` is a schema, not a list: left alone.
    assert canonical_tools({"properties": {"required": {"type": "boolean"}}}) == {
        "properties": {"required": {"type": "boolean"}}}


def test_extension_serialises_canonically() -> None:
    one = ToolSchemaExtension().serialize({"b": 1, "a": {"required": ["y", "x"]}})
    two = ToolSchemaExtension().serialize({"a": {"required": ["x", "y"]}, "b": 1})
    assert one == two
    assert ToolSchemaExtension.file_extension == "tools.json"


BIG_PROJECT_TEST = """
def test_every_tool_of_a_project_too_big_for_one_request(toolc_tools):
    tools = toolc_tools("openai-chat")
    assert len(tools) == {count}
    assert all(definition["type"] == "function" for definition in tools.values())
"""


def test_toolc_tools_reads_every_definition_when_the_target_file_holds_the_discovery_form(
        pytester: pytest.Pytester) -> None:
    # More tools than one OpenAI request takes (128): schemas/openai-chat.json holds the discovery form (TC771),
    # but the fixture still gives every tool's own definition.
    root = pytester.path
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    (root / "api.json").write_text(json.dumps(synthetic_openapi(MID)))
    (root / "toolc.yaml").write_text("output: generated\nopenapi:\n  - id: api\n    path: api.json\n")
    pytester.makepyfile(test_user=BIG_PROJECT_TEST.format(count=MID))
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
