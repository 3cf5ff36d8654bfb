"""A stdio MCP server (the official SDK) that dies mid-call: `python flaky_stdio.py FOLDER CRASHES`.

Each call of a tool appends the tool's name to FOLDER/seen; while FOLDER/crashes holds fewer than CRASHES lines, a
call appends one there and ends the process (`os._exit`) before answering, as a server that crashes or is
restarted does. After that, calls are answered. `read_state` is annotated idempotent, `append_state` is not.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

FOLDER = Path(sys.argv[1])
CRASHES = int(sys.argv[2])
server = MCPServer("flaky", version="1.0")


def _maybe_crash(name: str) -> None:
    with (FOLDER / "seen").open("a") as seen:
        seen.write(name + "\n")
    crashes = FOLDER / "crashes"
    done = len(crashes.read_text().splitlines()) if crashes.exists() else 0
    if done < CRASHES:
        with crashes.open("a") as log:
            log.write("crash\n")
        os._exit(1)


@server.tool(annotations=ToolAnnotations(idempotentHint=True, readOnlyHint=True))
def read_state(key: str) -> str:
    _maybe_crash("read_state")
    return f"state of {key}"


@server.tool()
def append_state(key: str) -> str:
    _maybe_crash("append_state")
    return f"appended {key}"


if __name__ == "__main__":
    server.run("stdio")
