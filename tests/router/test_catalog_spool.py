"""The router's data files (Microsoft Graph: 234 MB) are written into the compile's spool folder as they are made,
by the process that makes the router (a forked child for a big catalog), and adopted with the sha256 they were
written with; `_catalog.json` (168 MB of them) tool by tool: never one `bytes` of the whole file in either process. Its bytes are the canonical compact
encoding all the same (keys sorted, as `compact_json` sorts them, non-ASCII tool ids included)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from compiler.codegen import python
from compiler.codegen.router import router_package
from compiler.config import Config
from compiler.infra.serialize import compact_json
from compiler.pipeline import adhoc_inputs, compile_project
from tests.support.synthetic import synthetic_openapi

CATALOG = "python/toolc_router/_catalog.json"


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    document = synthetic_openapi(10)
    operations = [operation for methods in document["paths"].values() for operation in methods.values()]
    for operation, name in zip(operations, ["Zebra", "émigré", "a-b", "a_b", "ab"], strict=False):
        operation["operationId"] = name  # ids whose order differs by code point, case and punctuation
    path = tmp_path / "api.json"
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize("background", [False, True], ids=["in-process", "forked"])
def test_the_discovery_catalog_is_spooled_as_encoded_never_held_whole(
        spec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, background: bool) -> None:
    monkeypatch.setenv("TOOLC_JOBS", "2" if background else "1")
    if background:
        monkeypatch.setattr(python, "BACKGROUND_MIN_TOOLS", 1)
    encoded: list[int] = []
    real = router_package.compact_json

    def measured(data: Any) -> bytes:
        out = real(data)
        encoded.append(len(out))
        return out

    monkeypatch.setattr(router_package, "compact_json", measured)
    build = compile_project(Config(root=tmp_path), adhoc_inputs([spec], tmp_path), out_dir=tmp_path / "out")
    assert not build.diagnostics.has_errors, build.diagnostics.sorted()[:3]
    content = build.files[CATALOG]
    assert build.files.known_digest(CATALOG) == "sha256:" + hashlib.sha256(content).hexdigest(), \
        "adopted from the spool with the hash it was written with"
    assert content == compact_json(orjson.loads(content)) + b"\n", "the canonical compact encoding"
    tools = orjson.loads(content)["tools"]
    assert {"émigré", "Zebra"} <= {entry["name"] for entry in tools.values()}
    if not background:  # a forked child's encodings are not seen here
        assert encoded and max(encoded) < len(content) / 2, "encoded entry by entry, never as one object"
    data_files = [path for path in build.files if path.startswith("python/toolc_router/_") and path.endswith(".json")]
    assert len(data_files) >= 5
    for path in data_files:  # every data file of the router is adopted from the spool, none held
        assert build.files.known_digest(path) == "sha256:" + hashlib.sha256(build.files[path]).hexdigest(), path
    build.files.release_spool()
