"""One process of the fleet in the PostgreSQL audit tests (not a test module).

    python -m tests.support.audit_pg_worker GENERATED_DIR CALLS CONCURRENCY DELAY_S RETRY_FOR_S [EXIT] < dsn

Imports the generated router from GENERATED_DIR, audits to PostgreSQL (the DSN is read from stdin, so it never
shows in a process listing), makes CALLS calls of `mcp:probe:echo` (CONCURRENCY at a time, each tool call
sleeping DELAY_S) against an in-process MCP server, and prints one JSON line per call: invocation id, error,
gate, and whether the tool ran. EXIT `close` (the default) closes the sink before the process ends; `exit` ends
it with `os._exit` right after `Router.aclose()`, as a forked worker does: no `close()`, no atexit handler, no
daemon thread left to finish, so only what `aclose()` waited for is stored.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys
from typing import Any


async def main(folder: str, calls: int, concurrency: int, delay: float, retry_for: float, dsn: str,
               exit_mode: str) -> None:
    from mcp.server.mcpserver import MCPServer

    sys.path.insert(0, folder)
    rt = importlib.import_module("toolc_router")
    server = MCPServer("probe", version="1.0")
    ran: set[str] = set()

    @server.tool()
    async def echo(text: str) -> dict[str, str]:
        ran.add(text)
        await asyncio.sleep(delay)
        return {"text": text}

    sink = rt.audit_pg.PostgresAuditSink(dsn, retry_for=retry_for)
    router = rt.Router(audit_sink=sink)
    router.set_server_factory("probe", lambda: server)
    context = rt.InvocationContext(task_id="fleet")
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> Any:
        async with gate:
            return await router.call_tool("mcp:probe:echo", {"text": f"m{i}"}, context=context)

    results = await asyncio.gather(*(one(i) for i in range(calls)))
    for i, result in enumerate(results):
        print(json.dumps({"invocation_id": result.invocation_id, "error": result.error,
                          "denied_by": result.denied_by, "text": (result.structured or {}).get("text"),
                          "ran": f"m{i}" in ran}))
    sys.stdout.flush()
    await router.aclose()
    if exit_mode == "exit":
        sys.stderr.flush()
        os._exit(0)
    sink.close()


if __name__ == "__main__":
    folder, calls, concurrency, delay, retry_for = sys.argv[1:6]
    asyncio.run(main(folder, int(calls), int(concurrency), float(delay), float(retry_for), sys.stdin.read().strip(),
                     sys.argv[6] if len(sys.argv) > 6 else "close"))
