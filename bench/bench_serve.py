"""Tool calls through the served MCP endpoint: `toolc serve` next to FastMCP `from_openapi` (not a test).

    .venv/bin/python bench/bench_serve.py [--calls 1000] [--clients 8] [--seconds 30] [--rounds 3]
                                          [--out bench/out/bench_serve.json] [--compare BEFORE.json]
    .venv/bin/python bench/bench_serve.py --listing DOCUMENT [--peer]   # e.g. Microsoft Graph, 11k operations

Both serve the same document, the OpenAPI examples' petstore-expanded, over Streamable HTTP on 127.0.0.1, in front
of the same loopback HTTP API, and both are called by the same client (`mcp.Client` from the official SDK):
`find pet by id` (GET /pets/{id}). FastMCP runs from its own venv (bench/.peers-fastmcp, created on first use).

    latency       one call at a time, four series alternating call for call (same machine load): the API called
                  directly (httpx2, keep-alive), `Router.call_tool` in-process, `toolc serve`, FastMCP. Added
                  latency = a series' percentile - the direct call's: what serving costs over calling the API
    throughput    `--clients` sessions (one `mcp.Client` each) calling in a loop against one server, then the
                  other, `--rounds` times with the order swapped each round; each phase ends after `--calls`
                  calls or `--seconds`, whichever comes first; calls per second, median of the rounds

Every phase is bounded by `--calls` and `--seconds`. The table (markdown) is printed and written next to the JSON
(`--out`, under bench/out/, gitignored). Ratios compare toolc with FastMCP in the same run, which is what holds
still on a loaded machine; `--compare BEFORE.json` (an earlier `--out`) prints each number's change and marks one
more than 10 % worse with `!`.

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
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import yaml
from mcp import Client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_router import percentiles  # noqa: E402
from bench.harness import peer_venv  # noqa: E402
from tests.servers.inprocess import free_port  # noqa: E402
from tests.support.loopback import KeepAliveHandler, loopback_http, stop, wait_for_port  # noqa: E402
from tests.support.router import load_router  # noqa: E402

DOCUMENT = ROOT / "fixtures" / "corpus" / "oai-examples" / "v3.0" / "petstore-expanded.yaml"
OUT = ROOT / "bench" / "out" / "bench_serve.json"
TOOLC = Path(sys.executable).parent / "toolc"
TOOL_ID = "openapi:petstore:find pet by id"
SERVED = ("toolc serve", "fastmcp")
FASTMCP = """
import json, sys
import httpx2
from fastmcp import FastMCP
spec = json.load(open(sys.argv[1]))
server = FastMCP.from_openapi(spec, client=httpx2.AsyncClient(base_url=sys.argv[2]), name="petstore")
server.run(transport="http", host="127.0.0.1", port=int(sys.argv[3]), show_banner=False, log_level="warning")
"""
Call = Callable[[int], Awaitable[Any]]


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


async def alternate(calls: int, seconds: float, series: dict[str, Call]) -> dict[str, list[float]]:
    """One call of each series in turn, `calls` rounds or until `seconds` pass; each call timed alone."""
    samples: dict[str, list[float]] = {name: [] for name in series}
    for i in range(min(200, calls)):  # warm-up: sessions, connections, validators
        for call in series.values():
            await call(i)
    deadline = time.perf_counter() + seconds
    for i in range(calls):
        for name, call in series.items():
            start = time.perf_counter()
            await call(i)
            samples[name].append(time.perf_counter() - start)
        if time.perf_counter() > deadline:
            break
    return samples


async def throughput(url: str, tool: str, clients: int, calls: int, seconds: float) -> float:
    """Calls per second of `clients` sessions calling `tool` in a loop, `calls` in all or until `seconds` pass."""
    async with AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(Client(url)) for _ in range(clients)]
        for session in sessions:  # warm-up: each session's connection and the server's per-session state
            checked(await session.call_tool(tool, {"id": 1}))
        issued = 0
        deadline = time.perf_counter() + seconds

        async def worker(session: Client) -> None:
            nonlocal issued
            while issued < calls and time.perf_counter() < deadline:
                issued += 1
                checked(await session.call_tool(tool, {"id": issued % 1000}))

        start = time.perf_counter()
        await asyncio.gather(*(worker(session) for session in sessions))
        return issued / (time.perf_counter() - start)


def checked(result: Any) -> Any:
    if result.is_error:
        raise RuntimeError(f"call failed: {result.content}")
    return result


async def tool_name(client: Client, *words: str) -> str:
    tools = (await client.list_tools()).tools
    return next(tool.name for tool in tools if all(word in tool.name.lower() for word in words))


async def measure(urls: dict[str, str], api_url: str, router: Any, context: Any, options: argparse.Namespace
                  ) -> dict[str, Any]:
    async with Client(urls["toolc serve"]) as ours, Client(urls["fastmcp"]) as theirs, \
            httpx2.AsyncClient(base_url=api_url) as api:
        names = {"toolc serve": await tool_name(ours, "find", "id"), "fastmcp": await tool_name(theirs, "find", "id")}

        async def direct(i: int) -> Any:
            answer = await api.get(f"/pets/{i % 1000}")
            answer.raise_for_status()
            return answer

        series: dict[str, Call] = {
            "direct API": direct,
            "router in-process": lambda i: router.call_tool(TOOL_ID, {"id": i % 1000}, context=context),
            "toolc serve": lambda i: ours.call_tool(names["toolc serve"], {"id": i % 1000}),
            "fastmcp": lambda i: theirs.call_tool(names["fastmcp"], {"id": i % 1000}),
        }
        for name in SERVED:
            checked(await series[name](1))
        latency = await alternate(options.calls, options.seconds, series)
    rates: dict[str, list[float]] = {name: [] for name in SERVED}
    for round_ in range(options.rounds):
        for name in SERVED if round_ % 2 == 0 else reversed(SERVED):
            rates[name].append(await throughput(urls[name], names[name], options.clients, options.calls,
                                                options.seconds))
    return summarise(latency, rates, names, options)


def summarise(latency: dict[str, list[float]], rates: dict[str, list[float]], names: dict[str, str],
              options: argparse.Namespace) -> dict[str, Any]:
    percent = {name: percentiles(samples) for name, samples in latency.items()}
    added = {name: {q: percent[name][q] - percent["direct API"][q] for q in ("p50", "p99")}
             for name in ("router in-process", *SERVED)}
    sequential = {name: len(latency[name]) / sum(latency[name]) for name in SERVED}
    concurrent = {name: statistics.median(values) for name, values in rates.items()}
    ours, theirs = "toolc serve", "fastmcp"
    return {
        "run": {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": _commit(),
                "load_avg": [round(load, 2) for load in os.getloadavg()], "tools": names,
                "latency_calls": len(latency["direct API"]), "clients": options.clients,
                "throughput_calls": options.calls, "seconds": options.seconds, "rounds": options.rounds},
        "latency_ms": {name: {q: round(value, 3) for q, value in p.items()} for name, p in percent.items()},
        "added_ms": {name: {q: round(value, 3) for q, value in a.items()} for name, a in added.items()},
        "calls_per_s": {name: {"one at a time": round(sequential[name], 1), "concurrent": round(concurrent[name], 1),
                               "concurrent rounds": [round(rate, 1) for rate in rates[name]]} for name in SERVED},
        "ratios": {
            "calls/s one at a time, toolc / fastmcp": round(sequential[ours] / sequential[theirs], 2),
            "calls/s concurrent, toolc / fastmcp": round(concurrent[ours] / concurrent[theirs], 2),
            "added p50, fastmcp / toolc": _ratio(added[theirs]["p50"], added[ours]["p50"]),
            "added p99, fastmcp / toolc": _ratio(added[theirs]["p99"], added[ours]["p99"]),
        },
    }


def _ratio(numerator: float, denominator: float) -> float | None:
    return round(numerator / denominator, 2) if denominator > 0 else None


def _commit() -> str:
    run = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True, text=True)
    return run.stdout.strip() or "unknown"


def markdown(result: dict[str, Any]) -> str:
    run, latency, added, rates = result["run"], result["latency_ms"], result["added_ms"], result["calls_per_s"]
    lines = [
        f"`bench_serve.py`, {run['date']}, {run['commit']}, load avg {'/'.join(map(str, run['load_avg']))}; "
        f"latency: {run['latency_calls']} calls per series alternating; throughput: {run['clients']} clients, "
        f"{run['throughput_calls']} calls or {run['seconds']:g} s per phase, median of {run['rounds']} rounds",
        "",
        "| series | p50 ms | p99 ms | added p50 ms | added p99 ms | calls/s one at a time | calls/s concurrent |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, p in latency.items():
        extra = added.get(name, {})
        rate = rates.get(name, {})
        lines.append(f"| {name} | {p['p50']:.2f} | {p['p99']:.2f} | {_cell(extra.get('p50'), '+.2f')} | "
                     f"{_cell(extra.get('p99'), '+.2f')} | {_cell(rate.get('one at a time'), '.1f')} | "
                     f"{_cell(rate.get('concurrent'), '.1f')} |")
    lines += ["", "| ratio | value |", "|---|---|"]
    lines += [f"| {name} | {_cell(value, '.2f')} |" for name, value in result["ratios"].items()]
    return "\n".join(lines) + "\n"


def _cell(value: float | None, spec: str) -> str:
    return "" if value is None else format(value, spec)


LOWER_IS_BETTER = ("latency_ms", "added_ms")


def comparison(before: dict[str, Any], after: dict[str, Any]) -> str:
    """Every number in both runs, before and after, with its change; `!` where it is more than 10 % worse."""
    lines = ["| number | before | after | change |", "|---|---|---|---|"]
    for section in ("latency_ms", "added_ms", "calls_per_s", "ratios"):
        for key, old, new in _pairs(before.get(section, {}), after.get(section, {}), section):
            if not isinstance(old, int | float) or not isinstance(new, int | float) or old == 0:
                continue
            change = (new - old) / abs(old)
            worse = change > 0.10 if section in LOWER_IS_BETTER else change < -0.10
            lines.append(f"| {key} | {old:.2f} | {new:.2f} | {change:+.0%}{' !' if worse else ''} |")
    return "\n".join(lines) + "\n"


def _pairs(old: dict[str, Any], new: dict[str, Any], prefix: str) -> Iterator[tuple[str, Any, Any]]:
    for key in (key for key in old if key in new):
        if isinstance(old[key], dict) and isinstance(new[key], dict):
            yield from _pairs(old[key], new[key], f"{prefix} / {key}")
        else:
            yield f"{prefix} / {key}", old[key], new[key]


def main(options: argparse.Namespace) -> None:
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

            async def run() -> dict[str, Any]:
                try:
                    urls = {"toolc serve": toolc_url, "fastmcp": fastmcp_url}
                    return await measure(urls, api_url, router, context, options)
                finally:
                    await router.aclose()
                    router.audit.close()

            result = asyncio.run(run())
    report(result, options.out, options.compare)


def report(result: dict[str, Any], out: Path, compare: Path | None) -> None:
    table = markdown(result)
    if compare is not None:
        table += "\nagainst " + str(compare) + ":\n\n" + comparison(json.loads(compare.read_text()), result)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    out.with_suffix(".md").write_text(table)
    print(table)
    print(f"written: {out}, {out.with_suffix('.md')}")


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
    from compiler.codegen.router.router_package import generate_router
    from compiler.infra.loading import load_document
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
    from compiler.infra.diagnostics import Diagnostics
    from compiler.ir import Catalog

    source, tools = read_openapi(load_document(document), source_id="api", location=str(document),
                                 diagnostics=Diagnostics())
    return Catalog(sources=(source,), tools=tuple(sorted(tools, key=lambda t: t.id)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=1000, help="calls per latency series and throughput phase")
    parser.add_argument("--clients", type=int, default=8, help="concurrent client sessions per server")
    parser.add_argument("--seconds", type=float, default=30, help="time bound of each phase")
    parser.add_argument("--rounds", type=int, default=3, help="throughput rounds (the median is reported)")
    parser.add_argument("--out", type=Path, default=OUT, help="the JSON result; the table goes next to it (.md)")
    parser.add_argument("--compare", type=Path, help="an earlier --out: print each number's change")
    parser.add_argument("--listing", type=Path, help="list the tools of this OpenAPI document instead")
    parser.add_argument("--peer", action="store_true", help="with --listing: FastMCP from_openapi too")
    options = parser.parse_args()
    if options.listing:
        listing(options.listing, options.peer)
    else:
        main(options)
