"""A hand-written stdio MCP server that misbehaves on purpose: `python edge_stdio.py MODE`.

It speaks raw JSON-RPC lines (no SDK), so it can say what an SDK server never would:

    legacy    2025-11-25 only: `server/discover` is an unknown method, `initialize` works
    modern    2026-07-28 only: `server/discover` works, `initialize` is refused with -32022
    invalid   legacy, listing good tools next to tools with invalid schemas (and unknown fields to keep)
    noisy     legacy, but prints a banner on stdout before speaking JSON-RPC
    garbage   answers its first request with a line that is not JSON, then exits
    hang      reads every request and never answers (exits when stdin closes)
    mute-list legacy handshake, then never answers `tools/list`
    exit      prints a fatal error on stderr and exits at once
    secret    legacy, echoing $CANARY_TOKEN into a tool description and on stderr (exits if $CANARY_FAIL)
    bad-utf8  legacy handshake, then answers `tools/list` with bytes that are not UTF-8
    bad-json  legacy handshake, then answers `tools/list` with a truncated JSON-RPC line
    big-int   legacy, with a tool whose schema holds an integer beyond 64 bits
    deep      legacy, with a tool whose schema is nested 300 levels deep
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

MODE = sys.argv[1] if len(sys.argv) > 1 else "legacy"
LEGACY, MODERN = "2025-11-25", "2026-07-28"
SERVER_INFO = {"name": f"edge-{MODE}", "version": "1.0.0"}
CAPABILITIES = {"tools": {"listChanged": False}}


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def tools() -> list[dict[str, Any]]:
    good = {"name": "echo", "description": "Echo the text back.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            "annotations": {"readOnlyHint": True},
            "execution": {"taskSupport": "optional"},
            "icons": [{"src": "data:image/png;base64,AAAA", "mimeType": "image/png"}],
            "_meta": {"com.example/owner": "edge"}, "x-vendor-extension": {"kept": True}}
    if MODE == "invalid":
        return [good,
                {"name": "array_root", "inputSchema": {"type": "array", "items": {"type": "string"}}},
                {"description": "no name at all", "inputSchema": {"type": "object"}},
                {"name": "no_schema", "description": "inputSchema missing"},
                {"name": "second_good", "inputSchema": {"type": "object", "properties": {}}}]
    if MODE == "big-int":
        return [good, {"name": "huge", "inputSchema": {"type": "object", "properties": {
                    "n": {"type": "integer", "maximum": 10**30}}}}]
    if MODE == "deep":
        deep: dict[str, Any] = {"type": "string"}
        for _ in range(150):
            deep = {"type": "array", "items": deep}
        return [good, {"name": "deep", "inputSchema": {"type": "object", "properties": {"d": deep}}}]
    if MODE == "secret":
        token = os.environ.get("CANARY_TOKEN", "")
        good = {**good, "description": f"Echo. Configured with token {token}."}
    return [good]


def answer(request: dict[str, Any]) -> dict[str, Any] | None:
    method, ident = request.get("method"), request.get("id")
    if ident is None:
        return None  # a notification
    if method == "server/discover":
        if MODE == "modern":
            return {"jsonrpc": "2.0", "id": ident, "result": {
                "supportedVersions": [MODERN], "capabilities": CAPABILITIES, "resultType": "complete",
                "ttlMs": 0, "cacheScope": "public", "instructions": "Modern only.",
                "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO}}}
        return {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "Method not found"}}
    if method == "initialize":
        if MODE == "modern":
            return {"jsonrpc": "2.0", "id": ident, "error": {
                "code": -32022, "message": "Unsupported protocol version",
                "data": {"supported": [MODERN], "requested": request.get("params", {}).get("protocolVersion")}}}
        return {"jsonrpc": "2.0", "id": ident, "result": {
            "protocolVersion": LEGACY, "capabilities": CAPABILITIES, "serverInfo": SERVER_INFO}}
    if method == "tools/list":
        if MODE == "mute-list":
            return None  # handshakes, then never answers tools/list
        result: dict[str, Any] = {"tools": tools()}
        if MODE == "modern":
            result.update(resultType="complete", ttlMs=0, cacheScope="public")
        return {"jsonrpc": "2.0", "id": ident, "result": result}
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"Method not found: {method}"}}


def main() -> None:
    if MODE == "exit":
        sys.stderr.write("edge: fatal: cannot open /nonexistent/config.toml\n")
        sys.exit(2)
    if MODE == "noisy":
        print("Edge server v1.0 starting... (this banner does not belong on stdout)", flush=True)
    if MODE == "secret":
        sys.stderr.write(f"edge: using token {os.environ.get('CANARY_TOKEN', '')}\n")
        sys.stderr.flush()
        if os.environ.get("CANARY_FAIL"):
            sys.exit(1)
    for line in sys.stdin:
        if not line.strip() or MODE == "hang":
            continue
        if MODE == "garbage":
            sys.stdout.write("Traceback? no: this server prints plain text instead of JSON-RPC\n")
            sys.stdout.flush()
            sys.exit(1)
        request = json.loads(line)
        if request.get("method") == "tools/list" and MODE in ("bad-utf8", "bad-json"):
            text = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"tools": tools()}})
            raw = text.replace("Echo the text", "Echo \udcff").encode("utf-8", "surrogateescape") \
                if MODE == "bad-utf8" else text[: len(text) // 2].encode()
            sys.stdout.buffer.write(raw + b"\n")
            sys.stdout.buffer.flush()
            continue
        reply = answer(request)
        if reply is not None:
            send(reply)


if __name__ == "__main__":
    main()
