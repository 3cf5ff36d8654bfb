"""The emitter, the report, `toolc explain`, determinism, and bad input turned into diagnostics."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

from compiler.cli import main
from compiler.config import Config
from compiler.infra.diagnostics import Diagnostic, Diagnostics
from compiler.pipeline import adhoc_inputs, compile_project
from compiler.providers import codes, schemas
from compiler.providers.dialect import FamilyLowering, LoweringCache, NotStrictHere
from compiler.providers.lower import lower_target
from compiler.providers.registry import validate
from compiler.refs import RefResolver
from tests.support.paths import FIXTURES, ROOT
from tests.support.providers import TARGETS, catalog_of, config, lower, make_tool

MCP = sorted((FIXTURES / "mcp").glob("*.json"))
HOSTILE = FIXTURES / "providers" / "hostile-listing.json"


def _build(paths: list[Path], **config: Any) -> Any:
    return compile_project(Config(root=ROOT, **config), adhoc_inputs(paths, ROOT), out_dir=Path("/nonexistent-x"))


def test_emits_tools_and_name_maps_for_every_target() -> None:
    build = _build(MCP)
    assert not build.diagnostics.has_errors
    for target in TARGETS:
        tools = json.loads(build.files[f"schemas/{target}.json"])
        names = json.loads(build.files[f"schemas/{target}.names.json"])
        output = build.providers[target]
        assert output.names == names
        definitions = tools[0]["functionDeclarations"] if target == "gemini" else tools
        assert definitions == list(output.tools.values())
        assert len(definitions) == len(build.catalog.tools) == len(names["tools"])
        assert all(validate(target, d) == [] for d in definitions)
        summary = build.summary(target)
        assert summary["bytes"] == len(build.files[f"schemas/{target}.json"])
        assert 0 < summary["tokens"] < summary["bytes"] and summary["fits_one_request"] is True


def test_output_is_deterministic() -> None:
    first, second = _build(MCP), _build(list(reversed(MCP)))
    assert {k: v for k, v in first.files.items() if k.startswith("schemas/")} == \
        {k: v for k, v in second.files.items() if k.startswith("schemas/")}


def test_bad_input_becomes_diagnostics_not_tracebacks() -> None:
    build = _build([HOSTILE])
    by_tool: dict[str, set[str]] = {}
    for d in build.diagnostics:
        by_tool.setdefault(d.tool, set()).add(d.code)
    for name in ("props_list", "required_str", "items_number", "bad_type"):
        assert codes.MALFORMED_SCHEMA in by_tool.get(f"mcp:hostile-listing:{name}", set()), name
    for target in TARGETS:
        emitted = build.providers[target].tools
        assert "mcp:hostile-listing:fine.tool/name" in emitted
        assert all(validate(target, d) == [] for d in emitted.values())
    assert not any(d.code == codes.INVALID_OUTPUT for d in build.diagnostics)
    for d in build.diagnostics:
        if d.code.startswith("TC4"):
            assert d.provider and d.tool and d.pointer


def test_cli_compile_report_carries_targets_and_losses(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    result = CliRunner().invoke(main, ["compile", *map(str, MCP), "--out", str(tmp_path / "out"),
                                       "--report", str(report)])
    assert result.exit_code == 0, result.output
    data = json.loads(report.read_text())
    assert set(data["targets"]) == set(TARGETS)
    losses = [d for d in data["diagnostics"] if d["code"].startswith("TC4")]
    assert losses and all(d["provider"] and d["tool"] for d in losses)
    assert (tmp_path / "out" / "schemas" / "openai-responses.names.json").exists()


def test_explain_shows_source_lowered_and_losses() -> None:
    runner = CliRunner()
    git = str(FIXTURES / "mcp" / "mcp-server-git.json")
    text = runner.invoke(main, ["explain", "git_log", "--provider", "openai", git])
    assert text.exit_code == 0, text.output
    for section in ("## source input schema", "## lowered definition", "## losses", "TC406"):
        assert section in text.output
    as_json = runner.invoke(main, ["explain", "mcp:mcp-server-git:git_log", "-p", "gemini", "--json", git])
    data = json.loads(as_json.output)
    assert data["definition"]["name"] == "git_log" and data["source_schema"]["type"] == "object"
    missing = runner.invoke(main, ["explain", "nope", "-p", "anthropic", git])
    assert missing.exit_code == 1 and "TC440" in missing.output and "did you mean" not in missing.output
    for typed in ("git-log", "GIT_LOG", "gitlog"):  # other separators or case: the tool meant, suggested
        near = runner.invoke(main, ["explain", typed, "-p", "anthropic", git])
        assert near.exit_code == 1 and "did you mean 'git_log'?" in near.output, near.output
    spelt = runner.invoke(main, ["explain", "git_lgo", "-p", "anthropic", git])
    assert "did you mean 'git_log'" in spelt.output
    bad = runner.invoke(main, ["explain", "git_log", "-p", "cohere", git])
    assert bad.exit_code == 2


def test_explain_lists_every_strict_obstacle(tmp_path: Path) -> None:
    listing = {"tools": [{"name": "t", "inputSchema": {"type": "object", "properties": {
        "m": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}},
        "c": {"allOf": [{"type": "string"}, {"type": "integer"}]}}}}]}
    path = tmp_path / "l.json"
    path.write_text(json.dumps(listing))
    out = CliRunner().invoke(main, ["explain", "t", "-p", "openai-responses", "--json", str(path)])
    data = json.loads(out.output)
    reasons = next(loss["message"] for loss in data["losses"] if loss["code"] == codes.NOT_STRICT)
    assert "open object" in reasons and "allOf members conflict" in reasons
    assert data["definition"]["strict"] is False


@pytest.mark.parametrize("count", [129])
def test_too_many_tools_warns_with_the_way_out(count: int, tmp_path: Path) -> None:
    listing = {"tools": [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(count)]}
    path = tmp_path / "many.json"
    path.write_text(json.dumps(listing))
    build = _build([path], targets=("openai-chat",))
    # One warning for the fact (TC771, naming what to send instead); the lowering's count of it is a note.
    (fact,) = [d for d in build.diagnostics if d.code == codes.TOO_MANY_TOOLS]
    assert fact.severity.value == "info" and "schemas/README.md" in fact.message
    (warning,) = [d for d in build.diagnostics if d.severity.value == "warning"]
    assert warning.code == codes.DISCOVERY_FORM and "send a toolset file" in warning.message
    guide = build.files["schemas/README.md"].decode()
    assert "## openai-chat\n\nSend one of" in guide and "a toolset per task" in guide


def test_anthropic_strict_budgets_per_request() -> None:
    """§2.3: at most 20 strict tools, 24 optional and 16 union parameters per request; the rest go non-strict."""
    from tests.support.providers import catalog_of, config, lower, make_tool

    small = [make_tool({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
                       name=f"t{i:02}") for i in range(25)]
    result = lower(catalog_of(*small), "anthropic", config(anthropic_strict=True))
    assert sum(item.strict for item in result.lowered) == 20
    assert [d.tool for d in result.diagnostics if d.code == codes.STRICT_BUDGET] == \
        [f"mcp:srv:t{i:02}" for i in range(20, 25)]
    assert all(("strict" in item.definition) is item.strict for item in result.lowered)

    optional = [make_tool({"type": "object", "properties": {f"o{j}": {"type": "string"} for j in range(10)}},
                          name=f"o{i}") for i in range(3)]
    result = lower(catalog_of(*optional), "anthropic", config(anthropic_strict=True))
    assert [item.strict for item in result.lowered] == [True, True, False]  # 10 + 10 fit in 24, 30 does not
    unions = [make_tool({"type": "object", "required": [f"u{j}" for j in range(9)], "properties": {
        f"u{j}": {"type": ["string", "integer"]} for j in range(9)}}, name=f"u{i}") for i in range(2)]
    result = lower(catalog_of(*unions), "anthropic", config(anthropic_strict=True))
    assert [item.strict for item in result.lowered] == [True, False]  # 9 + 9 union parameters > 16


def test_shared_subtrees_do_not_leak_between_tools() -> None:
    """Lowered subtrees are memoised across tools: a tool's output must not depend on which tools came before."""
    from tests.support.providers import catalog_of, lower, make_tool

    shared = {"D": {"type": "object", "properties": {"x": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                                                      "y": {"type": "integer", "default": 1}}}}
    a = make_tool({"type": "object", "properties": {"p": {"$ref": "#/$defs/D"}}}, name="a")
    b = make_tool({"type": "object", "properties": {"q": {"$ref": "#/$defs/D"},
                                                    "r": {"anyOf": [{"$ref": "#/$defs/D"}, {"type": "null"}]}}},
                  name="b")
    for target in TARGETS:
        alone = lower(catalog_of(b, definitions=shared), target)
        after = lower(catalog_of(a, b, definitions=shared), target)
        assert alone.lowered[0].definition == after.lowered[1].definition, target
        assert alone.entries == {k: v for k, v in after.entries.items() if v["tool"] == b.id}, target
        assert sorted(d.render() for d in alone.diagnostics) == \
            sorted(d.render() for d in after.diagnostics if d.tool == b.id), target


def test_the_lowering_cache_records_a_tool_that_cannot_be_strict_as_a_value() -> None:
    """The OpenAI family lowers a tool's parameters once for both wire formats; a tool that cannot be strict is
    recorded as such (a value, not a cached exception) and the second format reports the same fallback."""
    schema = {"type": "object", "properties": {"c": {"allOf": [{"type": "string"}, {"type": "integer"}]}}}
    catalog = catalog_of(make_tool(schema, name="t"))
    tool_id = catalog.tools[0].id
    cache = LoweringCache()
    resolver = RefResolver(Diagnostics())
    chat = lower_target(catalog, resolver, "openai-chat", config(), cache)
    strict, loose = cache.family[("openai", tool_id, "t", True)], cache.family[("openai", tool_id, "t", False)]
    assert strict == NotStrictHere(("/properties/c", "allOf members conflict on type"))
    assert isinstance(loose, FamilyLowering) and loose.parameters["properties"]["c"]["allOf"]
    responses = lower_target(catalog, resolver, "openai-responses", config(), cache)
    for result in (chat, responses):
        assert [item.strict for item in result.lowered] == [False]
        assert [d.code for d in result.diagnostics if d.code == codes.NOT_STRICT] == [codes.NOT_STRICT]


def test_the_targets_of_a_family_share_a_tools_name_map_entry() -> None:
    """Chat Completions and Responses lower a tool's parameters once, and so extract its argument shapes once: the
    second target's name-map entry is the first's, equal to what each makes alone; a tool whose parameters lower
    to the same shapes still gets its own entry (its own tool id), and sharing leaves the entries as they were."""
    schema = {"type": "object", "properties": {"a": {"type": "string"},
                                               "b": {"type": "object", "properties": {"c": {"type": "integer"}}}},
              "required": ["a"]}
    catalog = catalog_of(make_tool(schema, name="t"), make_tool(schema, name="u"))
    cache = LoweringCache()
    resolver = RefResolver(Diagnostics())
    chat = lower_target(catalog, resolver, "openai-chat", config(), cache)
    responses = lower_target(catalog, resolver, "openai-responses", config(), cache)
    assert [item.strict for item in chat.lowered] == [True, True]
    for name in ("t", "u"):
        assert responses.entries[name] is chat.entries[name]
        assert chat.entries[name]["arguments"]["optional"] == ["b"]
        for target, result in (("openai-chat", chat), ("openai-responses", responses)):
            assert result.entries[name] == lower(catalog, target).entries[name]
    assert chat.entries["t"]["tool"] != chat.entries["u"]["tool"]


def test_merged_diagnostics_keep_their_order_and_the_resolvers_once_each() -> None:
    """`schemas._merge_diagnostics` adds runs of a lowering's diagnostics whole: the result is the one a loop adding
    each in turn gives, a diagnostic without a target (the resolver's) added only the first time it is met."""
    pruned = Diagnostic.of("TC205", "recursion pruned", source="api", tool="api:a")
    other = Diagnostic.of("TC205", "recursion pruned elsewhere", source="api", tool="api:b")
    lowered = [Diagnostic.of("TC420", f"loss {n}", source="api", tool="api:a", provider="openai-chat") for n in range(4)]
    runs = [[pruned, *lowered[:2], pruned, other], [lowered[2], pruned, lowered[3], other, other], []]
    build, seen = SimpleNamespace(diagnostics=Diagnostics()), set()
    for found in runs:
        schemas._merge_diagnostics(build, found, seen)
    assert build.diagnostics.items == [pruned, *lowered[:2], other, lowered[2], lowered[3]]
