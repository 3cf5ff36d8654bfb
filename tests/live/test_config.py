"""Server configuration for live sources: the shapes accepted, `${ENV}` expansion, secret redaction (no servers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compiler.config import ServerConfig, load_config
from compiler.infra.diagnostics import CompilerError
from compiler.sources.mcp_env import MissingVariable, connection_for, display_url, redact


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_claude_desktop_mcpservers_json_lists_its_servers(tmp_path: Path) -> None:
    path = write(tmp_path, "claude_desktop_config.json", json.dumps({"mcpServers": {
        "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
                       "env": {"API_TOKEN": "${MY_TOKEN}"}},
        "remote": {"type": "http", "url": "https://example.test/mcp", "headers": {"Authorization": "Bearer ${T}"}},
        "legacy-sse": {"type": "sse", "url": "https://example.test/sse"},
        "cursor-style": {"url": "https://example.test/mcp"},
        "off": {"command": "uvx mcp-server-time", "disabled": True, "autoApprove": ["get_current_time"]},
    }}))
    servers = {s.id: s for s in load_config(path).mcp_servers}
    assert list(servers) == ["filesystem", "remote", "legacy-sse", "cursor-style", "off"]
    fs = servers["filesystem"]
    assert (fs.transport, fs.command, fs.args) == ("stdio", ("npx",), ("-y", "@modelcontextprotocol/server-filesystem",
                                                                         "/tmp"))
    assert fs.env == {"API_TOKEN": "${MY_TOKEN}"}, "expanded only at connect time, never at load"
    assert (servers["remote"].transport, servers["remote"].headers) == ("http", {"Authorization": "Bearer ${T}"})
    assert servers["legacy-sse"].transport == "sse"
    assert servers["cursor-style"].transport == "http"
    assert servers["off"].enabled is False
    assert servers["off"].command == ("uvx", "mcp-server-time")
    assert fs.recording_path == "recordings/filesystem.json"


def test_vscode_servers_variant(tmp_path: Path) -> None:
    path = write(tmp_path, "mcp.json", json.dumps({
        "inputs": [{"type": "promptString", "id": "key", "password": True}],
        "servers": {"time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"]},
                    "gh": {"type": "http", "url": "https://api.example.test/mcp/"}}}))
    servers = load_config(path).mcp_servers
    assert [(s.id, s.transport) for s in servers] == [("time", "stdio"), ("gh", "http")]


def test_seed_mcp_servers_yaml_and_mapping_form(tmp_path: Path) -> None:
    seed = write(tmp_path, "mcp_servers.yaml", """
mcp_servers:
  - id: echo-math
    enabled: true
    transport: stdio
    command: ["node", "servers/echo-math/index.js"]
    allow_tools: []
    deny_side_effect_tags: []
    timeout_ms: 5000
    env:
      NODE_ENV: "production"
""")
    (server,) = load_config(seed).mcp_servers
    assert (server.id, server.command, server.timeout_ms, server.env) == (
        "echo-math", ("node", "servers/echo-math/index.js"), 5000, {"NODE_ENV": "production"})
    mapping = write(tmp_path, "toolc.yaml", "mcp_servers:\n  time:\n    command: [python, -m, mcp_server_time]\n")
    assert [s.id for s in load_config(mapping).mcp_servers] == ["time"]


@pytest.mark.parametrize("document, fragment", [
    ({"mcpServers": {"x": {"command": "a", "colour": "red"}}}, "mcpServers/x: unknown key(s) colour"),
    ({"mcpServers": {"x": {"url": "http://h", "type": "websocket"}}}, "unknown transport type"),
    ({"mcpServers": {"x": "npx server"}}, "a server must be an object"),
])
def test_foreign_shapes_refuse_what_they_cannot_read(tmp_path: Path, document: dict[str, object],
                                                     fragment: str) -> None:
    path = write(tmp_path, "bad.json", json.dumps(document))
    with pytest.raises(CompilerError) as caught:
        load_config(path)
    assert caught.value.diagnostic.code == "TC110"
    assert fragment in caught.value.diagnostic.message


def test_env_references_expand_at_connect_time_and_become_secrets(tmp_path: Path) -> None:
    server = ServerConfig(id="s", command=("run", "--key=${env:API_KEY}"), env={"SESSION_TOKEN": "abcd1234",
                          "PLAIN": "${PLAIN_VALUE}", "LEVEL": "info"},
                          headers={"Authorization": "Bearer t0k3n-xyz", "X-Trace": "${TRACE}"}, cwd="sub",
                          url="https://user:hunter22@h.test/mcp?api_key=k-123456&page=2", transport="stdio")
    environ = {"API_KEY": "key-from-env", "PLAIN_VALUE": "visible-ish", "TRACE": "tr"}
    connection = connection_for(server, root=str(tmp_path), environ=environ)
    assert connection.command == ("run", "--key=key-from-env")
    assert connection.env["PLAIN"] == "visible-ish"
    assert connection.cwd == str((tmp_path / "sub").resolve())
    secrets = connection.secrets
    assert secrets["key-from-env"] == "${API_KEY}"
    assert secrets["abcd1234"] == "${SESSION_TOKEN}"
    assert secrets["Bearer t0k3n-xyz"] == "${Authorization}" and secrets["t0k3n-xyz"] == "${Authorization}"
    assert "hunter22" in secrets and "k-123456" in secrets
    assert "info" not in secrets and "tr" not in secrets, "short or non-secret values stay"
    with pytest.raises(MissingVariable, match="API_KEY"):
        connection_for(server, root=str(tmp_path), environ={})


def test_redact_replaces_secret_values_everywhere() -> None:
    secrets = {"s3cr3t-value": "${TOKEN}", "s3cr3t": "${SHORT}"}
    data = {"a": "prefix s3cr3t-value suffix", "list": ["s3cr3t", 3, None], "s3cr3t-value": True}
    assert redact(data, secrets) == {"a": "prefix ${TOKEN} suffix", "list": ["${SHORT}", 3, None], "${TOKEN}": True}
    assert display_url("https://u:p@h.test:8443/mcp?token=abc&x=1") == "https://h.test:8443/mcp?token=***&x=1"
