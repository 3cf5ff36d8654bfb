"""Real MCP servers over stdio, Streamable HTTP and SSE: `toolc record`, then compiling the recording, gives the
same catalog as compiling live. Nobody here wrote these servers (PyPI: mcp-server-time/-git/-fetch; npm:
@modelcontextprotocol/server-everything, installed with `npm ci --prefix tests/servers`)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from compiler.cli import main
from compiler.config import load_config
from compiler.infra.serialize import catalog_to_json
from compiler.pipeline import compile_project
from tests.servers.real import everything_http, everything_stdio, python_server

pytestmark = pytest.mark.servers


@contextmanager
def git_repository(path: Path) -> Iterator[Path]:
    path.mkdir()
    for command in (["git", "init", "-q"], ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                                              "--allow-empty", "-m", "init"]):
        subprocess.run(command, cwd=path, check=True, capture_output=True)
    yield path


def project(tmp_path: Path, entry: dict[str, Any]) -> Path:
    config = tmp_path / "toolc.yaml"
    config.write_text(yaml.safe_dump({"mcp_servers": [{**entry, "recording": "recordings/server.json",
                                                        "timeout_ms": 60_000}]}), encoding="utf-8")
    return config


def record_then_compare(config_path: Path) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["record", "-c", str(config_path)])
    assert result.exit_code == 0, result.output
    recording = json.loads((config_path.parent / "recordings" / "server.json").read_text(encoding="utf-8"))
    assert set(recording) == {"server", "initialize", "tools_list_pages"}
    config = load_config(config_path)
    recorded = compile_project(config, out_dir=config_path.parent / "out")
    live = compile_project(config, live=True, out_dir=config_path.parent / "out")
    assert not recorded.diagnostics.has_errors, [d.render() for d in recorded.diagnostics]
    assert catalog_to_json(recorded.catalog) == catalog_to_json(live.catalog)
    assert recorded.catalog.tools, "the server listed tools"
    return recording


@pytest.mark.parametrize("name, command, expected_tool", [
    ("time", python_server("mcp_server_time", "--local-timezone", "UTC"), "get_current_time"),
    ("fetch", python_server("mcp_server_fetch"), "fetch"),
    ("git", None, "git_status"),
])
def test_pypi_servers_over_stdio(tmp_path: Path, name: str, command: tuple[str, ...] | None,
                                 expected_tool: str) -> None:
    context = git_repository(tmp_path / "repo") if command is None else nullcontext(None)
    with context as repo:
        argv = command or python_server("mcp_server_git", "--repository", str(repo))
        recording = record_then_compare(project(tmp_path, {"id": name, "command": list(argv)}))
    names = [tool["name"] for page in recording["tools_list_pages"] for tool in page["tools"]]
    assert expected_tool in names


def test_server_everything_over_stdio(tmp_path: Path) -> None:
    recording = record_then_compare(project(tmp_path, {"id": "everything", "command": list(everything_stdio())}))
    assert recording["initialize"]["serverInfo"]["name"] == "mcp-servers/everything"
    assert any(tool["name"] == "echo" for tool in recording["tools_list_pages"][0]["tools"])


@pytest.mark.parametrize("mode, transport", [("streamableHttp", "http"), ("sse", "sse")])
def test_server_everything_over_http_and_sse(tmp_path: Path, mode: str, transport: str) -> None:
    with everything_http(mode) as url:
        recording = record_then_compare(project(tmp_path, {"id": "everything", "transport": transport, "url": url}))
    assert recording["initialize"]["protocolVersion"] == "2025-11-25"
    assert any(tool["name"] == "echo" for tool in recording["tools_list_pages"][0]["tools"])
