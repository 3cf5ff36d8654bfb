"""What a lost `$ref` costs each tool (`sources.lost_refs`), and what it costs a document that has none: the walk of
every definition and schema is skipped when no schema can hold a `refusal` (issue 27: 0.09 s of reading GitHub),
and when one might, tools are decided as the walk decides them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compiler.sources import lost_refs
from compiler.sources.lost_refs import OUTPUT_SCHEMA_LOST, may_hold_refusal
from compiler.sources.openapi.codes import OPERATION_SKIPPED
from tests.support.openapi import compile_file


def _document(pet_description: str, error_description: str = "An error.") -> dict[str, Any]:
    """createPet's body is a Pet; listPets answers with Errors only."""
    return {
        "openapi": "3.1.0", "info": {"title": "pets", "version": "1"},
        "paths": {"/pets": {
            "post": {"operationId": "createPet", "requestBody": {"content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/Pet"}}}}, "responses": {"204": {"description": "ok"}}},
            "get": {"operationId": "listPets", "responses": {"200": {"description": "ok", "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}}},
        }},
        "components": {"schemas": {
            "Pet": {"type": "object", "properties": {"name": {"type": "string", "description": pet_description}}},
            "Error": {"type": "object", "description": error_description},
        }},
    }


def _compiled(tmp_path: Path, text: str) -> tuple[dict[str, Any], set[tuple[str, str | None]]]:
    path = tmp_path / "pets.json"
    path.write_text(text)
    _, tools, diagnostics = compile_file(path, source_id="pets")
    return ({tool.name: tool for tool in tools},
            {(d.code, d.tool) for d in diagnostics if d.code in (OPERATION_SKIPPED, OUTPUT_SCHEMA_LOST)})


class _Refused:
    def __init__(self, *args: object) -> None:
        raise AssertionError("the definitions were walked")


def test_a_document_without_a_lost_ref_is_not_walked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lost_refs, "LostRefs", _Refused)
    tools, lost = _compiled(tmp_path, json.dumps(_document("A name; the $ref of toolc: a pet")))
    assert sorted(tools) == ["createPet", "listPets"] and lost == set()
    assert tools["listPets"].output_schema is not None


def test_a_refusal_the_author_wrote_costs_what_it_always_did(tmp_path: Path) -> None:
    """A description reading like a refusal is one (`walker.refused_ref`), however the document spells it: here
    the `$` of the input side's is a JSON escape, which decoding turns back into the mark."""
    document = _document("toolc: \\u0024ref 'gone.json' could not be resolved",
                         "toolc: $ref 'gone.json#/Error' could not be resolved")
    text = json.dumps(document).replace("\\\\u0024", "\\u0024")
    assert "toolc: $ref 'gone.json'" not in text  # the mark is not in the file's bytes as such
    tools, lost = _compiled(tmp_path, text)
    assert lost == {(OPERATION_SKIPPED, "openapi:pets:createPet"), (OUTPUT_SCHEMA_LOST, "openapi:pets:listPets")}
    assert sorted(tools) == ["listPets"] and tools["listPets"].output_schema is None


@pytest.mark.parametrize("value", [{1, 2}, "lone \udc80 surrogate", float("nan")])
def test_what_cannot_be_encoded_is_walked(value: object) -> None:
    """No bytes to search (orjson refuses them): the walk decides. NaN encodes (as null): nothing to walk."""
    assert may_hold_refusal({"A": {"description": "x", "default": value}}, []) is not isinstance(value, float)
    assert may_hold_refusal({"A": {"description": "x"}}, []) is False
