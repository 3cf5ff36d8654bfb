"""One process of the fleet in the PostgreSQL audit tests (not a test module).

    python -m tests.support.audit_pg_worker GENERATED_DIR CALLS CONCURRENCY DELAY_S RETRY_FOR_S < dsn

Imports the generated router from GENERATED_DIR, audits to PostgreSQL (the DSN is read from stdin, so it never
shows in a process listing), makes CALLS calls of `mcp:probe:echo` (CONCURRENCY at a time, each tool call
sleeping DELAY_S) against an in-process MCP server, and prints one JSON line per call: invocation id, error,
gate.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from typing import Any


async def main(folder: str, calls: int, concurrency: int, delay: float, retry_for: float, dsn: str) -> None:
    from mcp.server.mcpserver import MCPServer

    sys.path.insert(0, folder)
    rt = importlib.import_module("toolc_router")
    server = MCPServer("probe", version="1.0")

    @server.tool()
    async def echo(text: str) -> dict[str, str]:
        await asyncio.sleep(delay)
        return {"text": text}

    sink = rt.PostgresAuditSink(dsn, retry_for=retry_for)
    router = rt.Router(audit_sink=sink)
    router.set_server_factory("probe", lambda: server)
    context = rt.InvocationContext(task_id="fleet")
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> Any:
        async with gate:
            return await router.call_tool("mcp:probe:echo", {"text": f"m{i}"}, context=context)

    results = await asyncio.gather(*(one(i) for i in range(calls)))
    await router.aclose()
    sink.close()
    for result in results:
        print(json.dumps({"invocation_id": result.invocation_id, "error": result.error,
                          "denied_by": result.denied_by, "text": (result.structured or {}).get("text")}))


if __name__ == "__main__":
    folder, calls, concurrency, delay, retry_for = sys.argv[1:6]
    asyncio.run(main(folder, int(calls), int(concurrency), float(delay), float(retry_for), sys.stdin.read().strip()))
