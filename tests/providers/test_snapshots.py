"""syrupy snapshots of the lowered output (definition + loss report) for the fixture MCP listings and for the
hand-written edge cases in `fixtures/providers/edge/` (one file per case).

One reviewable JSON file per target, `__snapshots__/test_snapshots/<target>.json` (`tests.support.snapshots`).
Regenerate (the README's one command): `.venv/bin/pytest tests/providers/test_snapshots.py --snapshot-update`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from compiler.infra.diagnostics import Diagnostics
from compiler.sources.recording import read_recording
from tests.support.paths import FIXTURES
from tests.support.providers import TARGETS, catalog_of, config, lower, make_tool
from tests.support.snapshots import JSONPerParamExtension

LISTINGS = sorted((FIXTURES / "mcp").glob("*.json"))
EDGES = sorted((FIXTURES / "providers" / "edge").glob("*.json"))
# Each target as emitted by default, plus two option variants filed with their target.
CONFIGURATIONS = [pytest.param(target, {}, id=target) for target in TARGETS] + [
    pytest.param("gemini", {"gemini_schema": "json-schema"}, id="gemini-json"),
    pytest.param("anthropic", {"anthropic_strict": True}, id="anthropic-strict"),
]


@pytest.fixture
def snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JSONPerParamExtension)


def _report(catalog: Any, target: str, **options: Any) -> dict[str, Any]:
    result = lower(catalog, target, config(**options))
    return {
        "tools": {item.tool.id: item.definition for item in result.lowered},
        "names": result.name_map(),
        "losses": sorted(d.render() for d in result.diagnostics),
    }


@pytest.mark.parametrize("path", LISTINGS, ids=[p.stem for p in LISTINGS])
@pytest.mark.parametrize("target", TARGETS)
def test_mcp_listing(path: Path, target: str, snapshot: Any) -> None:
    _, tools = read_recording(json.loads(path.read_text()), source_id=path.stem, location=path.name,
                              diagnostics=Diagnostics())
    assert _report(catalog_of(*tools), target) == snapshot


@pytest.mark.parametrize("path", EDGES, ids=[p.stem for p in EDGES])
@pytest.mark.parametrize(("target", "options"), CONFIGURATIONS)
def test_edge_case(path: Path, target: str, options: dict[str, Any], snapshot: Any) -> None:
    tool = make_tool(json.loads(path.read_text())["schema"], name=path.stem.replace("-", "_"), source="edge")
    assert _report(catalog_of(tool), target, **options) == snapshot
