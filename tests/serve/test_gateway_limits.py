"""`gateway:` in a project file, end to end: `toolc compile` bakes the rate limit and the result budget, `toolc serve
--transport http` enforces them. The flat endpoint answers a rate-limited call with 429 and the refusal's text
(audited with its gate), and a result over its budget arrives cut, with the marker."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
import yaml

from tests.support.cli import run_toolc
from tests.support.loopback import QuietHandler, loopback_http
from tests.support.paths import FIXTURES
from tests.support.serve import audit_rows, serve_env, serving_http

TOKEN = "t0ken-for-the-limited-project"
PROJECT = {
    "name": "limited project",
    "output": "out",
    "openapi": [{"id": "params", "path": str(FIXTURES / "openapi" / "params.yaml"), "base_url": "${PARAMS_API_URL}/v1"}],
    "gateway": {
        "rate_limits": {"rules": [{"tools": "getPet", "calls": 2, "per": "hour"}]},
        "result_budget": {"rules": [{"tools": "listPets", "bytes": 1024}]},
    },
}


class Pets(QuietHandler):
    """`GET /v1/pets`: 100 pets (about 6 KB of JSON); any other path: one pet."""

    def do_GET(self) -> None:
        if self.path.startswith("/v1/pets?") or self.path == "/v1/pets":
            self.send_json(200, json.dumps([{"id": i, "name": f"pet number {i}", "tag": "dog"} for i in range(100)]).encode())
        else:
            self.send_json(200, b'{"id": 7, "name": "Rex"}')


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    project = tmp_path_factory.mktemp("limited") / "toolc.yaml"
    project.write_text(yaml.safe_dump(PROJECT, sort_keys=False))
    compiled = run_toolc("compile", "-c", project)
    assert compiled.exit_code == 0, compiled.stderr
    with loopback_http(Pets) as api, serving_http(project, serve_env(api, TOOLC_SERVE_TOKEN=TOKEN)) as (url, _):
        yield url, project


def call(url: str, name: str, arguments: dict[str, object]) -> httpx2.Response:
    return httpx2.post(f"{url}/tools/{name}/call", content=json.dumps(arguments), timeout=60,
                       headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})


def test_a_rate_limited_call_is_429_with_when_to_retry_and_audited(served: tuple[str, Path]) -> None:
    url, project = served
    answers = [call(url, "getPet", {"id": 7}) for _ in range(3)]
    assert [answer.status_code for answer in answers] == [200, 200, 429]
    text = answers[2].json()["content"][0]["text"]
    assert text.startswith("denied by rate_limit: rate limit of 2 per hour for tools 'getPet' (caller "), text
    assert "reached; retry in " in text
    gates = [payload.get("gate") for _, kind, tool, payload in audit_rows(project)
             if kind == "policy_violation" and tool == "openapi:params:getPet"]
    assert gates == ["rate_limit"]


def test_a_result_over_its_budget_arrives_cut_with_the_marker(served: tuple[str, Path]) -> None:
    url, _ = served
    answer = call(url, "listPets", {"limit": 100})
    assert answer.status_code == 200
    texts = [block["text"] for block in answer.json()["content"]]
    assert sum(len(text.encode()) for text in texts) <= 1024
    assert texts[-1].startswith("[cut by toolc: this result was "), texts
    assert "over the 1,024-byte budget for the model; left out: " in texts[-1]
    assert "To see the rest, call again with limit set to ask for less or the next part.]" in texts[-1]
    kept = json.loads(texts[0])
    assert 5 < len(kept) < 100 and kept == [{"id": i, "name": f"pet number {i}", "tag": "dog"} for i in range(len(kept))]
