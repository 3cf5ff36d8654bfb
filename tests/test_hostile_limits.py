"""Issue 14: every hostile document gets its diagnostic, in bounded memory: no TC999, no crash.

Each case compiles in a child process whose address space is capped with `resource.setrlimit` (CAP_MB), so a
regression (a billion laughs expanding, a C stack overflowing) fails its test instead of taking the machine
down. The timeout only stops a hang; nothing here asserts how long anything takes.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.codegen.stubs.models import split_source_lines
from compiler.codegen.stubs.patterns import drop_bad_patterns
from compiler.infra.diagnostics import CompilerError
from compiler.infra.limits import Limits, use
from compiler.infra.loading import parse_document
from tests.support.paths import ROOT, SERVERS

CAP_MB = 1536
HANG_GUARD_S = 240


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP_MB * 2**20, CAP_MB * 2**20))


def compile_capped(tmp_path: Path, *paths: Path | str, project: str | None = None, codegen: bool = False,
                   verbose: bool = False) -> subprocess.CompletedProcess[str]:
    """`toolc compile` in a child process with its memory capped; the result's stderr holds the diagnostics."""
    args = [sys.executable, "-m", "compiler", "compile", "--out", str(tmp_path / "out"),
            "--codegen" if codegen else "--no-codegen", *(["-v"] if verbose else [])]
    if project is not None:
        (tmp_path / "toolc.yaml").write_text(project)
        args += ["--config", str(tmp_path / "toolc.yaml")]
    else:
        args += ["--target", "none", *map(str, paths)]
    env = {**os.environ, "TOOLC_JOBS": "1"}
    env.pop("TOOLC_DEBUG", None)
    result = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=HANG_GUARD_S,
                            preexec_fn=_cap, env=env, check=False)
    assert result.returncode in (0, 1, 2), f"crashed ({result.returncode}): {result.stderr[-2000:]}"
    assert "TC999" not in result.stderr and "Traceback" not in result.stderr, result.stderr[-2000:]
    return result


def _openapi(schema: str) -> str:
    return ("openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths:\n  /p:\n    post:\n      operationId: op\n"
            "      requestBody:\n        content:\n          application/json:\n            schema: " + schema +
            "\n      responses: {'200': {description: ok}}\n")


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _billion_laughs() -> str:
    lines = ["openapi: 3.0.0", "info: {title: t, version: '1'}", "x-l0: &l0 [lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"x-l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, 10)]
    return "\n".join(lines) + "\n" + _openapi("{type: string, enum: *l9}").split("\n", 2)[2]


def _nested_arrays(depth: int) -> str:
    schema = '{"type": "string"}'
    for _ in range(depth):
        schema = '{"type": "array", "items": ' + schema + "}"
    return _openapi('{"type": "object", "properties": {"a": ' + schema + "}}")


CASES: dict[str, tuple[str, str, str]] = {
    # name: (file name, text, the diagnostic it must get)
    "billion laughs": ("laughs.yaml", _billion_laughs(), "TC132"),
    "alias cycle": ("cycle.yaml", "openapi: 3.0.0\nx-a: &a [1, *a]\n", "TC132"),
    "50,000 levels of YAML": ("deep.yaml", "[" * 50_000 + "]" * 50_000 + "\n", "TC131"),
    "50,000 levels of JSON": ("deep.json", "[" * 50_000 + "]" * 50_000, "TC105"),
    "300 levels of arrays in a schema (YAML)": ("arrays.yaml", _nested_arrays(150), "TC131"),
    "300 levels of arrays in a schema (JSON)": ("arrays.json", json.dumps(yaml.safe_load(_nested_arrays(150))),
                                                "TC131"),
    "!!binary": ("binary.yaml", "openapi: 3.0.0\nx-data: !!binary aGVsbG8=\n", "TC133"),
    "!!python/object": ("python.yaml", "openapi: 3.0.0\nx-o: !!python/object/apply:os.system [id]\n", "TC133"),
    "!!set": ("set.yaml", "openapi: 3.0.0\nx-s: !!set {a, b}\n", "TC133"),
    "application tag": ("tag.yaml", "openapi: 3.0.0\nx-t: !vault secret\n", "TC133"),
    "sequence as a key": ("key.yaml", _openapi("{type: object, properties: {[a, b]: {type: string}}}"), "TC135"),
    "mapping as a key": ("mapkey.yaml", "openapi: 3.0.0\n? {a: 1}\n: x\n", "TC135"),
    "5,000-digit integer (YAML)": ("int.yaml", _openapi("{type: integer, maximum: " + "9" * 5000 + "}"), "TC134"),
    "5,000-digit integer (JSON)": ("int.json", '{"openapi": "3.0.0", "x": ' + "9" * 5000 + "}", "TC136"),
    ".inf": ("inf.yaml", _openapi("{type: number, maximum: .inf}"), "TC136"),
    "not UTF-8 (YAML)": ("latin1.yaml", "openapi: 3.0.0\nx-name: caf\udce9\n", "TC137"),
    "not UTF-8 (JSON)": ("latin1.json", '{"openapi": "3.0.0", "x": "caf\udce9"}', "TC137"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_document_gets_its_diagnostic(tmp_path: Path, case: str) -> None:
    name, text, code = CASES[case]
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    result = compile_capped(tmp_path, path)
    assert result.returncode == 1
    assert f"error[{code}]" in result.stderr, result.stderr[-2000:]
    diagnostic = next(line for line in result.stderr.splitlines() if f"[{code}]" in line)
    assert diagnostic.startswith(name), "located in the document"


def test_the_other_inputs_still_compile(tmp_path: Path) -> None:
    bad = _write(tmp_path, "laughs.yaml", _billion_laughs())
    good = _write(tmp_path, "good.yaml", _openapi("{type: object, properties: {a: {type: string}}}"))
    result = compile_capped(tmp_path, bad, good)
    assert "error[TC132]" in result.stderr
    assert result.returncode == 1 and "good.yaml" not in result.stderr


def test_limits_are_raised_in_the_project_file(tmp_path: Path) -> None:
    _write(tmp_path, "arrays.yaml", _nested_arrays(70))  # 80 levels: past the default 64
    project = "openapi:\n  - path: arrays.yaml\nlimits:\n  max_depth: {depth}\n"
    assert "error[TC131]" in compile_capped(tmp_path, project=project.format(depth=64)).stderr
    raised = compile_capped(tmp_path, project=project.format(depth=100))
    assert raised.returncode == 0, raised.stderr[-2000:]


def test_document_size_limit(tmp_path: Path) -> None:
    _write(tmp_path, "big.yaml", _openapi("{type: string, description: '" + "x" * 200_000 + "'}"))
    result = compile_capped(tmp_path, project="openapi:\n  - path: big.yaml\nlimits:\n  max_document_mb: 0.1\n")
    assert "big.yaml: error[TC130]" in result.stderr


def test_memory_budget_is_a_diagnostic(tmp_path: Path) -> None:
    _write(tmp_path, "doc.json", json.dumps(yaml.safe_load(_openapi(
        '{"type": "object", "description": "' + "y" * 400_000 + '"}'))))
    result = compile_capped(tmp_path, project="openapi:\n  - path: doc.json\nlimits:\n  memory_mb: 1\n")
    assert "error[TC139]" in result.stderr and "limits.memory_mb" in result.stderr


def test_unknown_limit_is_refused(tmp_path: Path) -> None:
    result = compile_capped(tmp_path, project="limits:\n  max_aliases: 3\n")
    assert result.returncode == 2 and "error[TC110]" in result.stderr


def test_inlined_depth_is_bounded(tmp_path: Path) -> None:
    """A chain of definitions each nested 25 levels: inlining multiplies depth; TC208, never RecursionError."""
    defs = {}
    for i in range(20):
        schema: dict[str, Any] = {"$ref": f"#/components/schemas/D{i + 1}"} if i < 19 else {"type": "string"}
        for _ in range(25):
            schema = {"type": "object", "properties": {"x": schema}}
        defs[f"D{i}"] = schema
    document = yaml.safe_load(_openapi("{$ref: '#/components/schemas/D0'}"))
    document["components"] = {"schemas": defs}
    path = _write(tmp_path, "chain.json", json.dumps(document))
    result = subprocess.run(  # all targets: the providers inline
        [sys.executable, "-m", "compiler", "compile", "--out", str(tmp_path / "out"), "--no-codegen", str(path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=HANG_GUARD_S, preexec_fn=_cap, check=False)
    assert result.returncode == 1 and "error[TC208]" in result.stderr
    assert "TC999" not in result.stderr and "Traceback" not in result.stderr


# -- what the YAML loader keeps, and how ------------------------------------------------------------------


def _yaml(text: str, **limits: Any) -> Any:
    with use(Limits(**limits)):
        return parse_document(text.encode(), source="t.yaml", suffix=".yaml")


def test_yaml_stays_json() -> None:
    data = _yaml("200: ok\non: yes\nnull: ~\n1.5: x\nwhen: 2024-01-01\nbig: 123456789012345678901234567890\n"
                 "base: &b {a: 1, b: 2}\nmerged: {<<: *b, b: 3}\nquoted: !!str 12\n")
    assert data == {"200": "ok", "on": True, "null": None, "1.5": "x", "when": "2024-01-01",
                    "big": 1.2345678901234568e29, "base": {"a": 1, "b": 2}, "merged": {"a": 1, "b": 3},
                    "quoted": "12"}


@pytest.mark.parametrize("text", [
    "a: 1\nb: [1, 2, {c: d}]\n", "- x\n- {y: [1.5, -2, true, null]}\n", "k: &a v\nl: *a\n", "'q': \"w\"\n",
    "x: 0x1F\ny: 1_000\nz: -.5\n", "",
])
def test_yaml_reads_like_safe_load(text: str) -> None:
    assert _yaml(text) == yaml.safe_load(text)


def test_yaml_alias_budget_counts_what_aliases_stand_for() -> None:
    text = "a: &a [1, 2, 3, 4]\nb: [*a, *a, *a]\n"
    assert _yaml(text, max_alias_nodes=15)["b"][2] == [1, 2, 3, 4]
    with pytest.raises(CompilerError) as refused:
        _yaml(text, max_alias_nodes=14)
    assert refused.value.diagnostic.code == "TC132" and refused.value.diagnostic.source == "t.yaml:2:13"


def test_yaml_depth_counts_aliased_nodes() -> None:
    deep = "[" * 10 + "]" * 10
    with pytest.raises(CompilerError) as refused:
        _yaml(f"a: &a {deep}\nb: [[[[[[*a]]]]]]\n", max_depth=16)
    assert refused.value.diagnostic.code == "TC131"


@pytest.mark.parametrize("text", ["[" * 5_000 + "]" * 5_000,
                                  "".join("  " * level + "- \n" for level in range(2_000)),
                                  "".join("  " * level + "k:\n" for level in range(2_000))],
                         ids=["flow", "block sequence", "block mapping"])
def test_yaml_past_the_parser_own_depth_limit_is_tc131(text: str) -> None:
    """Newer libyaml stops at 1,000 levels with a scanner error of its own, before any event reaches the
    builder: it is still the nesting limit (TC131) with a location, never 'malformed YAML' (TC102)."""
    with pytest.raises(CompilerError) as refused:
        _yaml(text)
    diagnostic = refused.value.diagnostic
    assert diagnostic.code == "TC131" and "max_depth=64" in diagnostic.message
    assert diagnostic.source.startswith("t.yaml:")


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "é", "\n", "\r", "\r\n", "\x0c", "\u2028", "\x85", " "]), max_size=40).map("".join))
def test_linear_line_splitting_matches_the_generator(text: str) -> None:
    from compiler.codegen.stubs import models

    models._linear_line_splitting()
    (original,) = models._REPLACED[:1] or [None]
    assert original is not None and original is not split_source_lines
    assert split_source_lines(text) == original(text)


def test_bad_patterns_are_dropped_where_they_are() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string", "pattern": "("}}},
              "patternProperties": {"[": {"type": "string"}, "^x": {"type": "string", "pattern": "^ok$"}},
              "allOf": [{"properties": {"b": {"pattern": "(?<=a)b"}}}]}
    frozen = json.dumps(schema)
    cleaned, dropped = drop_bad_patterns(schema, "/inputSchema")
    assert [d.pointer for d in dropped] == ["/inputSchema/properties/a/items/pattern",
                                           "/inputSchema/patternProperties/["]
    assert "pattern" not in cleaned["properties"]["a"]["items"] and list(cleaned["patternProperties"]) == ["^x"]
    assert cleaned["allOf"] is schema["allOf"], "unchanged parts are shared, not copied"
    assert json.dumps(schema) == frozen, "the input is read-only"


def test_generated_code_checks(tmp_path: Path) -> None:
    """A bad pattern is dropped with TC611 and the module imports; a source named `anyio` is renamed (TC610);
    a property name of 300,000 characters gets a short field name (its alias keeps the wire name)."""
    document = yaml.safe_load(_openapi("{type: object}"))
    document["paths"]["/p"]["post"]["requestBody"]["content"]["application/json"]["schema"]["properties"] = {
        "bad": {"type": "string", "pattern": "(unclosed["}, "ahead": {"type": "string", "pattern": "(?<=a)b"},
        "wordy" * 60_000: {"type": "string"}}
    _write(tmp_path, "anyio.json", json.dumps(document))
    result = compile_capped(tmp_path, project="openapi:\n  - path: anyio.json\n    base_url: https://x.test\n",
                            codegen=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "warning[TC610]" in result.stderr and "warning[TC611]" in result.stderr
    package = tmp_path / "out" / "python" / "anyio_"
    models = (package / "models.py").read_text()
    assert "(unclosed[" not in models and "(?<=a)b" in models
    field = next(line.strip() for line in models.splitlines() if line.strip().startswith("wordywordy"))
    assert len(field.split(":")[0]) <= Limits().max_identifier_length
    imported = subprocess.run([sys.executable, "-c", "import anyio_.models, anyio_.tools, anyio; print('ok')"],
                              cwd=package.parent, capture_output=True, text=True, timeout=HANG_GUARD_S,
                              preexec_fn=_cap, check=False)
    assert imported.stdout.strip() == "ok", imported.stderr[-2000:]


def test_long_tool_name_is_cut(tmp_path: Path) -> None:
    listing = {"server": "s", "tools_list_pages": [{"tools": [
        {"name": "t" * 5000, "inputSchema": {"type": "object", "properties": {"p" * 5000: {"type": "string"}}}}]}]}
    _write(tmp_path, "s.json", json.dumps(listing))
    result = compile_capped(tmp_path, project="recordings:\n  - path: s.json\n", codegen=True, verbose=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "info[TC612]" in result.stderr
    tools = (tmp_path / "out" / "python" / "s" / "tools.py").read_text()
    assert max(len(line) for line in tools.splitlines() if "def " in line) < 120


_LIST_LIVE = """
import json, sys
from pathlib import Path
from compiler.config import ServerConfig
from compiler.infra.diagnostics import Diagnostics
from compiler.sources.mcp_live import fetch_listings
edge, modes = sys.argv[1], sys.argv[2:]
servers = [ServerConfig(id=m, command=(sys.executable, edge, m), timeout_ms=3000) for m in modes]
diagnostics = Diagnostics()
listings = fetch_listings(servers, diagnostics, root=Path.cwd())
print(json.dumps({"listed": sorted(listings), "codes": sorted({(d.source, d.code) for d in diagnostics})}))
"""


@pytest.mark.servers
def test_live_garbage_is_one_diagnostic_per_server(tmp_path: Path) -> None:
    """Bytes that are not UTF-8, a truncated line, an integer past 64 bits, 300 levels of nesting: each is the
    diagnostic of its own server, and the well-behaved server beside them is listed."""
    edge = str(SERVERS / "edge_stdio.py")
    modes = ["bad-utf8", "bad-json", "big-int", "deep", "legacy"]
    result = subprocess.run([sys.executable, "-c", _LIST_LIVE, edge, *modes], cwd=tmp_path, capture_output=True,
                            text=True, timeout=HANG_GUARD_S, preexec_fn=_cap, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    outcome = json.loads(result.stdout)
    assert outcome["listed"] == ["big-int", "legacy"]
    assert [tuple(pair) for pair in outcome["codes"]] == [
        ("bad-json", "TC507"), ("bad-utf8", "TC516"), ("deep", "TC131")]


def test_fuzz_slice(tmp_path: Path) -> None:
    """A short, derandomized run of bench/fuzz_loader.py (same target, same strategies), memory capped."""
    bench = ROOT / "bench" / "fuzz_loader.py"
    result = subprocess.run([sys.executable, str(bench), "--examples", "300", "--derandomize",
                             "--cap-mb", str(CAP_MB)], cwd=tmp_path, capture_output=True, text=True,
                            timeout=HANG_GUARD_S * 2, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["inputs"] == 300 and report["crashes"] == 0
    assert {"TC131", "TC134", "TC137"} <= set(report["codes"]), "the hostile fragments reach the limits"


def test_resolution_looks_at_the_memory_budget() -> None:
    from compiler.infra import limits
    from compiler.infra.diagnostics import Diagnostics
    from compiler.refs import RefResolver

    resolver = RefResolver(Diagnostics())
    token = limits._CEILING.set(1)  # a ceiling already passed: the budget is spent
    try:
        with pytest.raises(MemoryError):
            for _ in range(64):
                resolver.inline({"type": "string"})
    finally:
        limits._CEILING.reset(token)


def test_a_spent_budget_stops_the_stages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from compiler.config import config_from_data
    from compiler.infra import limits
    from compiler.pipeline import compile_project

    _write(tmp_path, "doc.yaml", _openapi("{type: object, properties: {a: {type: string}}}"))
    config = config_from_data({"openapi": [{"path": "doc.yaml"}]}, root=tmp_path, source="toolc.yaml")
    monkeypatch.setattr(limits, "over_budget", lambda: True)
    build = compile_project(config)
    assert [d.code for d in build.diagnostics if d.severity.value == "error"] == ["TC139"]
    assert "after reading the sources" in build.diagnostics.items[-1].message and not build.files
