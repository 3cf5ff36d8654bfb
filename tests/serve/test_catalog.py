"""What the server lists (`codegen/router/serve.py` at compile time, `toolc_router.serve_catalog` at run time):
MCP names, annotations, publishable output schemas, self-contained input schemas, and pages built once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from compiler.codegen.router.serve import mcp_names, output_schema, tool_annotations
from compiler.config import NamesConfig
from compiler.ir import Annotations, HttpBinding, McpBinding, Tool
from tests.support.router import catalog_from, load_router, make_build, write_router


def tool(tool_id: str, name: str, *, method: str | None = None, output: dict[str, Any] | None = None,
         annotations: Annotations | None = None) -> Tool:
    source = tool_id.split(":")[1]
    binding = HttpBinding(method, "/x", "https://x.test", ()) if method else McpBinding(source, name)
    return Tool(id=tool_id, source=source, name=name, description="", input_schema={"type": "object"},
                binding=binding, output_schema=output, annotations=annotations or Annotations())


def test_mcp_names_use_the_mcp_alphabet_and_never_drop_a_tool() -> None:
    tools = [tool("openapi:a:find pet by id", "find pet by id", method="GET"),
             tool("mcp:b:echo", "echo"), tool("mcp:c:echo", "echo"),
             tool("mcp:d:admin.tools.list", "admin.tools.list"),
             tool("openapi:e:" + "x" * 200, "x" * 200, method="GET")]
    names = mcp_names(tools, NamesConfig(namesake="skip"))
    assert names["openapi:a:find pet by id"] == "find_pet_by_id"
    assert (names["mcp:b:echo"], names["mcp:c:echo"]) == ("b__echo", "c__echo")  # server prefix on conflict
    assert names["mcp:d:admin.tools.list"] == "admin.tools.list"  # dots are legal MCP names
    assert len(names["openapi:e:" + "x" * 200]) == 128
    clash = mcp_names([tool("mcp:b:a_b", "a b"), tool("mcp:b:a b", "a_b")], NamesConfig())
    assert sorted(clash.values()) == ["a_b", "a_b_2"]  # renamed even where the project skips namesakes


def test_annotations_of_http_operations_come_from_the_method() -> None:
    get, delete, post = (tool_annotations(tool(f"openapi:a:{m}", m, method=m)) for m in ("GET", "DELETE", "POST"))
    assert get == {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": True}
    assert delete["destructiveHint"] and delete["idempotentHint"] and not delete["readOnlyHint"]
    assert not post["idempotentHint"] and not post["readOnlyHint"]
    declared = tool("mcp:b:x", "x", annotations=Annotations(title="X", read_only_hint=True))
    assert tool_annotations(declared) == {"title": "X", "readOnlyHint": True}  # only what the server said


@pytest.mark.parametrize(("schema", "published"), [
    ({"type": "object", "properties": {"a": {"type": "string"}}}, True),
    ({"$ref": "#/$defs/Pet"}, True),
    ({"allOf": [{"$ref": "#/$defs/Pet"}, {"properties": {"id": {"type": "integer"}}}]}, True),
    ({"type": "array", "items": {"$ref": "#/$defs/Pet"}}, False),
    ({"type": "string"}, False),
    ({"anyOf": [{"type": "object"}, {"type": "null"}]}, False),
])
def test_output_schemas_need_an_object_root(schema: dict[str, Any], published: bool) -> None:
    defs = {"Pet": {"type": "object", "properties": {"name": {"type": "string"}}}}
    result = output_schema(tool("openapi:a:get", "get", method="GET", output=schema), defs)
    assert (result is not None) == published
    if result is not None:
        assert result["type"] == "object" and "$ref" not in result  # a root `$ref` is inlined


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Any:
    build = make_build(catalog_from(openapi=("params",)))
    folder = write_router(build, tmp_path_factory.mktemp("serve-catalog"))
    with load_router(folder):
        from toolc_router import serve_catalog

        yield serve_catalog, folder


def test_pages_are_built_once_and_cover_every_tool(served: Any) -> None:
    module, folder = served
    catalog = module.ServedCatalog(page_size=10)
    seen: list[str] = []
    cursor = None
    while True:
        page = catalog.page(cursor)
        assert catalog.page(cursor) is page  # built once, then kept
        seen += [t.name for t in page.tools]
        cursor = page.next_cursor
        if cursor is None:
            break
    index = json.loads((folder / "toolc_router" / "_serve.json").read_text())["tools"]
    assert seen == list(index) and len(seen) == len(set(seen))
    for bad in ("999", "-1", "01", "x", ""):
        with pytest.raises(module.UnknownCursor):
            catalog.page(bad)


def test_served_schemas_carry_only_the_defs_they_reach(served: Any) -> None:
    module, _ = served
    catalog = module.ServedCatalog()
    tools = {t.name: t for t in catalog.page(None).tools}
    create = tools["createPets"].input_schema  # a body of NewPet items: NewPet, not Pet
    assert set(create.get("$defs", {})) <= {"NewPet"}
    pet = tools["getPet"].output_schema
    assert pet is not None and set(pet["$defs"]) == {"NewPet"} and pet["type"] == "object"
    assert tools["listPets"].output_schema is None  # an array of pets: text only
    assert catalog.input_schema("getPet") == tools["getPet"].input_schema
    assert catalog.tool_id("getPet") == "openapi:params:getPet" and catalog.tool_id("nope") is None
    assert catalog.resolve("getPet") == ("openapi:params:getPet", None)
    assert catalog.resolve("openapi:params:getPet", "anthropic") == ("openapi:params:getPet", None)


def test_defs_are_reached_transitively_shared_and_bounded(served: Any) -> None:
    module, _ = served
    defs = {"A": {"$ref": "#/$defs/B"}, "B": {"type": "object", "properties": {"c": {"$ref": "#/$defs/C"}}},
            "C": {"type": "string", "title": "C", "description": "x" * 500}, "Unused": {"type": "integer"},
            "a/b": {"type": "null"}}
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/A"}, "y": {"$ref": "#/$defs/a~1b"},
                                               "z": {"const": {"$ref": "#/$defs/Unused"}}}}
    bundled = module.with_defs(schema, defs)
    assert list(bundled["$defs"]) == ["A", "B", "C", "a/b"]  # reached transitively; a literal is no reference
    assert bundled["$defs"]["B"] is defs["B"]  # shared between tools, not copied
    own = module.with_defs({**schema, "$defs": {"A": {"type": "integer"}}}, defs)
    assert own["$defs"]["A"] == {"type": "integer"} and "B" not in own["$defs"]  # its own definitions win
    small = module.with_defs(schema, defs, budget=300)
    assert small["$defs"]["B"] is defs["B"]  # nearest first, while the budget lasts
    assert small["$defs"]["C"]["type"] == "string" and small["$defs"]["C"]["title"] == "C"
    assert "not expanded" in small["$defs"]["C"]["description"]  # a stub: the deep, big definition left out
    assert set(module.references(small)) == {"A", "B", "C", "a/b"}  # every reference still resolves


def test_serve_needs_a_compiled_router(tmp_path: Path) -> None:
    from tests.support.cli import run_toolc

    project = tmp_path / "toolc.yaml"
    project.write_text("name: empty\noutput: out\n")
    result = run_toolc("serve", "-c", project)
    assert result.exit_code == 1 and "error[TC681]" in result.stderr and "toolc compile" in result.stderr


def test_output_schemas_carry_stubs_only_where_a_looser_definition_only_loosens(served: Any) -> None:
    module, _ = served
    defs = {"A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
            "B": {"type": "string", "description": "x" * 500}, "C": {"type": "integer"}}
    loose = {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "anyOf": [{"$ref": "#/$defs/C"}]}
    assert module.loosening(loose) == ({"A", "C"}, set())
    assert module.strict_definitions(loose, defs, {}) == set()
    small = module.faithful_with_defs(loose, defs, budget=300)
    assert small is not None and "not expanded" in small["$defs"]["B"]["description"]  # a stub only loosens
    for keyword in ("oneOf", "not", "if", "contains"):  # a looser branch could reject more, or fit two branches
        branches: Any = {"$ref": "#/$defs/A"} if keyword in ("not", "if", "contains") else [{"$ref": "#/$defs/A"}]
        sensitive = {"type": "object", keyword: branches}
        assert module.strict_definitions(sensitive, defs, {}) == {"A", "B"}  # and all that A reaches
        assert module.faithful_with_defs(sensitive, defs, budget=300) is None  # does not fit whole
        assert module.faithful_with_defs(sensitive, defs, budget=2000) is not None
    unevaluated = {"type": "object", "allOf": [{"$ref": "#/$defs/A"}], "unevaluatedProperties": False}
    assert module.strict_definitions(unevaluated, defs, {}) == {"A", "B"}
    assert module.faithful_with_defs({"$ref": "#/$defs/Missing"}, defs) is None  # would not resolve
    assert module.publishable({"type": "object", "properties": {"a": {"type": "nonsense"}}}, foreign=True) is None
    assert module.publishable({"type": "object", "properties": {"a": {"$ref": "#/$defs/Gone"}}}, foreign=False) is None
    catalog = module.ServedCatalog()
    validator = catalog.output_validator("getPet")
    assert validator is not None and validator.schema == catalog.page(None).tools[
        catalog.names().index("getPet")].output_schema  # checked with exactly what is published
    assert catalog.output_validator("listPets") is None and catalog.output_validator("nope") is None


def test_structured_content_that_is_not_sent_reaches_the_caller_as_text(served: Any) -> None:
    from toolc_router import serve_mcp
    from toolc_router._types import ToolResult

    needs_a = Draft202012Validator({"type": "object", "required": ["a"]})
    content, structured, is_error = serve_mcp.served_form(ToolResult(structured={"b": 1}), needs_a)
    assert is_error and structured is None  # an MCP tool that sent structured content only, breaking its schema
    assert content[0]["text"] == ("The result does not match this tool's output schema (/: 'a' is a required "
                                  "property); it follows as text.")
    assert json.loads(content[1]["text"]) == {"b": 1}
    content, structured, is_error = serve_mcp.served_form(ToolResult(structured=[1, 2]))  # no schema published
    assert not is_error and structured is None and json.loads(content[0]["text"]) == [1, 2]
    failed = ToolResult(structured={"a": 1}, content=[{"type": "text", "text": "{\"a\": 1}"}], is_error=True,
                        error="HTTP 409 Conflict")
    content, structured, is_error = serve_mcp.served_form(failed, needs_a)
    assert is_error and structured is None and [block["text"] for block in content] == ["HTTP 409 Conflict",
                                                                                          "{\"a\": 1}"]
