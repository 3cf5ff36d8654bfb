"""Hostile input: every case ends in a located diagnostic with the right code, never a traceback or a fetch."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from compiler.infra.diagnostics import Diagnostics, Severity
from compiler.refs import (
    BUDGET_EXCEEDED,
    EMPTY_LOOP,
    EXTERNAL_KEY,
    NETWORK_REF,
    OUTSIDE_ROOT,
    TOO_DEEP,
    RefResolver,
)
from tests.support.loopback import QuietHandler, loopback_http


class _Recorder(QuietHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        _Recorder.hits.append(self.path)
        self.send_json(200, json.dumps({"type": "integer"}).encode())


@pytest.fixture
def server() -> Iterator[str]:
    _Recorder.hits = []
    with loopback_http(_Recorder) as url:
        yield url


def _count(node: Any) -> int:
    if isinstance(node, dict):
        return 1 + sum(_count(v) for v in node.values())
    if isinstance(node, list):
        return sum(_count(v) for v in node)
    return 0


def test_http_ref_is_refused_and_never_fetched(server: str, tmp_path: Path) -> None:
    url = f"{server}/schema.json"
    schema = {"type": "object", "properties": {"a": {"$ref": url, "description": "remote"}}}
    diagnostics = Diagnostics()
    resolver = RefResolver(diagnostics)
    bundled = resolver.bundle(schema, source="s", tool="t")
    inlined = resolver.inline(schema, source="s", tool="t")
    (tmp_path / "doc.json").write_text(json.dumps(schema))
    loaded = resolver.load_document(tmp_path / "doc.json")
    assert _Recorder.hits == []
    assert [(d.code, d.pointer) for d in diagnostics] == [(NETWORK_REF, "/properties/a/$ref")] * 3
    assert all(d.tool == "t" for d in diagnostics.items[:2]) and diagnostics.items[2].source.endswith(
        "doc.json"
    )
    for result in (bundled, inlined, loaded):
        prop = result["properties"]["a"]
        assert "$ref" not in prop and "could not be resolved" in prop["description"]
        assert prop["description"].startswith("remote")
    # and the server did answer: the test would notice a fetch
    import urllib.request

    with urllib.request.urlopen(url) as response:
        assert json.load(response) == {"type": "integer"}
    assert _Recorder.hits == ["/schema.json"]


@pytest.mark.parametrize(
    "ref", ["../../etc/passwd", "/etc/passwd", "file:///etc/passwd", "C:\\Windows\\win.ini"]
)
def test_file_refs_outside_the_root(tmp_path: Path, ref: str) -> None:
    root = tmp_path / "project" / "specs"
    root.mkdir(parents=True)
    (root / "main.json").write_text(json.dumps({"properties": {"p": {"$ref": ref}}}))
    diagnostics = Diagnostics()
    document = RefResolver(diagnostics).load_document(root / "main.json", display="main.json")
    assert [(d.code, d.source, d.pointer) for d in diagnostics] == [
        (OUTSIDE_ROOT, "main.json", "/properties/p/$ref")
    ]
    assert document["properties"]["p"] == {"description": f"toolc: $ref {ref!r} could not be resolved"}
    assert EXTERNAL_KEY not in document


def test_symlink_out_of_the_root_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "secret.json"
    outside.write_text('{"type": "string"}')
    root = tmp_path / "root"
    root.mkdir()
    (root / "link.json").symlink_to(outside)
    (root / "main.json").write_text(json.dumps({"$ref": "link.json"}))
    diagnostics = Diagnostics()
    RefResolver(diagnostics).load_document(root / "main.json")
    assert diagnostics.codes() == {OUTSIDE_ROOT}


def test_in_memory_file_refs_are_never_read() -> None:
    diagnostics = Diagnostics()
    resolver = RefResolver(diagnostics)
    resolver.bundle({"properties": {"a": {"$ref": "../../etc/passwd"}, "b": {"$ref": "/etc/passwd"}}})
    assert [(d.code, d.pointer) for d in diagnostics] == [
        (OUTSIDE_ROOT, "/properties/a/$ref"),
        (OUTSIDE_ROOT, "/properties/b/$ref"),
    ]


def test_ref_loop_with_no_content() -> None:
    schema = {
        "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}},
        "properties": {"x": {"$ref": "#/$defs/A"}},
    }
    for method in ("bundle", "inline"):
        diagnostics = Diagnostics()
        result = getattr(RefResolver(diagnostics), method)(schema, tool="loop")
        assert [(d.code, d.severity, d.pointer) for d in diagnostics] == [
            (EMPTY_LOOP, Severity.ERROR, "/properties/x/$ref")
        ]
        assert '"$ref"' not in json.dumps(result)


def test_ten_thousand_levels_do_not_overflow() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(10_000):
        schema = {"type": "object", "properties": {"a": schema}}
    for method in ("bundle", "inline"):
        diagnostics = Diagnostics()
        result = getattr(RefResolver(diagnostics), method)(schema)
        assert [d.code for d in diagnostics] == [TOO_DEEP]
        assert diagnostics.items[0].pointer.startswith("/properties/a/properties/a")
        assert isinstance(result, dict)


def test_deep_ref_chain_does_not_overflow() -> None:
    defs = {
        f"D{i}": {"type": "object", "properties": {"n": {"$ref": f"#/$defs/D{i + 1}"}}} for i in range(3000)
    }
    defs["D3000"] = {"type": "string"}
    diagnostics = Diagnostics()
    RefResolver(diagnostics).inline({"$ref": "#/$defs/D0"}, defs)
    assert diagnostics.codes() == {TOO_DEEP}


def test_exponential_fan_out_is_bounded() -> None:
    defs = {
        f"D{i}": {
            "type": "object",
            "properties": {"l": {"$ref": f"#/$defs/D{i + 1}"}, "r": {"$ref": f"#/$defs/D{i + 1}"}},
        }
        for i in range(30)
    }
    defs["D30"] = {"type": "integer"}
    schema = {"$ref": "#/$defs/D0"}
    budget = 5_000
    diagnostics = Diagnostics()
    resolver = RefResolver(diagnostics, node_budget=budget)
    inlined = resolver.inline(schema, defs, tool="fan")
    assert [d.code for d in diagnostics] == [BUDGET_EXCEEDED]
    assert budget // 2 < _count(inlined) <= 2 * budget
    # the same holds without shared definitions (no memo): the budget alone bounds the work
    own = {"$defs": defs, **schema}
    diagnostics2 = Diagnostics()
    assert _count(RefResolver(diagnostics2, node_budget=budget).inline(own)) <= 2 * budget
    assert diagnostics2.codes() == {BUDGET_EXCEEDED}
    # bundle keeps the graph: 31 definitions, no fan-out
    bundled = RefResolver(Diagnostics()).bundle(schema, defs)
    assert sorted(bundled["$defs"]) == sorted(defs)
