"""One router process of the fleet in the rate-limit tests (not a test module).

    python -m tests.support.rate_limit_worker GENERATED_DIR CALLS < dsn

Imports the generated router from GENERATED_DIR (its `RATE_LIMITS` baked with a fleet rule), audits to PostgreSQL
and takes fleet tokens there (the DSN, read from stdin so it never shows in a process listing, is the router's
`TOOLC_AUDIT_DSN`), waits for a line on stdin so every process starts together, starts CALLS calls of
`mcp:probe:echo` at once against an in-process MCP server, and prints one JSON line per call: error and gate.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sys


async def main(folder: str, calls: int, dsn: str) -> None:
    sys.path.insert(0, folder)
    rt = importlib.import_module("toolc_router")
    from tests.support.router import probe_server

    router = rt.Router(environ={"TOOLC_AUDIT_DSN": dsn})
    server = probe_server()
    router.set_server_factory("probe", lambda: server)
    context = rt.InvocationContext(project_id="fleet", spec_frozen=True, spec_hash="h", actor="agent")
    print("ready", flush=True)
    sys.stdin.readline()  # the go signal
    results = await asyncio.gather(*(router.call_tool("mcp:probe:echo", {"text": f"m{i}"}, context=context)
                                     for i in range(calls)))
    await router.aclose()
    router.audit.close()
    for result in results:
        print(json.dumps({"error": result.error, "denied_by": result.denied_by}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.stdin.readline().strip()))
