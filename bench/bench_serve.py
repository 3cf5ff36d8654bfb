"""Tool calls through the served MCP endpoint: `toolc serve` next to FastMCP `from_openapi` (not a test).

    .venv/bin/python bench/bench_serve.py [--calls 1000] [--concurrency 8]
    .venv/bin/python bench/bench_serve.py --listing DOCUMENT [--peer]   # e.g. Microsoft Graph, 11k operations

Both serve the same document, the OpenAPI examples' petstore-expanded, over Streamable HTTP on 127.0.0.1, in front
of the same loopback HTTP API, and both are called by the same client (`mcp.Client` from the official SDK):
`find pet by id` (GET /pets/{id}). FastMCP runs from its own venv (bench/.peers-fastmcp, created on first use).

    sequential    one call at a time, the two servers alternating call for call (same machine load); p50/p99
    concurrent    `--concurrency` calls in flight per server, one server after the other; calls per second
    router        `Router.call_tool` in-process on the same tool, alternating with calls through `toolc serve`:
                  the serving layer's added latency (MCP framing, HTTP, session) over the router itself

`--listing DOCUMENT` generates the router for one OpenAPI document and, in a fresh process, lists every page of
`tools/list` through the official client (in-process transport) twice: time of each pass, peak memory, bytes
listed. `--peer` does the same with FastMCP `from_openapi` in its venv.

toolc's server does everything it does in production: policy gates, argument validation, the audit's start and
end rows committed to SQLite around each call. FastMCP has no policy or audit; it validates the output.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_router import percentiles  # noqa: E402
from bench.harness import peer_venv  # noqa: E402
from tests.servers.inprocess import free_port  # noqa: E402
from tests.support.loopback import KeepAliveHandler, loopback_http, stop, wait_for_port  # noqa: E402
from tests.support.router import load_router  # noqa: E402

DOCUMENT = ROOT / "fixtures" / "corpus" / "oai-examples" / "v3.0" / "petstore-expanded.yaml"
TOOLC = Path(sys.executable).parent / "toolc"
TOOL_ID = "openapi:petstore:find pet by id"
FASTMCP = """
import json, sys
import httpx2
from fastmcp import FastMCP
spec = json.load(open(sys.argv[1]))
server = FastMCP.from_openapi(spec, client=httpx2.AsyncClient(base_url=sys.argv[2]), name="petstore")
server.run(transport="http", host="127.0.0.1", port=int(sys.argv[3]), show_banner=False, log_level="warning")
"""


class Pets(KeepAliveHandler):
    def do_GET(self) -> None:
        pet_id = int(self.path.rstrip("/").rsplit("/", 1)[-1])
        self.send_json(200, json.dumps({"id": pet_id, "name": "Rex", "tag": "dog"}).encode())


@contextmanager
def running(command: list[str], port: int, name: str, **kwargs: Any) -> Iterator[str]:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, **kwargs)
    try:
        wait_for_port(port, process, name, timeout_s=120)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process, timeout_s=30)


async def alternate(calls: int, series: dict[str, Callable[[int], Awaitable[Any]]]) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in series}
    for i in range(min(200, calls)):  # warm-up: sessions, connections, validators
        for call in series.values():
            await call(i)
    for i in range(calls):
        for name, call in series.items():
            start = time.perf_counter()
            await call(i)
            samples[name].append(time.perf_counter() - start)
    return samples


async def throughput(calls: int, concurrency: int, call: Callable[[int], Awaitable[Any]]) -> float:
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            await call(i)

    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(calls)))
    return calls / (time.perf_counter() - start)


def checked(result: Any) -> Any:
    if result.is_error:
        raise RuntimeError(f"call failed: {result.content}")
    return result


async def measure(toolc_url: str, fastmcp_url: str, router: Any, context: Any, calls: int,
                  concurrency: int) -> None:
    from mcp import Client

    async with Client(toolc_url) as ours, Client(fastmcp_url) as theirs:
        names = [tool.name for tool in (await theirs.list_tools()).tools]
        peer_name = next(name for name in names if "find" in name.lower() and "id" in name.lower())
        served = (await ours.list_tools()).tools
        ours_name = next(tool.name for tool in served if "find" in tool.name and "id" in tool.name)
        series = {
            "toolc serve": lambda i: ours.call_tool(ours_name, {"id": i % 1000}),
            "fastmcp": lambda i: theirs.call_tool(peer_name, {"id": i % 1000}),
        }
        for call in series.values():
            checked(await call(1))
        sequential = await alternate(calls, series)
        rates = {name: await throughput(calls, concurrency, call) for name, call in series.items()}
        direct = await alternate(calls, {
            "router": lambda i: router.call_tool(TOOL_ID, {"id": i % 1000}, context=context),
            "toolc serve": series["toolc serve"],
        })

    print(f"{calls} calls per series; concurrency {concurrency}; tool: {ours_name} / {peer_name}")
    print(f"{'series':<22} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'calls/s':>9}")
    for name, samples in sequential.items():
        p = percentiles(samples)
        print(f"{name + ' (sequential)':<22} {p['p50']:8.3f} {p['p90']:8.3f} {p['p99']:8.3f} "
              f"{len(samples) / sum(samples):9.1f}")
    for name, rate in rates.items():
        print(f"{name + ' (concurrent)':<22} {'':>8} {'':>8} {'':>8} {rate:9.1f}")
    r, s = percentiles(direct["router"]), percentiles(direct["toolc serve"])
    print(f"{'router in-process':<22} {r['p50']:8.3f} {r['p90']:8.3f} {r['p99']:8.3f}")
    print(f"{'served, same run':<22} {s['p50']:8.3f} {s['p90']:8.3f} {s['p99']:8.3f}")
    print(f"{'added by serving':<22} {s['p50'] - r['p50']:8.3f} {s['p90'] - r['p90']:8.3f} "
          f"{s['p99'] - r['p99']:8.3f}")


def main(calls: int, concurrency: int) -> None:
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    peer = peer_venv("fastmcp", ["fastmcp==4.1.2"])
    with loopback_http(Pets) as api_base, tempfile.TemporaryDirectory() as scratch:
        api_url = f"{api_base}/api"
        folder = Path(scratch)
        spec = folder / "petstore.json"
        spec.write_text(json.dumps(yaml.safe_load(DOCUMENT.read_text())))
        (folder / "toolc.yaml").write_text(yaml.safe_dump({
            "name": "bench", "output": "out", "targets": ["openai-chat"],
            "openapi": [{"id": "petstore", "path": str(spec), "base_url": "${PET_API}"}]}))
        subprocess.run([str(TOOLC), "compile", "-c", str(folder / "toolc.yaml")], check=True, capture_output=True)
        environ = {**os.environ, "PET_API": api_url, "TOOLC_AUDIT_DB": str(folder / "serve-audit.db")}
        ours_port, peer_port = free_port(), free_port()
        serve = [str(TOOLC), "serve", "-c", str(folder / "toolc.yaml"), "--transport", "http", "--port",
                 str(ours_port), "--spec-hash", "bench", "--project-id", "bench"]
        with running(serve, ours_port, "toolc serve", env=environ, stderr=subprocess.DEVNULL) as toolc_url, \
                running([str(peer), "-c", FASTMCP, str(spec), api_url, str(peer_port)], peer_port, "fastmcp",
                        stderr=subprocess.DEVNULL) as fastmcp_url, \
                load_router(folder / "out" / "python") as rt:
            router = rt.Router(audit_sink=rt.SqliteAuditSink(folder / "direct-audit.db"), environ=environ)
            context = rt.InvocationContext(mode="execution", project_id="bench", spec_frozen=True, spec_hash="bench")

            async def run() -> None:
                try:
                    await measure(toolc_url, fastmcp_url, router, context, calls, concurrency)
                finally:
                    await router.aclose()
                    router.audit.close()

            asyncio.run(run())


LISTER = """
import asyncio, json, resource, sys, time
sys.path.insert(0, sys.argv[1])

async def main():
    from mcp import Client
    if sys.argv[2] == "toolc":
        from toolc_router import MemoryAuditSink, Router
        from toolc_router.serve_mcp import mcp_server
        server = mcp_server(Router(audit_sink=MemoryAuditSink(), environ={}))
    else:
        import httpx2
        from fastmcp import FastMCP
        spec = json.load(open(sys.argv[3]))
        peer = FastMCP.from_openapi(spec, client=httpx2.AsyncClient(base_url="http://127.0.0.1:9"), name="peer")
        server = peer._mcp_server  # the SDK's low-level server FastMCP builds on: same client, same transport
    ready = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    passes = []
    async with Client(server) as client:
        for _ in range(2):
            start, cursor, tools, size = time.perf_counter(), None, 0, 0
            while True:
                page = await client.list_tools(cursor=cursor, cache_mode="refresh")
                tools += len(page.tools)
                size += len(page.model_dump_json(by_alias=True, exclude_none=True))
                cursor = page.next_cursor
                if not cursor:
                    break
            passes.append((time.perf_counter() - start, tools, size))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"passes": passes, "ready_mb": ready / 1024, "peak_mb": peak / 1024}))

asyncio.run(main())
"""


def listing(document: Path, with_peer: bool) -> None:
    from compiler.codegen.router import generate_router
    from compiler.loading import load_document
    from compiler.sources.openapi import read_openapi
    from tests.support.router import make_build

    started = time.perf_counter()
    build = make_build(_catalog(document, load_document, read_openapi))
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for relative, content in generate_router(build).items():
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            (folder / relative).write_bytes(content)
        print(f"{document.name}: {len(build.catalog.tools)} tools; router generated in "
              f"{time.perf_counter() - started:.1f} s; _serve.json "
              f"{(folder / 'toolc_router' / '_serve.json').stat().st_size / 1e6:.1f} MB, _schemas.json "
              f"{(folder / 'toolc_router' / '_schemas.json').stat().st_size / 1e6:.1f} MB")
        # Byte-compiled as an install would be: an 18 MB `_tables.py` (Graph) compiled on import costs ~1 GB.
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(folder / "toolc_router")], check=True)
        runs = [("toolc serve", [sys.executable, "-c", LISTER, str(folder), "toolc"])]
        if with_peer:
            spec = folder / "spec.json"
            text = document.read_text()
            spec.write_text(text if document.suffix == ".json" else json.dumps(yaml.safe_load(text)))
            runs.append(("fastmcp", [str(peer_venv("fastmcp", ["fastmcp==4.1.2"])), "-c", LISTER, str(folder),
                                     "fastmcp", str(spec)]))
        for name, command in runs:
            run = subprocess.run(command, capture_output=True, text=True)
            if run.returncode != 0:
                print(f"{name}: failed ({run.returncode}): {run.stderr.strip().splitlines()[-1:]}")
                continue
            result = json.loads(run.stdout)
            (first, tools, size), (second, _, _) = result["passes"]
            print(f"{name}: {tools} tools, {size / 1e6:.1f} MB listed; first pass {first:.2f} s, second "
                  f"{second:.2f} s; ready {result['ready_mb']:.0f} MB, peak {result['peak_mb']:.0f} MB RSS")


def _catalog(document: Path, load_document: Any, read_openapi: Any) -> Any:
    from compiler.diagnostics import Diagnostics
    from compiler.ir import Catalog

    source, tools = read_openapi(load_document(document), source_id="api", location=str(document),
                                 diagnostics=Diagnostics())
    return Catalog(sources=(source,), tools=tuple(sorted(tools, key=lambda t: t.id)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--listing", type=Path, help="list the tools of this OpenAPI document instead")
    parser.add_argument("--peer", action="store_true", help="with --listing: FastMCP from_openapi too")
    options = parser.parse_args()
    if options.listing:
        listing(options.listing, options.peer)
    else:
        main(options.calls, options.concurrency)
