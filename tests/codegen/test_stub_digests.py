"""The digest every stub module quotes (`stub_packages.input_digest`), hashed from parts encoded once
(`package_reuse.EncodedSource`), is the digest of the whole source encoded in one piece, as it always was; and
the names a source's stubs get (`stub_names`) are the same made afresh or read back."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.codegen.stubs.stub_names import StubNames, make_names
from compiler.codegen.stubs.stub_packages import input_digest
from compiler.infra.diagnostics import Diagnostics
from compiler.infra.serialize import compact_json
from compiler.ir import Source, Tool
from tests.support.codegen import RECORDINGS, build_from


def _whole(source: Source, tools: list[Tool]) -> str:
    data = {"source": source.id, "definitions": dict(source.definitions),
            "tools": [[t.id, t.name, t.title, t.description, t.input_schema, t.output_schema] for t in tools]}
    return hashlib.sha256(compact_json(data)).hexdigest()


def test_recorded_sources_digest_as_one_piece() -> None:
    build = build_from((json.loads(path.read_text()), path.name) for path in RECORDINGS)
    assert build.catalog.sources
    for source in build.catalog.sources:
        tools = [tool for tool in build.catalog.tools if tool.source == source.id]
        assert input_digest(source, tools) == _whole(source, tools)


_TEXT = st.text(st.characters(codec="utf-8"), max_size=12)
_JSON = st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | _TEXT,
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3), max_leaves=8)


@given(st.lists(st.tuples(_TEXT, st.none() | _TEXT, _TEXT, st.dictionaries(_TEXT, _JSON, max_size=3),
                          st.none() | st.dictionaries(_TEXT, _JSON, max_size=3)), max_size=4),
       st.dictionaries(_TEXT, _JSON, max_size=3))
@settings(max_examples=300)
def test_any_source_digests_as_one_piece(rows: list[tuple[str, str | None, str, dict[str, object], dict[str, object] | None]],
                                         definitions: dict[str, object]) -> None:
    source = Source(id="api", kind="openapi", location="api.json", definitions=definitions)  # type: ignore[arg-type]
    tools = [Tool(id=f"openapi:api:{index}", name=name, title=title, description=description, input_schema=schema,
                  output_schema=output, source="api", binding=None)  # type: ignore[arg-type]
             for index, (name, title, description, schema, output) in enumerate(rows)]
    assert input_digest(source, tools) == _whole(source, tools)


def test_names_read_back_are_the_names_made(tmp_path: Path) -> None:
    names = ["listUsers", "list_users", "class", "1st", "get" + "x" * 120, "getHTTPResponse", "tools", "\uff23\uff2c\uff21\uff33\uff33"]
    out = tmp_path / "out"
    first = StubNames(out, Diagnostics())
    made = first.of(names)
    assert made == make_names(names) and made.renamed and made.cut
    first.save()
    diagnostics = Diagnostics()
    again = StubNames(out, diagnostics)
    assert again.of(reversed(names)) == made and not diagnostics.items
