"""What OAuth callers (`gateway.auth`) cost `toolc serve` per request (not a test).

    .venv/bin/python bench/bench_callers.py [--calls 2000] [--operations 1000]

    verify   `AccessTokenVerifier.caller(token)`: header, key by kid, PyJWT's signature and claim checks, the
             caller's grants; a new RS256 (2048-bit) or ES256 token each time, then one token again (kept after
             its first check); p50 and p99
    call     `POST /tools/echo/call` through the app in-process (httpx2's ASGI transport: no sockets), the
             probe MCP tool behind it, the audit in memory: the static bearer token vs an OAuth token, in
             rounds of `ROUND` calls taking turns so both series see the same load; p50, p99, the difference
    list     MCP `tools/list`, first page, on a compiled synthetic API of `--operations` operations: without
             OAuth (the page built once and kept) vs a caller granted a fifth of the tools (the names granted
             to a set of globs listed once and kept, the tools on the page built once and kept); the first,
             uncached listing for a caller is timed too
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from compiler.config import CallerAuthConfig, GatewayConfig  # noqa: E402
from tests.support.cli import run_toolc  # noqa: E402
from tests.support.oauth import Keys, sign  # noqa: E402
from tests.support.router import load_router, make_build, probe_catalog, probe_server, write_router  # noqa: E402
from tests.support.synthetic import synthetic_openapi  # noqa: E402

ISSUER = "https://issuer.example"
RESOURCE = "http://127.0.0.1/mcp"
STATIC = "a-static-bearer-token-0123456789"
ROUND = 100
"""Calls in a row through one app before the other's turn: both series see the same load, and neither pays for
switching between two apps on every call (that doubled both medians and tripled their gap)."""


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(len(ordered) * 0.99) - 1]


async def timed(run: Callable[[], Awaitable[Any]], calls: int) -> list[float]:
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await run()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def auth(keys: Keys, scopes: dict[str, tuple[str, ...]]) -> GatewayConfig:
    return GatewayConfig(auth=CallerAuthConfig(issuer=ISSUER, resource=RESOURCE, jwks=keys.jwks(),
                                               algorithms=("RS256", "ES256"), scopes=scopes))


async def bench_verify(keys: Keys, calls: int) -> None:
    from toolc_router._tables import GATEWAY_AUTH
    from toolc_router.access_tokens import AccessTokenVerifier

    verifier = AccessTokenVerifier(GATEWAY_AUTH)
    signing = {"RS256": {}, "ES256": {"key": keys.ec, "alg": "ES256", "kid": "k2"}}
    for label, options in signing.items():
        fresh = iter([sign(keys, scope="probe", aud=RESOURCE, iss=ISSUER, jti=str(n), **options)
                      for n in range(calls)])
        p50, p99 = percentiles(await timed(lambda fresh=fresh: verifier.caller(next(fresh)), calls))
        print(f"verify {label}, a new token: p50 {p50:.3f} ms, p99 {p99:.3f} ms")
    kept = sign(keys, scope="probe", aud=RESOURCE, iss=ISSUER, jti="kept")
    p50, p99 = percentiles(await timed(lambda: verifier.caller(kept), calls))
    print(f"verify, a token seen before (kept): p50 {p50:.3f} ms, p99 {p99:.3f} ms")


async def bench_call(rt: Any, keys: Keys, calls: int) -> None:
    import httpx2
    from toolc_router.serve_http import create_app

    apps = {}
    for label, options in (("static", {"token": STATIC, "auth": None}), ("oauth", {})):
        router = rt.Router(audit_sink=rt.MemoryAuditSink(), environ={})
        server = probe_server()  # each its own, so neither waits on the other's session
        router.set_server_factory("probe", lambda server=server: server)
        apps[label] = (router, create_app(router, **options))
    headers = {"static": STATIC, "oauth": sign(keys, scope="probe", aud=RESOURCE, iss=ISSUER)}
    samples: dict[str, list[float]] = {"static": [], "oauth": []}
    clients = {label: httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1",
                                         headers={"Authorization": f"Bearer {headers[label]}"})
               for label, (_, app) in apps.items()}
    for _ in range(50):  # warm up: connections to the probe server, caches
        for client in clients.values():
            await client.post("/tools/echo/call", json={"text": "hi"})
    for index in range(max(1, calls // ROUND)):
        order = list(clients.items())
        for label, client in order if index % 2 else reversed(order):  # neither always second
            for _ in range(ROUND):
                started = time.perf_counter()
                answer = await client.post("/tools/echo/call", json={"text": "hi"})
                samples[label].append((time.perf_counter() - started) * 1000)
                assert answer.status_code == 200, answer.text
    for client in clients.values():
        await client.aclose()
    for router, _ in apps.values():
        await router.aclose()
    static, oauth = percentiles(samples["static"]), percentiles(samples["oauth"])
    print(f"call, static token: p50 {static[0]:.3f} ms, p99 {static[1]:.3f} ms")
    print(f"call, OAuth token:  p50 {oauth[0]:.3f} ms, p99 {oauth[1]:.3f} ms "
          f"(+{oauth[0] - static[0]:.3f} ms p50, +{oauth[1] - static[1]:.3f} ms p99)")


async def bench_list(keys: Keys, operations: int, calls: int, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    document = folder / "synthetic.yaml"
    document.write_text(yaml.safe_dump(synthetic_openapi(operations)))
    project = folder / "toolc.yaml"
    project.write_text(yaml.safe_dump({
        "name": "bench", "output": "out", "targets": ["anthropic"], "codegen": True,
        "openapi": [{"id": "synthetic", "path": str(document), "base_url": "http://127.0.0.1:9/v1"}],
        "gateway": {"auth": {"issuer": ISSUER, "resource": RESOURCE, "jwks": keys.jwks(),
                             "scopes": {"get": ["openapi:synthetic:get*"]}}},
    }))
    started = time.perf_counter()
    result = run_toolc("compile", "-c", project)
    assert result.exit_code == 0, result.stderr
    print(f"list: compiled {operations} operations in {time.perf_counter() - started:.1f} s")
    with load_router(folder / "out" / "python") as rt:
        from toolc_router._types import Caller
        from toolc_router.serve_catalog import ServedCatalog

        catalog = ServedCatalog(schemas_dir=folder / "out" / "schemas")
        granted = Caller(subject="bench", client_id=None, scopes=frozenset({"get"}),
                         tools=("openapi:synthetic:get*",))
        everyone = rt.InvocationContext()
        caller = dataclasses.replace(everyone, caller=granted)
        started = time.perf_counter()
        shown = len(catalog.page(None, caller).tools)
        print(f"list, a caller's first listing (its grants' names not yet kept): "
              f"{(time.perf_counter() - started) * 1000:.1f} ms")
        for label, context in (("no OAuth", everyone), ("a caller", caller)):
            catalog.page(None, context)  # first page built (and kept) before timing

            async def page(context: Any = context) -> Any:
                return catalog.page(None, context)

            p50, p99 = percentiles(await timed(page, calls))
            print(f"list, {label}: p50 {p50:.3f} ms, p99 {p99:.3f} ms")
        from toolc_router.callers import may_use

        granted_count = sum(may_use(caller, catalog.tool_id(name) or name) for name in catalog.names())
        print(f"list: {granted_count} of {len(catalog.names())} tools granted, {shown} on the first page")


async def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    options.add_argument("--calls", type=int, default=2000)
    options.add_argument("--operations", type=int, default=1000)
    args = options.parse_args()
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    keys = Keys()
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        build = make_build(probe_catalog())
        build.config = build.config.model_copy(update={"gateway": auth(keys, {"probe": ("mcp:probe:*",)})})
        with load_router(write_router(build, folder / "probe")) as rt:
            await bench_verify(keys, args.calls)
            await bench_call(rt, keys, args.calls)
        await bench_list(keys, args.operations, min(args.calls, 200), folder / "list")


if __name__ == "__main__":
    asyncio.run(main())
