"""The first hour, as the README walks it: compile your own document with no project file, point it at a mock at
call time, set the credential `.env.example` names, and serve the output folder (`toolc serve --out DIR`) to the
official MCP client over stdio."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.support.cli import run_toolc
from tests.support.loopback import Recorder, recording_api
from tests.support.paths import FIXTURES
from tests.support.serve import serve_env

pytestmark = pytest.mark.servers
TOKEN = "bearer-first-hour"


@pytest.fixture
def compiled(tmp_path: Path) -> Path:
    shutil.copy(FIXTURES / "openapi" / "params.yaml", tmp_path / "shop.yaml")
    result = run_toolc("compile", tmp_path / "shop.yaml", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    return tmp_path


@pytest.fixture
def mock() -> Iterator[str]:
    with recording_api() as url:
        yield url


async def test_an_adhoc_compile_is_served_from_its_output_folder(compiled: Path, mock: str) -> None:
    example = (compiled / "out" / "python" / "toolc_router" / ".env.example").read_text()
    assert "TOOLC_BASE_URL_SHOP" in example and "TOOLC_SHOP_BEARER=" in example, "the variables to set are named"
    environ = {**serve_env(mock), "TOOLC_BASE_URL_SHOP": f"{mock}/v1", "TOOLC_SHOP_BEARER": TOKEN}
    server = StdioServerParameters(command=sys.executable, env=environ, cwd=str(compiled),
                                   args=["-m", "compiler", "serve", "--out", "out", "--project-id", "first-hour"])
    Recorder.requests = []
    async with Client(server, read_timeout_seconds=60) as client:
        listed = await client.list_tools()
        assert {"getPet", "listPets"} <= {tool.name for tool in listed.tools}
        pet = await client.call_tool("getPet", {"id": 5})
        assert not pet.is_error, pet.content
    (request,) = Recorder.requests
    assert request["path"] == "/v1/pets/5"  # the mock, not the document's https://eu.example.test
    assert request["headers"]["authorization"] == f"Bearer {TOKEN}"
    assert (compiled / "toolc_audit.sqlite3").is_file(), "the audit is kept where the command was started"


def test_serve_without_a_project_file_names_the_command_that_works(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_toolc("serve")
    assert result.exit_code == 2
    assert "toolc serve --out DIR" in result.output and "PATH..." in result.output
    missing = run_toolc("serve", "--out", tmp_path / "nothing")
    assert missing.exit_code == 1
    assert "error[TC681]" in missing.stderr and f"toolc compile PATH... --out {tmp_path / 'nothing'}" in missing.stderr
