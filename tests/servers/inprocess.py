"""In-process MCP servers built on the SDK's low-level `Server`, served over Streamable HTTP on 127.0.0.1.

`paged_server(total, page_size)` lists `total` tools over pages of `page_size`; `repeat_cursor_at` makes one page
hand back a cursor the client already followed (a buggy paginator). `echo_header` puts the value of one request
header into a tool description: the secret canary for HTTP.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import mcp.types as types
import uvicorn
from mcp.server.lowlevel.server import Server

SEEN_HEADERS: dict[str, str] = {}


def _tool(index: int, note: str = "") -> types.Tool:
    return types.Tool(
        name=f"tool_{index:04d}",
        description=f"Tool number {index}.{note}",
        input_schema={"type": "object", "properties": {"n": {"type": "integer", "description": "a number"}},
                      "required": ["n"]},
    )


def paged_server(total: int, page_size: int, *, repeat_cursor_at: int | None = None,
                 echo_header: str | None = None) -> Server[Any]:
    async def on_list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        start = int(params.cursor) if params is not None and params.cursor else 0
        note = f" Seen header: {SEEN_HEADERS.get(echo_header, '')}." if echo_header else ""
        tools = [_tool(i, note) for i in range(start, min(start + page_size, total))]
        following = start + page_size
        next_cursor = str(following) if following < total else None
        if repeat_cursor_at is not None and start >= repeat_cursor_at:
            next_cursor = str(repeat_cursor_at)  # points back at a page already listed
        return types.ListToolsResult(tools=tools, next_cursor=next_cursor)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

    return Server("paged", version="1.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _HeaderTap:
    """ASGI wrapper remembering the last value of each request header (for the echo canary)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            for name, value in scope.get("headers", []):
                SEEN_HEADERS[name.decode("latin-1").lower()] = value.decode("latin-1")
        await self.app(scope, receive, send)


@contextmanager
def serve_http(server: Server[Any]) -> Iterator[str]:
    """Serve `server` over Streamable HTTP on 127.0.0.1 in a background thread; yield its URL."""
    port = free_port()
    app = _HeaderTap(server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1"))
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="on")
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not uv.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the in-process HTTP server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        uv.should_exit = True
        thread.join(timeout=10)
