"""Open one server's transport (stdio, Streamable HTTP, legacy HTTP+SSE) from its expanded `Connection`.

Each opener is an async context manager yielding the SDK's `(read, write)` streams, which `mcp.Client` accepts as a
`Transport`. A stdio server's stderr goes to a temporary file (`StderrTail`) so a failure can quote its last lines.
Its environment is the SDK's safe default (PATH, HOME, ...) plus the server's own `env`, nothing else of ours.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TextIO

import httpx2
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from compiler.config import ServerConfig
from compiler.sources.mcp_env import Connection

STDERR_TAIL_LINES = 12
STDERR_TAIL_CHARS = 1500


class StderrTail:
    """A stdio server's stderr, kept in a temporary file; `tail()` gives its last lines for a diagnostic."""

    def __init__(self) -> None:
        self.file: TextIO = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115

    def tail(self, redact: Callable[[str], str]) -> str:
        """The last lines, `redact`ed as a whole BEFORE they are split and cut (a cut must not halve a secret)."""
        try:
            self.file.flush()
            self.file.seek(0)
            text = redact(self.file.read())
        except (OSError, ValueError):
            return ""
        lines = [line.rstrip() for line in text.splitlines() if line.strip()]
        joined = " | ".join(lines[-STDERR_TAIL_LINES:])
        return joined if len(joined) <= STDERR_TAIL_CHARS else "…" + joined[-STDERR_TAIL_CHARS:]

    def close(self) -> None:
        self.file.close()


class ConfigProblem(ValueError):
    """The server entry cannot be connected to as written (no command, no URL)."""


def open_transport(server: ServerConfig, connection: Connection, stderr: StderrTail,
                   timeout: float) -> AbstractAsyncContextManager[Any]:
    if server.transport == "stdio":
        if not connection.command:
            raise ConfigProblem("a stdio server needs a `command`")
        params = StdioServerParameters(command=connection.command[0], args=list(connection.command[1:]),
                                       env=connection.env or None, cwd=connection.cwd)
        return stdio_client(params, errlog=stderr.file)
    if not connection.url:
        raise ConfigProblem(f"an {server.transport} server needs a `url`")
    if connection.command:
        raise ConfigProblem(f"an {server.transport} server takes a `url`, not a `command`")
    if server.transport == "sse":
        return sse_client(connection.url, headers=dict(connection.headers), timeout=timeout,
                          sse_read_timeout=max(timeout, 60.0))
    return _streamable_http(connection.url, connection.headers, timeout)


@asynccontextmanager
async def _streamable_http(url: str, headers: dict[str, str], timeout: float) -> AsyncIterator[Any]:
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(timeout, read=max(timeout, 60.0)))
    async with http, streamable_http_client(url, http_client=http) as streams:
        yield streams
