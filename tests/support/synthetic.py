"""A synthetic OpenAPI 3.0 document of N operations that share deep `$ref` trees, for the scale bench
(`bench/bench_scale.py`: `SERIES`) and the scale tests (`MID`), which must not read the real
corpus. Deterministic: the same N gives the same bytes.

Shape (what makes big real APIs hard, at a size that grows linearly with N):
- one resource family per 5 operations (`Family<k>`: list, create, get, update, delete): a chain of `DEPTH` levels, each level an object with a
  couple of scalars, an enum, a nullable field, an `allOf` over the shared `Audit` base and a reference to the next
  level, so every body reaches a deep tree;
- shared leaves every family reaches (`Address`, `Money`, `Audit`, `Tag`) and a recursive `Folder` (children are
  folders), which inlining has to unroll and prune;
- list takes query parameters, create and update a body, get/update/delete an id in the path.
- with `oversize=True`, one more operation whose body is a balanced tree of distinct definitions `Wide<d>` two to
  a level, `WIDE_DEPTH` levels: inlined, it is 2**WIDE_DEPTH objects, past the default per-tool budget
  (`providers.max_inline_nodes`), while bundled it stays small.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

MID = 250
SERIES = (1000, 2000, 4000, 8000, 16000, 22000)
DEPTH = 6
OPS_PER_FAMILY = 5
WIDE_DEPTH = 15
OVERSIZE_OPERATION = "putWideTree"


def _shared() -> dict[str, Any]:
    return {
        "Audit": {"type": "object", "properties": {
            "createdAt": {"type": "string", "format": "date-time"},
            "createdBy": {"type": "string", "maxLength": 64},
            "tags": {"type": "array", "items": {"$ref": "#/components/schemas/Tag"}}}},
        "Tag": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$"}, "color": {"type": "string",
                                                                           "enum": ["red", "green", "blue"]}}},
        "Money": {"type": "object", "required": ["amount", "currency"], "properties": {
            "amount": {"type": "integer", "minimum": 0}, "currency": {"type": "string", "minLength": 3,
                                                                       "maxLength": 3}}},
        "Address": {"type": "object", "properties": {
            "line1": {"type": "string"}, "city": {"type": "string"}, "country": {"type": "string"},
            "geo": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}}},
        "Folder": {"type": "object", "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/components/schemas/Folder"}}}},
    }


def _family(k: int) -> dict[str, Any]:
    schemas: dict[str, Any] = {}
    for level in range(DEPTH):
        name = f"Family{k}Level{level}"
        properties: dict[str, Any] = {
            "id": {"type": "string", "readOnly": True},
            "label": {"type": "string", "description": f"Level {level} of family {k}."},
            "state": {"type": "string", "enum": ["draft", "active", "retired"]},
            "note": {"type": "string", "nullable": True},
            "price": {"$ref": "#/components/schemas/Money"},
            "address": {"$ref": "#/components/schemas/Address"},
        }
        if level + 1 < DEPTH:
            properties["child"] = {"$ref": f"#/components/schemas/Family{k}Level{level + 1}"}
        else:
            properties["folder"] = {"$ref": "#/components/schemas/Folder"}
        schemas[name] = {"allOf": [{"$ref": "#/components/schemas/Audit"},
                                   {"type": "object", "required": ["label"], "properties": properties}]}
    return schemas


def _operations(k: int, count: int) -> dict[str, Any]:
    body = {"required": True, "content": {"application/json": {
        "schema": {"$ref": f"#/components/schemas/Family{k}Level0"}}}}
    ok = {"200": {"description": "OK"}}
    item_id = {"name": "itemId", "in": "path", "required": True, "schema": {"type": "string"}}
    all_ops: list[tuple[str, str, dict[str, Any]]] = [
        (f"/family{k}/items", "get", {"operationId": f"listFamily{k}", "summary": f"List family {k} items.",
                                      "parameters": [
                                          {"name": "limit", "in": "query", "schema": {"type": "integer", "maximum": 100}},
                                          {"name": "state", "in": "query", "schema": {"type": "string",
                                                                                     "enum": ["draft", "active"]}}],
                                      "responses": ok}),
        (f"/family{k}/items", "post", {"operationId": f"createFamily{k}", "summary": f"Create a family {k} item.",
                                       "requestBody": body, "responses": ok}),
        (f"/family{k}/items/{{itemId}}", "get", {"operationId": f"getFamily{k}", "parameters": [item_id],
                                                 "responses": ok}),
        (f"/family{k}/items/{{itemId}}", "put", {"operationId": f"updateFamily{k}", "parameters": [item_id],
                                                 "requestBody": body, "responses": ok}),
        (f"/family{k}/items/{{itemId}}", "delete", {"operationId": f"deleteFamily{k}", "parameters": [item_id],
                                                    "responses": ok}),
    ]
    paths: dict[str, Any] = {}
    for path, method, operation in all_ops[:count]:
        paths.setdefault(path, {})[method] = operation
    return paths


def _wide() -> tuple[dict[str, Any], dict[str, Any]]:
    schemas: dict[str, Any] = {}
    for depth in range(WIDE_DEPTH):
        properties: dict[str, Any] = {"value": {"type": "string"}}
        if depth + 1 < WIDE_DEPTH:
            properties["left"] = {"$ref": f"#/components/schemas/Wide{depth + 1}"}
            properties["right"] = {"$ref": f"#/components/schemas/Wide{depth + 1}"}
        schemas[f"Wide{depth}"] = {"type": "object", "properties": properties}
    paths = {"/wide-tree": {"put": {
        "operationId": OVERSIZE_OPERATION, "summary": "Replace the wide tree.",
        "requestBody": {"required": True, "content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/Wide0"}}}},
        "responses": {"200": {"description": "OK"}}}}}
    return schemas, paths


def synthetic_openapi(operations: int, *, oversize: bool = False) -> dict[str, Any]:
    """An OpenAPI 3.0 document with exactly `operations` operations (plus one with `oversize`)."""
    schemas = _shared()
    paths: dict[str, Any] = {}
    family = 0
    remaining = operations
    while remaining > 0:
        count = min(OPS_PER_FAMILY, remaining)
        schemas.update(_family(family))
        for path, methods in _operations(family, count).items():
            paths.setdefault(path, {}).update(methods)
        remaining -= count
        family += 1
    if oversize:
        wide_schemas, wide_paths = _wide()
        schemas.update(wide_schemas)
        paths.update(wide_paths)
    return {"openapi": "3.0.3", "info": {"title": f"Synthetic {operations}", "version": "1.0.0"},
            "servers": [{"url": "https://api.example.test/v1"}], "paths": paths,
            "components": {"schemas": schemas}}


def operation_ids(document: dict[str, Any]) -> list[str]:
    return sorted(op["operationId"] for methods in document["paths"].values() for op in methods.values())


def project_in(folder: Path, monkeypatch: pytest.MonkeyPatch, document: dict[str, Any]) -> Path:
    """`document` as `folder/api.json`, compiled from `folder` in one job (a test that counts what is lowered or
    made sees it all in this process); returns its path."""
    monkeypatch.setenv("TOOLC_JOBS", "1")
    monkeypatch.chdir(folder)
    path = folder / "api.json"
    path.write_text(json.dumps(document))
    return path
