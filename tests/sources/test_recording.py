"""Recorded MCP listings → IR: every field kept, broken tools reported and skipped, the others compiled."""

from __future__ import annotations

import pytest

from compiler.config import RecordingConfig
from compiler.infra.diagnostics import Diagnostics
from compiler.infra.loading import load_document
from compiler.sources.recording import (
    BAD_TOOL,
    DUPLICATE_TOOL,
    NOT_A_LISTING,
    TOOL_DESELECTED,
    read_recording,
)
from tests.support.paths import FIXTURES

CORPUS_COUNTS = {
    "mcp-server-fetch": 1,
    "mcp-server-git": 12,
    "mcp-server-time": 2,
    "server-everything": 13,
    "server-filesystem": 14,
    "server-memory": 9,
    "server-sequential-thinking": 1,
}


@pytest.mark.parametrize("name", sorted(CORPUS_COUNTS))
def test_corpus_listing_compiles(name: str) -> None:
    diagnostics = Diagnostics()
    source, tools = read_recording(load_document(FIXTURES / "mcp" / f"{name}.json"), source_id=None,
                                   location=f"{name}.json", diagnostics=diagnostics)
    assert len(tools) == CORPUS_COUNTS[name]
    assert list(diagnostics) == []
    assert source.id == name and source.kind == "mcp"
    assert source.info["initialize"]["serverInfo"]["version"]
    for tool in tools:
        assert tool.id == f"mcp:{name}:{tool.name}"
        assert tool.input_schema["type"] == "object"


def test_everything_keeps_execution_and_titles() -> None:
    _, tools = read_recording(load_document(FIXTURES / "mcp" / "server-everything.json"), source_id="everything",
                              location="x", diagnostics=Diagnostics())
    echo = next(t for t in tools if t.name == "echo")
    assert echo.title == "Echo Tool"
    assert echo.extra["execution"] == {"taskSupport": "forbidden"}
    assert echo.annotations.read_only_hint is True
    assert echo.input_schema["$schema"] == "http://json-schema.org/draft-07/schema#"


def test_broken_tools_are_reported_and_the_rest_kept() -> None:
    diagnostics = Diagnostics()
    _, tools = read_recording(load_document(FIXTURES / "listings" / "mixed.json"), source_id="mixed",
                              location="mixed.json", diagnostics=diagnostics)
    assert [t.name for t in tools] == ["kept_2020", "kept_draft7"]
    codes = [(d.code, d.pointer) for d in diagnostics]
    assert codes == [
        (BAD_TOOL, "/tools/2"),
        (BAD_TOOL, "/tools/3"),
        (BAD_TOOL, "/tools/4"),
        (DUPLICATE_TOOL, "/tools/5"),
        (BAD_TOOL, "/tools/6"),
    ]
    kept = tools[0]
    assert kept.output_schema == {"type": "object", "properties": {"hits": {"type": "integer"}}}
    assert kept.extra == {
        "execution": {"taskSupport": "optional"},
        "icons": [{"src": "https://example.invalid/icon.png", "mimeType": "image/png"}],
        "_meta": {"vendor/x": 1},
    }
    assert kept.title == "Kept"
    assert tools[1].input_schema["definitions"] == {"P": {"type": "integer"}}


def test_fixed_params_are_hidden_from_the_model() -> None:
    config = RecordingConfig(path="mixed.json", fixed_params={"kept_2020": {"secret": "preset"}})
    _, tools = read_recording(load_document(FIXTURES / "listings" / "mixed.json"), source_id="mixed",
                              location="mixed.json", diagnostics=Diagnostics(), config=config)
    kept = tools[0]
    assert kept.fixed_params == {"secret": "preset"}
    assert "secret" not in kept.input_schema["properties"]
    assert kept.input_schema["required"] == ["q"]


def test_allow_and_deny_lists() -> None:
    diagnostics = Diagnostics()
    config = RecordingConfig(path="mixed.json", deny_tools=("kept_d*",))
    _, tools = read_recording(load_document(FIXTURES / "listings" / "mixed.json"), source_id="mixed",
                              location="mixed.json", diagnostics=diagnostics, config=config)
    assert [t.name for t in tools] == ["kept_2020"]
    assert TOOL_DESELECTED in diagnostics.codes()


def test_plain_tools_list_result_and_non_listing() -> None:
    diagnostics = Diagnostics()
    _, tools = read_recording({"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}, source_id="s",
                              location="s.json", diagnostics=diagnostics)
    assert [t.id for t in tools] == ["mcp:s:a"]
    _, none = read_recording({"hello": 1}, source_id="s", location="s.json", diagnostics=diagnostics)
    assert none == [] and NOT_A_LISTING in diagnostics.codes()
