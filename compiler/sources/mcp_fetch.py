"""Ask one live MCP server for its tools: connect, negotiate, page through `tools/list`, keep every byte it said.

The official SDK's `mcp.Client` does the connecting in `auto` mode (2026-07-28 `server/discover`, falling back to the
2025-11-25 `initialize` handshake). The listing itself is read as raw JSON-RPC results, not through the SDK's `Tool`
model: that model drops unknown fields (`execution`, `icons`, vendor keys) and refuses a whole page over one bad
tool. Raw pages keep everything; `sources.recording` decides what compiles, the same way for live and recorded.

Bounds: connecting (spawn + handshake) and each request get `timeout_ms` each; at most `max_pages` pages; a cursor
seen before stops the walk. Every failure becomes a diagnostic (TC5xx) naming the server, with its stderr tail.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
from mcp import Client, MCPError
from mcp.types import Implementation
from pydantic import ValidationError

from compiler.config import ServerConfig
from compiler.infra.diagnostics import Diagnostics
from compiler.sources.mcp_env import Connection, MissingVariable, connection_for, display_url
from compiler.sources.mcp_transport import ConfigProblem, StderrTail, open_transport

CANNOT_START = "TC501"
MISSING_VARIABLE = "TC502"
CONNECT_TIMEOUT = "TC503"
CONNECTION_CLOSED = "TC504"
REQUEST_TIMEOUT = "TC505"
SERVER_ERROR = "TC506"
NOT_JSON_RPC = "TC507"
REPEATED_CURSOR = "TC508"
PAGE_CAP = "TC509"
MALFORMED_RESULT = "TC510"
UNREACHABLE = "TC511"
INCOMPATIBLE = "TC512"
NO_TOOLS_CAPABILITY = "TC513"
BAD_SERVER_CONFIG = "TC515"
NOT_UTF8 = "TC516"
UNEXPECTED = "TC530"
NOISE_CHARS = 300

_SDK_CONNECTION_CLOSED = -32000
_SDK_REQUEST_TIMEOUT = -32001
CLIENT_INFO = Implementation(name="toolc", version="0.1.0")


@dataclass
class Outcome:
    """What listing one server gave: the recording document (None on failure), its diagnostics, how long it took."""

    server: ServerConfig
    document: dict[str, Any] | None = None
    diagnostics: Diagnostics = field(default_factory=Diagnostics)
    seconds: float = 0.0
    tool_count: int = 0
    page_count: int = 0

    @property
    def ok(self) -> bool:
        return self.document is not None and not self.diagnostics.has_errors


class _Failed(Exception):
    """Internal: stop this server; the diagnostic has been added."""


@dataclass
class _Conversation:
    server: ServerConfig
    connection: Connection
    outcome: Outcome
    stderr: StderrTail
    noise: list[str] = field(default_factory=list)
    phase: str = "connecting"

    @property
    def timeout(self) -> float:
        return self.server.timeout_ms / 1000

    def where(self) -> str:
        return self.server.id

    def context(self) -> str:
        """The stderr tail and any non-JSON stdout, redacted, as a suffix for an error message."""
        parts = []
        if self.noise:
            parts.append(f"non-JSON on stdout: {self.noise_line()}")
        tail = self.stderr.tail(self.connection.redact)
        if tail:
            parts.append(f"stderr: {tail}")
        return "; " + "; ".join(parts) if parts else ""

    def noise_line(self) -> str:
        """The first non-JSON stdout line, redacted, then cut."""
        line: str = self.connection.redact(self.noise[0])
        return line if len(line) <= NOISE_CHARS else line[:NOISE_CHARS] + "…"

    def fail(self, code: str, message: str) -> _Failed:
        if self.noise and code in (CONNECTION_CLOSED, CONNECT_TIMEOUT, REQUEST_TIMEOUT):
            code, message = NOT_JSON_RPC, f"the server wrote non-JSON to stdout, then: {message}"
        self.outcome.diagnostics.error(code, self.connection.redact(message) + self.context(), source=self.where())
        return _Failed()

    def warn(self, code: str, message: str) -> None:
        self.outcome.diagnostics.warning(code, self.connection.redact(message), source=self.where())

    async def on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            text = str(message)
            value = text.partition("input_value=")[2].partition(", input_type")[0]
            self.noise.append(value or text.splitlines()[0] if text else type(message).__name__)


async def fetch_server(server: ServerConfig, *, root: str) -> Outcome:
    """List one server. Never raises (short of cancellation): problems land in `Outcome.diagnostics`."""
    outcome = Outcome(server=server)
    started = time.monotonic()
    try:
        connection = connection_for(server, root=root)
    except MissingVariable as exc:
        outcome.diagnostics.error(MISSING_VARIABLE, f"cannot connect: {exc}", source=server.id)
        return outcome
    stderr = StderrTail()
    talk = _Conversation(server, connection, outcome, stderr)
    try:
        await _converse(talk)
    except _Failed:
        outcome.document = None
    except Exception as exc:  # whatever a server or transport does becomes this server's diagnostic
        undecodable = _find(exc, UnicodeDecodeError)
        if undecodable is not None:
            _not_utf8(talk, undecodable)
        else:
            leaf = _leaf(exc)
            if not isinstance(leaf, _Failed):  # a _Failed that crossed the SDK's task groups is already reported
                _classify(talk, leaf)
        outcome.document = None
    finally:
        stderr.close()
        outcome.seconds = time.monotonic() - started
    if outcome.document is not None and talk.noise:
        talk.warn(NOT_JSON_RPC, f"the server wrote {len(talk.noise)} non-JSON line(s) to stdout "
                                f"(only MCP messages belong there): {talk.noise_line()}")
    return outcome


async def _converse(talk: _Conversation) -> None:
    server = talk.server
    try:
        transport = open_transport(server, talk.connection, talk.stderr, talk.timeout)
    except ConfigProblem as exc:
        raise talk.fail(BAD_SERVER_CONFIG, str(exc)) from None
    client = Client(transport, mode="auto", read_timeout_seconds=talk.timeout, cache=None,
                    client_info=CLIENT_INFO, message_handler=talk.on_message)
    with anyio.CancelScope(deadline=anyio.current_time() + talk.timeout) as connect_scope:
        async with client:
            connect_scope.deadline = math.inf
            talk.phase = "listing"
            initialize = _initialize_section(client)
            pages = await _list_pages(talk, client)
            talk.outcome.document = talk.connection.redact(
                {"server": server.id, "initialize": initialize, "tools_list_pages": pages})
            talk.outcome.page_count = len(pages)
            talk.outcome.tool_count = sum(len(p.get("tools") or []) for p in pages if isinstance(p, Mapping))
    if connect_scope.cancelled_caught:
        raise talk.fail(CONNECT_TIMEOUT, f"no answer to the handshake within {server.timeout_ms} ms")


def _dump(model: Any) -> Any:
    return model.model_dump(by_alias=True, exclude_none=True, mode="json") if model is not None else None


def _initialize_section(client: Client) -> dict[str, Any]:
    """What the handshake said: `initialize`'s result for legacy servers; for modern ones the same three fields
    (protocolVersion, capabilities, serverInfo) plus everything `server/discover` returned under `discover`."""
    session = client.session
    if session.initialize_result is not None:
        section: dict[str, Any] = _dump(session.initialize_result)
        return section
    section = {"protocolVersion": client.protocol_version, "capabilities": _dump(client.server_capabilities),
               "discover": _dump(session.discover_result)}
    if client.server_info is not None:
        section["serverInfo"] = _dump(client.server_info)
    if client.instructions:
        section["instructions"] = client.instructions
    return section


async def _raw_request(client: Client, method: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
    """One request whose result comes back as the raw JSON object (no model, no field lost).

    The SDK's public `send_request` validates the whole result against its own types first, which would lose a page
    to one bad tool; so this stamps the request like the session does (protocol-version `_meta`/headers) and hands
    it to the session's dispatcher. Both are private to mcp 2.x: pinned by `mcp>=2.3,<3` and covered by the tests.
    """
    session = client.session
    data: dict[str, Any] = {"method": method, "params": params}
    opts: dict[str, Any] = {"timeout": timeout}
    session._stamp(data, opts)  # type: ignore[arg-type]
    raw = await session._dispatcher.send_raw_request(method, data.get("params"), opts)  # type: ignore[arg-type]
    return dict(raw)


async def _list_pages(talk: _Conversation, client: Client) -> list[dict[str, Any]]:
    server = talk.server
    capabilities = client.server_capabilities
    if capabilities.tools is None:
        talk.outcome.diagnostics.info(NO_TOOLS_CAPABILITY, "the server does not offer tools; recorded as empty",
                                      source=server.id)
        return [{"tools": []}]
    pages: list[dict[str, Any]] = []
    requested: set[str] = set()
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
        try:
            page = await _raw_request(client, "tools/list", params, talk.timeout)
        except MCPError as exc:
            where = f"tools/list page {len(pages) + 1}"
            if exc.error.code == _SDK_REQUEST_TIMEOUT:
                raise talk.fail(REQUEST_TIMEOUT, f"{where}: no answer within {server.timeout_ms} ms") from None
            raise
        if not isinstance(page.get("tools"), list):
            raise talk.fail(MALFORMED_RESULT, f"tools/list page {len(pages) + 1} has no `tools` array")
        pages.append(page)
        following = page.get("nextCursor")
        if following is None:
            return pages
        if not isinstance(following, str):
            talk.warn(MALFORMED_RESULT, f"page {len(pages)}: `nextCursor` is not a string; listing ends here")
            return pages
        if following in requested or following == cursor:
            talk.warn(REPEATED_CURSOR, f"page {len(pages)} hands back cursor {following[:60]!r} again: the listing "
                                       f"ends at {len(pages)} pages instead of looping")
            return pages
        if len(pages) >= server.max_pages:
            talk.warn(PAGE_CAP, f"more than max_pages={server.max_pages} pages: the listing is cut short")
            return pages
        requested.add(following)
        cursor = following


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (possibly nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        inner = [e for e in exc.exceptions if not isinstance(e, anyio.get_cancelled_exc_class())]
        exc = (inner or list(exc.exceptions))[0]
    return exc


def _find(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    """The first `kind` inside (possibly nested) exception groups."""
    pending = [exc]
    while pending:
        current = pending.pop(0)
        if isinstance(current, kind):
            return current
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
    return None


def _not_utf8(talk: _Conversation, exc: BaseException) -> None:
    """The SDK's stdio reader stops at bytes that are not UTF-8 (MCP messages are UTF-8 JSON) and the request
    then waits for its timeout: that timeout, or the closed connection, is a consequence, not the cause."""
    diagnostics = talk.outcome.diagnostics
    diagnostics.items[:] = [d for d in diagnostics if d.code not in (REQUEST_TIMEOUT, CONNECTION_CLOSED, NOT_JSON_RPC)]
    where = ""
    if isinstance(exc, UnicodeDecodeError):
        where = f": byte {exc.object[exc.start:exc.start + 1]!r} at offset {exc.start} of a read ({exc.reason})"
    talk.fail(NOT_UTF8, f"the server wrote bytes that are not UTF-8 while {talk.phase}{where}")


def _classify(talk: _Conversation, exc: BaseException) -> None:
    """Map whatever went wrong to one located diagnostic."""
    server = talk.server
    target = " ".join(talk.server.command + talk.server.args) if server.transport == "stdio" else \
        display_url(talk.connection.url or "")
    try:
        if isinstance(exc, FileNotFoundError | PermissionError | NotADirectoryError):
            raise talk.fail(CANNOT_START, f"cannot start `{target}`: {exc.strerror or exc}")
        if isinstance(exc, MCPError):
            code = exc.error.code
            if code == _SDK_CONNECTION_CLOSED:
                raise talk.fail(CONNECTION_CLOSED, f"the server closed the connection while {talk.phase}")
            if code == _SDK_REQUEST_TIMEOUT:
                raise talk.fail(REQUEST_TIMEOUT, f"no answer within {server.timeout_ms} ms while {talk.phase}")
            raise talk.fail(SERVER_ERROR, f"the server answered error {code} while {talk.phase}: {exc.error.message}")
        if isinstance(exc, httpx2.TransportError | ConnectionError | OSError):
            raise talk.fail(UNREACHABLE, f"cannot reach {target}: {type(exc).__name__}: {exc}")
        if isinstance(exc, httpx2.HTTPStatusError):
            raise talk.fail(UNREACHABLE, f"{target} answered HTTP {exc.response.status_code}")
        if isinstance(exc, ValidationError):
            first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": str(exc)}
            where = "/".join(str(part) for part in first["loc"])
            raise talk.fail(MALFORMED_RESULT, f"an answer while {talk.phase} does not follow the MCP schema: "
                                              f"{where}: {first['msg']}")
        if isinstance(exc, RuntimeError) and "protocol version" in str(exc).lower():
            raise talk.fail(INCOMPATIBLE, f"no protocol version in common: {exc}")
        if isinstance(exc, anyio.EndOfStream | anyio.ClosedResourceError | anyio.BrokenResourceError):
            raise talk.fail(CONNECTION_CLOSED, f"the connection ended while {talk.phase}")
        raise talk.fail(UNEXPECTED, f"unexpected failure while {talk.phase}: {type(exc).__name__}: {exc}")
    except _Failed:
        return
