"""`toolc record`, `toolc list`, `toolc health` end to end, against the fast edge servers."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from compiler.cli import main
from tests.servers.inprocess import paged_server, serve_http
from tests.support.paths import FIXTURES, SERVERS

pytestmark = pytest.mark.servers
EDGE = str(SERVERS / "edge_stdio.py")


def edge(mode: str, **extra: object) -> dict[str, object]:
    return {"id": mode, "command": [sys.executable, EDGE, mode], "recording": f"rec/{mode}.json", **extra}


def write_project(tmp_path: Path, *servers: dict[str, object]) -> Path:
    path = tmp_path / "toolc.yaml"
    path.write_text(yaml.safe_dump({"mcp_servers": list(servers)}), encoding="utf-8")
    return path


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_record_project_servers_and_report_the_failures(tmp_path: Path) -> None:
    config = write_project(tmp_path, edge("legacy"), edge("modern"), edge("exit"))
    code, _, err = run("record", "-c", str(config))
    assert code == 1, "one server failed: the others are written, the exit code says so"
    assert "exit: error[TC504]" in err and "1 of 3 server(s) not recorded" in err
    assert sorted(p.name for p in (tmp_path / "rec").iterdir()) == ["legacy.json", "modern.json"]
    text = (tmp_path / "rec" / "legacy.json").read_text(encoding="utf-8")
    assert json.loads(text)["server"] == "legacy" and text.endswith("}\n")

    code, _, err = run("record", "legacy", "-c", str(config))
    assert code == 0 and "recorded legacy: 1 tools" in err
    code, _, err = run("record", "nope", "-c", str(config))
    assert code == 2 and "no MCP server nope" in err


def test_record_strict_writes_nothing_when_one_fails(tmp_path: Path) -> None:
    config = write_project(tmp_path, edge("legacy"), edge("exit"))
    code, _, err = run("record", "--strict", "-c", str(config))
    assert code == 1 and "no recording written" in err
    assert not (tmp_path / "rec").exists()


def test_record_adhoc_stdio_and_url(tmp_path: Path) -> None:
    out = tmp_path / "adhoc.json"
    command = f"{shlex.quote(sys.executable)} {shlex.quote(EDGE)} invalid"
    code, _, err = run("record", "--stdio", command, "--id", "edge", "--out", str(out))
    assert code == 0, err
    assert "warning[TC351]" in err, "invalid tools are reported while recording"
    assert len(json.loads(out.read_text())["tools_list_pages"][0]["tools"]) == 5
    with serve_http(paged_server(30, 10)) as url:
        code, _, err = run("record", "--url", url, "--id", "paged", "--out", str(tmp_path / "paged.json"))
    assert code == 0, err
    assert len(json.loads((tmp_path / "paged.json").read_text())["tools_list_pages"]) == 3
    code, _, err = run("record", "--url", "http://127.0.0.1:9/mcp", "--id", "x", "--out", str(tmp_path / "x.json"))
    assert code == 1 and "x: error[TC511]" in err


def test_list_prints_risk_and_side_effects_from_recordings_or_live(tmp_path: Path) -> None:
    config = write_project(tmp_path, edge("legacy"))
    code, out, err = run("list", "-c", str(config), "--live")
    assert code == 0, err
    assert out.splitlines()[0].split() == ["TOOL", "RISK", "READ-ONLY", "SIDE", "EFFECTS"]
    assert out.splitlines()[1].split()[:2] == ["mcp:legacy:echo", "low"]
    assert run("record", "-c", str(config))[0] == 0
    code, out, _ = run("list", "-c", str(config), "--json")
    rows = json.loads(out)
    assert [(r["id"], r["risk"]) for r in rows] == [("mcp:legacy:echo", "low")]
    assert isinstance(rows[0]["side_effects"], list)


def test_health_reports_each_server_and_exits_accordingly(tmp_path: Path) -> None:
    config = write_project(tmp_path, edge("legacy"), edge("invalid"), edge("noisy"), edge("exit"))
    code, out, _ = run("health", "-c", str(config), "--json")
    report = json.loads(out)
    assert {k: v["status"] for k, v in report.items()} == {
        "legacy": "healthy", "invalid": "degraded", "noisy": "degraded", "exit": "unhealthy"}
    assert code == 1, "an unhealthy server fails the check"
    assert any("TC504" in reason for reason in report["exit"]["reasons"])
    assert any("3 tool(s) cannot be compiled" in reason for reason in report["invalid"]["reasons"])
    code, out, _ = run("health", "legacy", "noisy", "-c", str(config))
    assert code == 0 and "legacy  healthy" in out
    assert run("health", "legacy", "noisy", "-c", str(config), "--strict")[0] == 1


@pytest.mark.parametrize("name, expected", [
    ("claude_desktop_config.json", ["mcp:edge-legacy:echo", "mcp:edge-modern:echo"]),
    ("vscode_mcp.json", ["mcp:edge-legacy:echo"]),
])
def test_point_toolc_at_a_client_config_and_it_lists_those_servers(monkeypatch: pytest.MonkeyPatch, name: str,
                                                                   expected: list[str]) -> None:
    monkeypatch.setenv("TOOLC_PYTHON", sys.executable)
    monkeypatch.setenv("TOOLC_EDGE_TOKEN", "edge-token-5150")
    config = FIXTURES / "live" / name
    code, out, err = run("list", "--live", "--json", "-c", str(config))
    assert code == 0, err
    assert [row["id"] for row in json.loads(out)] == expected, "disabled servers are left out"
    code, out, _ = run("health", "-c", str(config), "--json")
    assert code == 0 and {v["status"] for v in json.loads(out).values()} == {"healthy"}
