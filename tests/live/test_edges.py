"""Live listing against servers that misbehave on purpose (tests/servers/edge_stdio.py, tests/servers/inprocess.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from compiler.config import ServerConfig
from compiler.infra.diagnostics import Diagnostics, Severity
from compiler.infra.serialize import canonical_json
from compiler.sources.mcp_live import fetch_listings, list_servers
from compiler.sources.recording import read_recording
from tests.servers.inprocess import paged_server, serve_http
from tests.support.paths import ROOT, SERVERS

pytestmark = pytest.mark.servers
EDGE = str(SERVERS / "edge_stdio.py")


def edge(mode: str, *, timeout_ms: int = 10_000, **extra: object) -> ServerConfig:
    return ServerConfig(id=mode, command=(sys.executable, EDGE, mode), timeout_ms=timeout_ms, **extra)  # type: ignore[arg-type]


def only(diagnostics: Diagnostics, source: str) -> list[str]:
    return [f"{d.severity.value}:{d.code}" for d in diagnostics if d.source == source]


def test_2500_tools_over_25_pages() -> None:
    with serve_http(paged_server(2500, 100)) as url:
        diagnostics = Diagnostics()
        (outcome,) = list_servers([ServerConfig(id="paged", transport="http", url=url)], diagnostics, root=ROOT)
    assert outcome.ok and not diagnostics.items
    assert (outcome.page_count, outcome.tool_count) == (25, 2500)
    pages = outcome.document["tools_list_pages"]  # type: ignore[index]
    names = [tool["name"] for page in pages for tool in page["tools"]]
    assert names == [f"tool_{i:04d}" for i in range(2500)]
    assert [page.get("nextCursor") for page in pages] == [str(100 * (i + 1)) for i in range(24)] + [None]


def test_a_repeating_cursor_ends_the_walk_and_page_cap_bounds_it() -> None:
    with serve_http(paged_server(100, 10, repeat_cursor_at=30)) as looping, serve_http(paged_server(100, 10)) as long:
        diagnostics = Diagnostics()
        loop, capped = list_servers([ServerConfig(id="loop", transport="http", url=looping),
                                     ServerConfig(id="capped", transport="http", url=long, max_pages=4)],
                                    diagnostics, root=ROOT)
    assert (loop.page_count, loop.tool_count) == (4, 40), "pages 0,10,20,30; page 30 points back at 30"
    assert only(diagnostics, "loop") == ["warning:TC508"]
    assert (capped.page_count, capped.tool_count) == (4, 40)
    assert only(diagnostics, "capped") == ["warning:TC509"]


def test_a_server_that_never_answers_fails_on_its_timeout() -> None:
    # TC503 naming the configured 1500 ms is the timeout path firing (how long it takes: bench_live.py --timeouts).
    diagnostics = Diagnostics()
    listings = fetch_listings([edge("hang", timeout_ms=1500)], diagnostics, root=ROOT)
    assert listings == {}
    (diagnostic,) = diagnostics.items
    assert (diagnostic.code, diagnostic.severity, diagnostic.source) == ("TC503", Severity.ERROR, "hang")
    assert "1500 ms" in diagnostic.message


def test_a_server_that_exits_at_start_is_quoted_from_its_stderr() -> None:
    diagnostics = Diagnostics()
    assert fetch_listings([edge("exit")], diagnostics, root=ROOT) == {}
    (diagnostic,) = diagnostics.items
    assert diagnostic.code == "TC504" and diagnostic.source == "exit"
    assert "stderr: edge: fatal: cannot open /nonexistent/config.toml" in diagnostic.message


def test_non_json_on_stdout() -> None:
    diagnostics = Diagnostics()
    listings = fetch_listings([edge("garbage"), edge("noisy")], diagnostics, root=ROOT)
    assert list(listings) == ["noisy"], "a stray banner is a warning; a server speaking only text fails"
    (garbage,) = [d for d in diagnostics if d.source == "garbage"]
    assert garbage.code == "TC507" and garbage.severity is Severity.ERROR
    assert "prints plain text instead" in garbage.message or "this serv" in garbage.message
    assert only(diagnostics, "noisy") == ["warning:TC507"]
    assert listings["noisy"]["tools_list_pages"][0]["tools"][0]["name"] == "echo"


def test_legacy_only_and_modern_only_servers() -> None:
    diagnostics = Diagnostics()
    listings = fetch_listings([edge("legacy"), edge("modern")], diagnostics, root=ROOT)
    assert not diagnostics.items
    legacy, modern = listings["legacy"]["initialize"], listings["modern"]["initialize"]
    assert legacy == {"capabilities": {"tools": {"listChanged": False}}, "protocolVersion": "2025-11-25",
                      "serverInfo": {"name": "edge-legacy", "version": "1.0.0"}}
    assert modern["protocolVersion"] == "2026-07-28"
    assert modern["serverInfo"] == {"name": "edge-modern", "version": "1.0.0"}
    assert modern["discover"]["supportedVersions"] == ["2026-07-28"]
    assert modern["instructions"] == "Modern only."
    for listing in listings.values():
        assert [t["name"] for t in listing["tools_list_pages"][0]["tools"]] == ["echo"]


def test_invalid_schemas_are_reported_and_the_other_tools_kept_with_unknown_fields() -> None:
    diagnostics = Diagnostics()
    listings = fetch_listings([edge("invalid")], diagnostics, root=ROOT)
    raw_tools = listings["invalid"]["tools_list_pages"][0]["tools"]
    assert len(raw_tools) == 5, "the recording keeps what the server said, bad tools included"
    echo = raw_tools[0]
    assert echo["execution"] == {"taskSupport": "optional"}
    assert echo["icons"] == [{"mimeType": "image/png", "src": "data:image/png;base64,AAAA"}]
    assert echo["_meta"] == {"com.example/owner": "edge"} and echo["x-vendor-extension"] == {"kept": True}
    _, tools = read_recording(listings["invalid"], source_id="invalid", location="invalid", diagnostics=diagnostics)
    assert [t.name for t in tools] == ["echo", "second_good"]
    assert sorted(d.pointer for d in diagnostics if d.code == "TC351") == [
        f"/tools_list_pages/0/tools/{i}" for i in (1, 2, 3)]
    assert set(tools[0].extra) == {"execution", "icons", "_meta", "x-vendor-extension"}


def test_one_failure_does_not_stop_the_others_unless_strict() -> None:
    diagnostics = Diagnostics()
    listings = fetch_listings([edge("exit"), edge("legacy")], diagnostics, root=ROOT)
    assert list(listings) == ["legacy"] and only(diagnostics, "exit") == ["error:TC504"]

    # With --strict the hanging server is stopped (TC514), not waited for until its 30 s timeout (TC503).
    strict = Diagnostics()
    listings = fetch_listings([edge("exit"), edge("hang", timeout_ms=30_000)], strict, root=ROOT, strict=True)
    assert listings == {}
    assert only(strict, "exit") == ["error:TC504"] and only(strict, "hang") == ["error:TC514"]


def test_recordings_never_contain_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token = "canary-7f3a9c1d2e"
    monkeypatch.setenv("TOOLC_TEST_CANARY", token)
    echoing = edge("secret", env={"CANARY_TOKEN": "${TOOLC_TEST_CANARY}"})
    failing = ServerConfig(id="secret-fail", command=(sys.executable, EDGE, "secret"), secrets=("CANARY_TOKEN",),
                           env={"CANARY_TOKEN": "literal-secret-0042", "CANARY_FAIL": "1"})
    with serve_http(paged_server(3, 3, echo_header="x-api-key")) as url:
        header = ServerConfig(id="http", transport="http", url=url, headers={"X-Api-Key": "hdr-secret-9931"})
        diagnostics = Diagnostics()
        listings = fetch_listings([echoing, failing, header], diagnostics, root=tmp_path)
    written = b"".join(canonical_json(doc) for doc in listings.values())
    shown = "\n".join(d.render() for d in diagnostics).encode()
    for secret in (token, "literal-secret-0042", "hdr-secret-9931"):
        assert secret.encode() not in written and secret.encode() not in shown
    assert "Configured with token ${CANARY_TOKEN}" not in json.dumps(listings["secret"])
    assert "Configured with token ${TOOLC_TEST_CANARY}." in json.dumps(listings["secret"])
    assert "Seen header: ${X-Api-Key}." in json.dumps(listings["http"]), "the server did receive the header"
    assert "using token ${CANARY_TOKEN}" in shown.decode(), "the stderr tail is quoted, redacted"


def test_listings_are_deterministic() -> None:
    first = fetch_listings([edge("modern"), edge("legacy")], Diagnostics(), root=ROOT)
    second = fetch_listings([edge("legacy"), edge("modern")], Diagnostics(), root=ROOT)
    assert canonical_json(first) == canonical_json(second)
    assert list(first["modern"]) == sorted(first["modern"]), "keys sorted in memory too"


def test_request_timeout_bad_config_and_missing_variables_are_diagnostics(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLC_SURELY_UNSET", raising=False)
    diagnostics = Diagnostics()
    listings = fetch_listings([
        edge("mute-list", timeout_ms=1500),
        ServerConfig(id="no-url", transport="http"),
        ServerConfig(id="no-command"),
        ServerConfig(id="unset", command=("${TOOLC_SURELY_UNSET}",)),
    ], diagnostics, root=ROOT)
    assert listings == {}
    assert {d.source: d.code for d in diagnostics} == {
        "mute-list": "TC505", "no-url": "TC515", "no-command": "TC515", "unset": "TC502"}
    assert "tools/list page 1: no answer within 1500 ms" in diagnostics.items[0].message
    assert "TOOLC_SURELY_UNSET is not set" in diagnostics.items[3].message
