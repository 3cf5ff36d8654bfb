"""The stub generator on the seven recorded MCP listings: valid, typed, standalone, deterministic, keeps edits."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.codegen.stubs import stub_functions
from compiler.codegen.stubs.identifiers import snake_name, unique_names
from compiler.codegen.stubs.literals import UnsafeModule, check_module, docstring_literal
from compiler.codegen.stubs.models import ModelRequest, combine
from compiler.codegen.stubs.stub_packages import (
    KEEP_UNPARSABLE,
    KEPT_ORPHAN,
    UNSAFE_MODULE,
    SourcePackage,
    generate_stubs,
)
from tests.support.codegen import (
    RECORDINGS,
    build_from,
    build_from_files,
    call_every_stub,
    router_files,
    run_isolated,
    tool,
    write_files,
)

PACKAGES = sorted(snake_name(path.stem, fallback="s", prefix="s") for path in RECORDINGS)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    build = build_from_files(RECORDINGS)
    files = generate_stubs(build)
    assert not build.diagnostics.has_errors, [d.render() for d in build.diagnostics]
    folder = tmp_path_factory.mktemp("stubs")
    write_files(folder, {**router_files(build), **files})
    return folder


def test_one_package_per_source(generated: Path) -> None:
    for package in PACKAGES:
        assert sorted(p.name for p in (generated / package).iterdir()) == [
            "__init__.py", "models.py", "py.typed", "tools.py"]
    # The support code the stubs share lives once, in the router package.
    assert (generated / "toolc_router" / "stubs.py").is_file()


def test_ruff_passes(generated: Path) -> None:
    result = tool("ruff", "check", "--no-cache", *PACKAGES, cwd=generated)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_passes(generated: Path) -> None:
    result = tool("mypy", "--strict", "--no-incremental", "--cache-dir", "/dev/null", *PACKAGES, cwd=generated)
    assert result.returncode == 0, result.stdout + result.stderr


def test_imports_without_compiler(generated: Path) -> None:
    code = "import importlib, json\n" + "".join(f"importlib.import_module({p!r})\n" for p in PACKAGES)
    code += "print(json.dumps('compiler' in sys.modules))"
    result = run_isolated(generated, code)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) is False


def test_signatures_and_wire_names(generated: Path) -> None:
    tree = ast.parse((generated / "server_memory" / "tools.py").read_text())
    functions = {node.name: node for node in tree.body if isinstance(node, ast.AsyncFunctionDef)}
    assert sorted(functions) == ["add_observations", "create_entities", "create_relations", "delete_entities",
                                 "delete_observations", "delete_relations", "open_nodes", "read_graph", "search_nodes"]
    delete = functions["delete_entities"]
    assert [a.arg for a in delete.args.kwonlyargs] == ["entity_names", "context"]
    assert ast.unparse(delete.returns) == "_models.DeleteEntitiesOutput"  # type: ignore[arg-type]
    assert ast.get_docstring(delete, clean=False).startswith("Delete multiple entities")  # type: ignore[union-attr]

    data = call_every_stub(generated, "server_memory")
    call = data["report"]["delete_entities"]
    assert call["tool_id"] == "mcp:server-memory:delete_entities"
    assert call["arguments"] == {"entityNames": []}
    assert call["context"] == "CTX"
    assert call["error"] == "ToolOutputError"  # the fake result {} is no DeleteEntitiesOutput: raw answer kept
    assert data["report"]["search_nodes"]["arguments"] == {"query": "v:search_nodes:query"}


def test_optional_arguments_left_out_and_required_first(generated: Path) -> None:
    tree = ast.parse((generated / "mcp_server_fetch" / "tools.py").read_text())
    fetch = next(n for n in tree.body if isinstance(n, ast.AsyncFunctionDef))
    names = [a.arg for a in fetch.args.kwonlyargs]
    assert names[0] == "url" and names[-1] == "context"
    assert all(isinstance(d, ast.Constant) and d.value is None for d in fetch.args.kw_defaults[1:])
    report = call_every_stub(generated, "mcp_server_fetch")["report"]
    assert report["fetch"]["arguments"] == {"url": "v:fetch:url", "max_length": 7, "start_index": 7, "raw": True}


def test_deterministic() -> None:
    first = generate_stubs(build_from_files(RECORDINGS))
    second = generate_stubs(build_from_files(reversed(RECORDINGS)))
    assert first == second
    assert all(b"20" + b"26-" not in content for content in first.values())  # no dates


def _memory_listing() -> dict[str, object]:
    return json.loads(next(p for p in RECORDINGS if p.stem == "server-memory").read_text())


def test_keep_marker_survives_regeneration() -> None:
    build = build_from([(_memory_listing(), "server-memory.json")])
    files = {f"python/{k}": v for k, v in generate_stubs(build).items()}
    tools_py = files["python/server_memory/tools.py"].decode()
    edited = tools_py.replace("\n\nasync def read_graph(", "\n\n# toolc: keep\nasync def read_graph(", 1)
    edited = edited.replace("    _result = await _support.call_tool('mcp:server-memory:read_graph'",
                            "    # my edit: log before calling\n    _result = await _support.call_tool('mcp:server-memory:read_graph'", 1)
    edited = edited.replace("\n\nasync def open_nodes(", "\n\n# toolc: keep\nasync def open_nodes(", 1)
    assert edited.count("\n# toolc: keep\n") == 2
    files["python/server_memory/tools.py"] = edited.encode()

    changed = _memory_listing()
    page = changed["tools_list_pages"][0]  # type: ignore[index]
    page["tools"] = [t for t in page["tools"] if t["name"] != "open_nodes"]
    for t in page["tools"]:
        if t["name"] in ("read_graph", "search_nodes"):
            t["description"] = "CHANGED DESCRIPTION"
    again = build_from([(changed, "server-memory.json")], previous_output=files)
    new = generate_stubs(again)["server_memory/tools.py"].decode()

    assert "# my edit: log before calling" in new
    assert new.count("CHANGED DESCRIPTION") == 1  # search_nodes regenerated; kept read_graph untouched
    assert "async def open_nodes(" in new  # kept although its tool is gone ...
    orphans = [d for d in again.diagnostics if d.code == KEPT_ORPHAN]
    assert len(orphans) == 1 and "open_nodes" in orphans[0].message  # ... and reported
    check_module(new, filename="tools.py")
    init = generate_stubs(again)["server_memory/__init__.py"].decode()
    assert "open_nodes" in init


def test_unparsable_previous_module_is_an_error_not_an_overwrite() -> None:
    previous = {"python/server_memory/tools.py": b"# toolc: keep\nasync def broken(:\n"}
    build = build_from([(_memory_listing(), "server-memory.json")], previous_output=previous)
    files = generate_stubs(build)
    assert not any(path.startswith("server_memory/") for path in files)
    assert KEEP_UNPARSABLE in build.diagnostics.codes() and build.diagnostics.has_errors


def test_unique_names_are_stable_under_additions() -> None:
    def sanitise(raw: str) -> str:
        return snake_name(raw, fallback="tool", prefix="tool")

    small = unique_names(["get-data", "getData"], sanitise)
    large = unique_names(["get-data", "getData", "get_data", "other"], sanitise)
    assert large["get_data"] == "get_data"
    assert small["get-data"] == large["get-data"] and small["getData"] == large["getData"]
    assert len(set(large.values())) == 4
    assert unique_names(["class", "\uff43\uff4c\uff41\uff53\uff53"], sanitise)["class"] == "class_"


def test_combine_shares_equal_definitions_and_separates_different_ones() -> None:
    item_a = {"type": "object", "properties": {"a": {"type": "string"}}}
    item_b = {"type": "object", "properties": {"b": {"type": "integer"}}}
    def request(key: str, item: dict[str, object], extra: dict[str, object] | None = None) -> ModelRequest:
        schema = {"type": "object", "properties": {"item": {"$ref": "#/$defs/Item"}, **(extra or {})},
                  "$defs": {"Item": item}}
        return ModelRequest(key, schema, f"tool:{key}", "/inputSchema")

    combined = combine([request("AInput", item_a), request("BInput", item_a),
                        request("CInput", item_b, {"r": {"$ref": "https://x.invalid/s.json"}, "s": {"$ref": "#/properties/item"}})])
    defs = combined.schema["$defs"]
    assert defs["Item"] == item_a and defs["CInput_Item"] == item_b
    assert defs["CInput"]["properties"]["item"] == {"$ref": "#/$defs/CInput_Item"}
    assert defs["CInput"]["properties"]["r"] == {}  # non-local ref → any, reported
    assert defs["CInput"]["properties"]["s"] == {"$ref": "#/$defs/CInput/properties/item"}
    assert [ref for _, ref in combined.foreign_refs] == ["https://x.invalid/s.json"]


@pytest.mark.parametrize("code", [
    "from __future__ import annotations\nimport os\nos.system('x')\n",
    "from __future__ import annotations\n@print\ndef f() -> None: ...\n",
    "from __future__ import annotations\ndef f(x=__import__('os')) -> None: ...\n",
    "from __future__ import annotations\nclass A:\n    x = open('f')\n",
    "from __future__ import annotations\nif True:\n    import os\n",
    "def f(:\n",
    "x = 1\n",
])
def test_check_module_refuses_code_that_runs_on_import(code: str) -> None:
    with pytest.raises(UnsafeModule):
        check_module(code, filename="m.py")


# Quotes and backslashes are what break out of a docstring: draw from them often, not only from all of unicode.
_BREAKOUT = st.text(alphabet=st.sampled_from(['"', "\\", "'", " ", "\t", "\n", "\r", "a", "\x00", "\u202e"]), max_size=16)


@settings(max_examples=600, deadline=None)
@given(st.one_of(st.text(), _BREAKOUT))
def test_docstrings_round_trip(text: str) -> None:
    literal = docstring_literal(text, indent="    ")
    module = f"def f() -> None:\n    {literal}\n"
    function = ast.parse(module).body[0]
    assert isinstance(function, ast.FunctionDef) and len(function.body) == 1
    value = ast.get_docstring(function, clean=False) or ""
    expected = "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").split("\n")).strip("\n")
    first, *others = value.split("\n")
    assert "\n".join([first, *(line.removeprefix("    ") for line in others)]).removesuffix("\n") == expected


@pytest.mark.parametrize("text", ['"""', 'a"', "    \\", '\\"', 'q""', "ends\\"])
def test_docstring_breakouts_found_by_hypothesis(text: str) -> None:
    literal = docstring_literal(text, indent="    ")
    assert ast.literal_eval(literal).strip() == text.strip()


def test_kept_functions_parses_only_a_module_with_a_marker_line() -> None:
    import libcst

    from compiler.codegen.stubs.keep import kept_functions

    broken = "def f(:\n"
    assert kept_functions(broken + '"""mentions # toolc: keep inline only"""\n') == {}  # not parsed
    assert kept_functions("# toolc keep\n" + broken) == {}
    with pytest.raises(libcst.ParserSyntaxError):
        kept_functions("  #toolc:  keep \n" + broken)
    module = "X = 1\n\n\n# toolc: keep\ndef g() -> None:\n    pass\n\n\ndef h() -> None:\n    pass\n"
    assert list(kept_functions(module)) == ["g"]


# tools.py is checked in parts (its head, then its functions piece by piece): code that would run on import is
# refused in either part, and the package is not emitted (TC603).
_RUNS_ON_IMPORT = 'print("ran on import")\nif True:'  # the function's indented body becomes this `if`'s block


def test_a_tools_head_that_would_run_code_is_not_emitted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SourcePackage, "_docstring", lambda self, what: f'"""{what}"""\n{_RUNS_ON_IMPORT}\n    pass')
    build = build_from_files(RECORDINGS[:1])
    files = generate_stubs(build)
    assert not any(path.endswith("/tools.py") for path in files)
    refused = [d for d in build.diagnostics if d.code == UNSAFE_MODULE]
    assert refused and "tools.py (docstring and imports) does not parse" in refused[0].message


def test_a_stub_function_that_would_run_code_is_not_emitted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stub_functions, "docstring_literal", lambda text, indent="": f'"""doc"""\n{_RUNS_ON_IMPORT}')
    build = build_from_files(RECORDINGS[:1])
    files = generate_stubs(build)
    assert not any(path.endswith("/tools.py") for path in files)
    refused = [d for d in build.diagnostics if d.code == UNSAFE_MODULE]
    # `return` is now outside any function: compiling the piece (not only parsing it) is what finds it
    assert refused and "tools.py (stubs 1 to 1) does not parse: 'return' outside function" in refused[0].message
