"""How long the hostile-input defences take: the numbers the tests check by behaviour, not by the clock (not a test).

    .venv/bin/python bench/bench_hostile.py [--runs 5]

    nesting      `shapes.nesting_over` on a model's JSON text crafted against it (escapes that never end a string,
                 a string that never ends, brackets then escapes), at 1x, 2x and 4x the size: best of `--runs`. One
                 linear pass: the time doubles with the size, and stays far under a call's budget.
    login        a PostgreSQL audit sink whose login the server refuses (a wrong password), `retry_for` 10 s: the
                 time until the first call is refused (before: the full 10 s, like an outage).
    deadlines    `toolc serve --head-timeout 1 --body-timeout 1`: the time until the server closes a socket that
                 never sends a byte, one that sends half a request head, and one that trickles a body.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compiler.providers.shapes import nesting_over  # noqa: E402
from tests.support.cli import run_toolc  # noqa: E402
from tests.support.loopback import recording_api  # noqa: E402
from tests.support.paths import FIXTURES  # noqa: E402
from tests.support.pg_server import postgres_server  # noqa: E402
from tests.support.router import load_router, make_build, probe_catalog, probe_server, write_router  # noqa: E402
from tests.support.serve import serve_env, serving_http  # noqa: E402

SHAPES = {
    "escapes that never end a string": lambda n: '["' + '\\"' * n,
    "a string that never ends": lambda n: '["' + "\\" * (2 * n + 1),
    "brackets, then escapes": lambda n: "[" * 70 + '"\\"' * n,
}


def nesting(runs: int) -> list[str]:
    rows = ["| text | 300k | 600k | 1.2M | per MB |", "|---|---:|---:|---:|---:|"]
    for name, make in SHAPES.items():
        times = []
        for n in (300_000, 600_000, 1_200_000):
            text = make(n)
            best = min(_timed(lambda text=text: nesting_over(text)) for _ in range(runs))
            times.append((best, len(text)))
        per_mb = times[-1][0] / (times[-1][1] / 1e6)
        rows.append(f"| {name} | " + " | ".join(f"{t * 1000:.1f} ms" for t, _ in times) + f" | {per_mb * 1000:.1f} ms |")
    return rows


def _timed(function: object) -> float:
    started = time.perf_counter()
    function()  # type: ignore[operator]
    return time.perf_counter() - started


def login() -> str:
    with tempfile.TemporaryDirectory() as folder, postgres_server() as pg, \
            load_router(write_router(make_build(probe_catalog(), router={"postgres": True}), Path(folder))) as rt:
        sink = rt.audit_pg.PostgresAuditSink(pg.dsn("Wr0ng-password"), retry_for=10.0)
        router = rt.Router(audit_sink=sink)
        router.set_server_factory("probe", probe_server)
        context = rt.InvocationContext(project_id="bench", spec_frozen=True, spec_hash="sha256:bench")
        started = time.perf_counter()
        refused = asyncio.run(router.call_tool("mcp:probe:echo", {"text": "x"}, context=context))
        waited = time.perf_counter() - started
        sink.close()
    assert refused.denied_by == "audit", refused
    return f"| refused login, retry_for 10 s | first call refused after {waited * 1000:.0f} ms |"


def deadlines() -> list[str]:
    rows = []
    with tempfile.TemporaryDirectory() as folder, recording_api() as api:
        project = Path(folder) / "toolc.yaml"
        project.write_text(f"output: out\nopenapi:\n  - {{id: params, path: {FIXTURES / 'openapi' / 'params.yaml'}, "
                           "base_url: '${PARAMS_API_URL}/v1'}\n")
        assert run_toolc("compile", "-c", project).exit_code == 0
        with serving_http(project, serve_env(api), "--head-timeout", "1", "--body-timeout", "1") as (url, _):
            port = int(url.rsplit(":", 1)[1])
            for name, sent in (("nothing sent", b""), ("half a request head", b"POST /tools/getPet/call HTTP/1.1\r\n"),
                               ("a body that trickles", b"POST /tools/getPet/call HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")):
                sock = socket.create_connection(("127.0.0.1", port))
                sock.settimeout(30)
                started = time.perf_counter()
                sock.sendall(sent)
                while sock.recv(4096):
                    pass
                rows.append(f"| {name} | closed after {time.perf_counter() - started:.2f} s (deadline 1 s) |")
                sock.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    print("\n".join(nesting(runs)))
    print()
    print("| defence | measured |\n|---|---|")
    print(login())
    print("\n".join(deadlines()))


if __name__ == "__main__":
    main()
