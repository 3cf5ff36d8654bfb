"""Pinned MCP tool definitions: the router calls a tool only while its server still lists it as compiled. Generated
by toolc; do not edit.

`_pins.json` holds, for each MCP server of the project file not switched off (`gateway.pinning.off`), each
tool's pinned form (name, title, description, input and output schemas, annotations: `mcp_pins`) and its hash.
When the router connects to such a server, and again whenever the server says its tool list changed
(`notifications/tools/list_changed`, or a `subscriptions/listen` event from 2026-07-28 on), it reads the live
`tools/list` and compares. A tool whose definition changed (tool poisoning, a rug pull) or that the server no
longer lists is refused by gate `pinning`, with the diff, until the project is recompiled (and reviewed).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from mcp import Client

from ._types import ToolSpec
from .guards import Call, Denial
from .mcp_pins import changes, refusal_reason, with_placeholders

logger = logging.getLogger(__name__)
PINS_FILE = Path(__file__).with_name("_pins.json")
MAX_PAGES = 1000
"""Pages of a live `tools/list` read at most (a server that pages forever is refused, not followed)."""


@cache
def _pinned() -> Mapping[str, Mapping[str, Any]]:
    if not PINS_FILE.exists():
        return {}
    servers: Mapping[str, Mapping[str, Any]] = json.loads(PINS_FILE.read_bytes())[
        "servers"
    ]
    return servers


def pins_of(server_id: str) -> Mapping[str, Any] | None:
    """Tool name → {hash, definition, presets} for a pinned server; None when its tools are not pinned."""
    return _pinned().get(server_id)


async def live_listing(client: Client) -> dict[str, dict[str, Any]]:
    """The server's `tools/list` now (every page, no cached answer), as JSON by tool name."""
    listed: dict[str, dict[str, Any]] = {}
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode="bypass")
        for tool in page.tools:
            listed.setdefault(
                tool.name,
                tool.model_dump(by_alias=True, exclude_none=True, mode="json"),
            )
        cursor = page.next_cursor
        if not cursor:
            return listed
    raise ValueError(f"tools/list did not end within {MAX_PAGES} pages")


class PinCheck:
    """One connection's view: which pinned tools the live server changed, from its latest listing."""

    def __init__(
        self,
        server_id: str,
        pins: Mapping[str, Any],
        placeholders: Mapping[str, str] | None = None,
    ) -> None:
        self.server_id = server_id
        self.pins = pins
        self.placeholders = placeholders or {}
        """Value → `${NAME}` of the server's environment, put back as the recording has it."""
        self.changed: dict[str, str] = {}
        self.checks = 0
        """Listings compared so far (the first at connect)."""
        self._pending: asyncio.Task[None] | None = None

    async def check(self, client: Client) -> None:
        try:
            listed = with_placeholders(await live_listing(client), self.placeholders)
            self.changed = changes(self.pins, listed)
        except Exception as exc:
            # A listing that cannot be read or compared vouches for nothing: every pinned tool is refused.
            logger.debug(
                "MCP server %s: tools/list failed", self.server_id, exc_info=True
            )
            why = f"its tools/list could not be read ({type(exc).__name__})"
            self.changed = dict.fromkeys(self.pins, why)
        self.checks += 1
        for name, diff in sorted(self.changed.items()):
            logger.warning(
                "MCP server %s: tool %s refused (pinning): %s",
                self.server_id,
                name,
                diff,
            )

    def recheck(self, client: Client) -> None:
        """Compare again, in the background (the server said its list changed); calls wait for the result."""
        previous = self._pending

        async def after_previous() -> None:
            if previous is not None:
                await asyncio.gather(previous, return_exceptions=True)
            await self.check(client)

        self._pending = asyncio.create_task(after_previous())

    async def refusal(self, name: str) -> str | None:
        """What changed in tool `name` since it was compiled, or None while it is as pinned."""
        pending = self._pending
        if pending is not None:
            await asyncio.gather(pending, return_exceptions=True)
        return self.changed.get(name)

    def cancel(self) -> None:
        if self._pending is not None:
            self._pending.cancel()


class PinningGuard:
    """The chain's `pinning` guard: an MCP tool whose live definition differs from the compiled one is refused,
    with the diff. `refusal(tool)` connects when needed and returns what changed (None: as pinned)."""

    gate = "pinning"

    def __init__(self, refusal: Callable[[ToolSpec], Awaitable[str | None]]) -> None:
        self._refusal = refusal

    async def check(self, call: Call) -> Denial | None:
        name = call.tool.mcp_tool
        if name is None:
            return None
        diff = await self._refusal(call.tool)
        return None if diff is None else Denial(self.gate, refusal_reason(name, diff))
