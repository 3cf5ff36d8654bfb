"""Risk that reads the operation (issue 21): a keyword in the operation raises its method's risk, and the project
file sets risk and read-only per tool glob for an OpenAPI source, reported by `toolc list` and `toolc explain` and
baked into the router and the served annotations."""

from __future__ import annotations

import json
from pathlib import Path

from compiler.codegen.router.serve import tool_annotations
from compiler.config import load_config
from compiler.infra.diagnostics import CompilerError
from compiler.ir import Annotations, RiskLevel
from tests.support.cli import run_toolc
from tests.support.openapi import FIXTURES, compile_file

MULTIFILE = FIXTURES / "multifile" / "openapi.yaml"


def test_a_get_that_revokes_is_critical_and_not_read_only() -> None:
    _, tools, _ = compile_file(MULTIFILE, source_id="shop")
    by_name = {tool.name: tool for tool in tools}
    revoke = by_name["auth_revoke"]
    assert revoke.binding.method == "GET"  # type: ignore[union-attr]
    assert revoke.risk == RiskLevel.CRITICAL
    assert revoke.side_effects == ("network.http", "remote.delete")
    assert tool_annotations(revoke) == {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True,
                                        "openWorldHint": True}
    plain = by_name["getPet"]  # nothing in its words: the method's evidence, and its IR as it was
    assert (plain.risk, plain.side_effects, plain.annotations) == (RiskLevel.LOW, ("network.http",), Annotations())
    assert tool_annotations(plain)["readOnlyHint"] is True


def _project(tmp_path: Path, settings: str) -> Path:
    project = tmp_path / "toolc.yaml"
    project.write_text(f"openapi:\n  - id: shop\n    path: {MULTIFILE}\n{settings}targets: [openai-chat]\n")
    return project


SETTINGS = """\
    risk:
      "search*": low
      "*revoke*": High
      "nothing*": high
    read_only:
      searchPets: true
      "*Pet": true
      getPet: false
"""


def test_the_project_file_sets_risk_and_read_only_per_glob_and_list_says_why(tmp_path: Path) -> None:
    result = run_toolc("list", "-c", _project(tmp_path, SETTINGS), "--json")
    assert result.exit_code == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)}

    search = rows["searchPets"]  # a POST that only reads: no longer denied by the high-risk gates
    assert (search["risk"], search["read_only"], search["side_effects"]) == ("low", True, ["network.http"])
    assert search["risk_reason"] == ("the project file sets risk low ('search*'; inferred high); "
                                     "the project file sets read_only true ('searchPets')")
    revoke = rows["auth_revoke"]  # the keyword's reason, then the project file's word over it
    assert (revoke["risk"], revoke["read_only"]) == ("high", False)
    assert revoke["risk_reason"] == ("'revoke' in its operationId raises GET from low to critical; "
                                     "the project file sets risk high ('*revoke*'; inferred critical)")
    get = rows["getPet"]  # two read_only globs match: `false` (the safe side) wins
    assert (get["read_only"], get["side_effects"]) == (False, ["network.http", "remote.write"])
    assert "('getPet')" in get["risk_reason"]
    assert "risk_reason" not in rows["listPets"]
    assert rows["deletePet"]["read_only"] is True  # what the project file says, even for a DELETE
    assert "TC325" in result.stderr and "'nothing*'" in result.stderr  # a glob that matches nothing

    table = run_toolc("list", "-c", _project(tmp_path, SETTINGS))
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["TOOL", "RISK", "READ-ONLY", "SIDE", "EFFECTS"]
    row = next(index for index, line in enumerate(lines) if line.startswith("openapi:shop:searchPets "))
    assert lines[row].split()[1:3] == ["low", "yes"]
    assert lines[row + 1].strip().startswith("↳ the project file sets risk low")

    explained = run_toolc("explain", "searchPets", "-c", _project(tmp_path, SETTINGS), "-p", "openai", "--json")
    assert json.loads(explained.stdout)["risk"] == {"level": "low", "read_only": True,
                                                    "side_effects": ["network.http"],
                                                    "reason": search["risk_reason"]}


def test_the_router_and_the_served_annotations_get_the_project_files_risk(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run_toolc("compile", "-c", _project(tmp_path, SETTINGS), "--out", out)
    assert result.exit_code == 0, result.stderr
    tables = json.loads((out / "python" / "toolc_router" / "_tables.json").read_text())["tools"]
    assert tables["openapi:shop:searchPets"]["risk"] == RiskLevel.LOW
    assert tables["openapi:shop:auth_revoke"]["risk"] == RiskLevel.HIGH
    assert tables["openapi:shop:createPet"]["risk"] == RiskLevel.HIGH
    served = {entry["id"]: entry["annotations"] for entry in json.loads(
        (out / "python" / "toolc_router" / "_serve.json").read_text())["tools"].values()}
    assert served["openapi:shop:searchPets"]["readOnlyHint"] is True
    assert served["openapi:shop:auth_revoke"]["readOnlyHint"] is False
    assert served["openapi:shop:getPet"]["readOnlyHint"] is False


def test_unknown_keys_and_levels_are_refused_with_their_place(tmp_path: Path) -> None:
    for settings, pointer, words in (
        ("    risks: {'*': low}\n", "/openapi/0/risks", "did you mean 'risk'?"),
        ("    risk: {'*': severe}\n", "/openapi/0/risk/*", "'low', 'medium', 'high' or 'critical'"),
        ("    read_only: {'*': maybe}\n", "/openapi/0/read_only/*", "boolean"),
        ("    risk: {'': low}\n", "/openapi/0/risk", "must not be empty"),
    ):
        try:
            load_config(_project(tmp_path, settings))
        except CompilerError as exc:
            assert (exc.diagnostic.code, exc.diagnostic.pointer) == ("TC110", pointer), exc.diagnostic.render()
            assert words in exc.diagnostic.message
        else:
            raise AssertionError(f"accepted: {settings}")
