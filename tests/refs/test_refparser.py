"""json-schema-ref-parser fixtures (fixtures/refs/refparser, copied from APIDevTools): every document loads with
its external files pulled in, then bundles and inlines; broken ones give precise codes at precise places."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compiler.infra.diagnostics import Diagnostics
from compiler.refs import (
    BAD_POINTER,
    EMPTY_LOOP,
    EXTERNAL_KEY,
    MISSING_FILE,
    OUTSIDE_ROOT,
    RECURSION_PRUNED,
    RefResolver,
    resolve_pointer,
)
from compiler.refs.external import needs_bundling
from compiler.schema import DEFINITIONS, KEYWORDS, SCHEMA_MAP
from tests.support.paths import FIXTURES

FIXTURES = FIXTURES / "refs" / "refparser"

# document → the (code, source, pointer) its load + bundle + inline report; not listed: no diagnostics at all
EXPECTED: dict[str, set[tuple[str, str, str]]] = {
    "bundle-ref-through-ref/schemaA.json": {
        (OUTSIDE_ROOT, "A", "/$ref")
    },  # ../schemaB.json leaves the folder
    "circular-extended/definitions/thing.yaml": {(EMPTY_LOOP, "", "/$ref")},  # `$ref: "#"`, nothing else
    "error-source/broken-external.json": {
        (MISSING_FILE, "A", "/components/schemas/testSchema/properties/test/$ref")
    },
    "error-source/invalid-external.json": {
        (OUTSIDE_ROOT, "A", "/foo/bazinga/$ref"),  # "/#foo/baz-2" is an absolute path
        # reported where the broken ref sits: in the pulled-in file
        (MISSING_FILE, "broken-external.json", "/components/schemas/testSchema/properties/test/$ref"),
    },
    "error-source/invalid-pointer.json": {(OUTSIDE_ROOT, "A", "/foo/baz/$ref")},
    # "schemas/user.json" from inside schemas/ is schemas/schemas/user.json (RFC 3986; ref-parser used the cwd)
    "relative-path/schemas/account.json": {(MISSING_FILE, "A", "/properties/accountOwner/$ref")},
    "relative-path/schemas/accountList.json": {(MISSING_FILE, "A", "/properties/data/items/$ref")},
}


def _documents() -> list[str]:
    return sorted(
        p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*") if p.suffix in (".json", ".yaml")
    )


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [
            r for k, v in node.items() if k not in ("enum", "const", "default", "example") for r in _refs(v)
        ]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


@pytest.mark.parametrize("name", _documents())
def test_document(name: str) -> None:
    diagnostics = Diagnostics()
    resolver = RefResolver(diagnostics)
    document = resolver.load_document(FIXTURES / name, display="A")
    for ref in _refs(document):
        assert ref.startswith("#"), ref  # only local refs remain
        if ref.startswith(f"#/{EXTERNAL_KEY}/"):
            resolve_pointer(document, ref)  # every pointer into a pulled-in file names something
        # the main document's own local refs are left as written: bundle/inline resolve (and report) them
    bundled = resolver.bundle(document, tool="T")
    inlined = resolver.inline(document, tool="T")
    json.dumps(bundled), json.dumps(inlined)  # no cycles: plain JSON
    found = {(d.code, d.source, d.pointer) for d in diagnostics if d.code != RECURSION_PRUNED}
    assert found == EXPECTED.get(name, set()), [d.render() for d in diagnostics]
    assert _schema_refs(inlined) == []


def _schema_refs(node: Any) -> list[str]:
    """Refs in schema positions only (`x-toolc-external` and `type: {$ref}` are data to JSON Schema)."""
    if isinstance(node, list):
        return [r for v in node for r in _schema_refs(v)]
    if not isinstance(node, dict):
        return []
    found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
    for key, value in node.items():
        kind = KEYWORDS.get(key)
        if kind is None:
            continue
        values = value.values() if isinstance(value, dict) and kind in (SCHEMA_MAP, DEFINITIONS) else [value]
        found.extend(r for v in values for r in _schema_refs(v))
    return found


def test_external_files_are_attached_once_under_stable_slugs() -> None:
    diagnostics = Diagnostics()
    document = RefResolver(diagnostics).load_document(FIXTURES / "circular-external/circular-external.yaml")
    assert not diagnostics.items
    attached = document[EXTERNAL_KEY]
    assert sorted(attached) == [
        "definitions_child.yaml",
        "definitions_parent.yaml",
        "definitions_person.yaml",
        "definitions_pet.yaml",
    ]
    assert document["definitions"]["pet"] == {"$ref": "#/x-toolc-external/definitions_pet.yaml"}
    assert document["definitions"]["thing"] == {"$ref": "#/definitions/thing"}  # back into the main file
    # the recursive person → spouse → person keeps its cycle in bundle and is pruned by inline
    resolver = RefResolver(diagnostics, max_depth=1)
    person = resolver.inline(
        {"$ref": "#/definitions/person", "definitions": document["definitions"], EXTERNAL_KEY: attached},
        tool="p",
    )
    assert [d.code for d in diagnostics] == [RECURSION_PRUNED]
    assert person["properties"]["spouse"]["properties"]["spouse"] == {"type": "object"}


def test_special_characters_in_file_names() -> None:
    diagnostics = Diagnostics()
    path = FIXTURES / "special-characters-files/dir with [brackets] & spaces/root schema.yaml"
    document = RefResolver(diagnostics).load_document(path)
    assert not diagnostics.items
    assert document["properties"]["item"] == {"$ref": "#/x-toolc-external/defs_value_.json/definitions/value"}
    inlined = RefResolver(diagnostics).inline(document)
    assert inlined["properties"]["item"]["properties"] == {"name": {"type": "string"}}


def test_pointer_through_a_ref_is_followed_and_canonicalised() -> None:
    diagnostics = Diagnostics()
    document = RefResolver(diagnostics).load_document(FIXTURES / "deep/deep.yaml")
    assert not diagnostics.items
    name = document[EXTERNAL_KEY]["definitions_name.yaml"]
    # `#/properties/first/type` passes through `first: {$ref: ../definitions/required-string.yaml}`
    assert name["properties"]["middle"]["type"] == {
        "$ref": "#/x-toolc-external/definitions_required-string.yaml/type"
    }
    assert resolve_pointer(document, name["properties"]["middle"]["type"]["$ref"]) == "string"


def test_bad_pointer_and_anchor_in_external_files(tmp_path: Path) -> None:
    (tmp_path / "other.json").write_text(
        json.dumps({"definitions": {"a": {"$anchor": "here", "type": "string"}}})
    )
    (tmp_path / "main.json").write_text(
        json.dumps(
            {
                "properties": {
                    "good": {"$ref": "other.json#here"},
                    "bad": {"$ref": "other.json#/definitions/missing"},
                    "worse": {"$ref": "other.json#nowhere"},
                    "gone": {"$ref": "missing.json"},
                    "broken": {"$ref": "broken.json"},
                }
            }
        )
    )
    (tmp_path / "broken.json").write_text("{not json")
    diagnostics = Diagnostics()
    document = RefResolver(diagnostics).load_document(tmp_path / "main.json", display="main.json")
    assert document["properties"]["good"] == {"$ref": "#/x-toolc-external/other.json/definitions/a"}
    assert sorted((d.code, d.pointer) for d in diagnostics) == [
        (BAD_POINTER, "/properties/bad/$ref"),
        (BAD_POINTER, "/properties/worse/$ref"),
        (MISSING_FILE, "/properties/broken/$ref"),
        (MISSING_FILE, "/properties/gone/$ref"),
    ]
    assert "TC101" in next(d.message for d in diagnostics if d.pointer == "/properties/broken/$ref")
    assert all(d.source == "main.json" for d in diagnostics)


@pytest.mark.parametrize("text", ['{"$ref": "a.json"}', '{"x": {"$ref" : "a.json#/b"}}', "a:\n  $ref: other.yaml\n",
                                  "a: {$ref: x.yaml}", "- $ref: x.yaml", "'$ref': x.yaml", "$ref: x.yaml",
                                  "a:\n\t$ref: b.yaml", "[$ref: x.yaml]", "{a: 1, $ref: x.yaml}"])
def test_a_file_ref_is_noticed_before_parsing(text: str) -> None:
    assert needs_bundling(text.encode())


@pytest.mark.parametrize("text", ['{"$ref": "#/a"}', '{"$ref" : "#"}', "$ref: '#/a'",
                                  # Microsoft Graph's path keys: `/$ref` ends a path, it is no `$ref` key
                                  '{"paths": {"/users/{id}/manager/$ref": {"get": {}}}}',
                                  "paths:\n  /users/{id}/manager/$ref:\n    get: {}\n"])
def test_local_refs_and_ref_looking_keys_need_no_walk(text: str) -> None:
    assert not needs_bundling(text.encode())
