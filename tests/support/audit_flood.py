"""A flood of refused calls against `toolc serve --transport http`, watching the SQLite audit's files grow.

    python -m tests.support.audit_flood [CALLS] [CONCURRENCY]

prints the audit database's and its write-ahead log's sizes before, at the peak of, and after the flood (also
used by tests/serve/test_audit_flood.py). The project is the params OpenAPI fixture alone: a refused call never
reaches its API, so no server runs behind it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
import yaml

from tests.support.cli import run_toolc
from tests.support.paths import FIXTURES
from tests.support.serve import serve_env, serving_http

HOSTILE = "A" * 20_000
"""A refused argument of some size: the audit must not keep its text."""


def write_flood_project(folder: Path) -> Path:
    project = {
        "name": "flooded project",
        "output": "out",
        "openapi": [{"id": "params", "path": str(FIXTURES / "openapi" / "params.yaml"),
                     "base_url": "${PARAMS_API_URL}/v1"}],
    }
    path = folder / "toolc.yaml"
    path.write_text(yaml.safe_dump(project, sort_keys=False))
    result = run_toolc("compile", "-c", path)
    assert result.exit_code == 0, result.stderr
    return path


@dataclass
class Growth:
    """Sizes in bytes of the audit database and its WAL (`-wal`), sampled while the flood ran."""

    database: Path
    peak_wal: int = 0
    samples: list[int] = field(default_factory=list)

    def sizes(self) -> tuple[int, int]:
        return _size(self.database), _size(self.database.with_name(self.database.name + "-wal"))

    def sample(self) -> None:
        wal = self.sizes()[1]
        self.samples.append(wal)
        self.peak_wal = max(self.peak_wal, wal)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


@contextmanager
def watching(growth: Growth, every_s: float = 0.01) -> Iterator[Growth]:
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            growth.sample()
            stop.wait(every_s)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield growth
    finally:
        stop.set()
        watcher.join()
        growth.sample()


async def flood(url: str, calls: int, concurrency: int) -> Counter[int]:
    """`calls` refused calls, `concurrency` at a time: unknown tools, and a known one with a huge wrong-typed
    argument; returns the count of each status."""
    statuses: Counter[int] = Counter()
    bodies = {"unknown": b"{}", "hostile": json.dumps({"id": HOSTILE}).encode()}
    gate = asyncio.Semaphore(concurrency)
    limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx2.AsyncClient(base_url=url, timeout=120, limits=limits) as client:

        async def one(i: int) -> None:
            name, body = (f"no_such_tool_{i}", bodies["unknown"]) if i % 2 else ("getPet", bodies["hostile"])
            async with gate:
                response = await client.post(f"/tools/{name}/call", content=body,
                                             headers={"Content-Type": "application/json"})
            statuses[response.status_code] += 1

        await asyncio.gather(*(one(i) for i in range(calls)))
    return statuses


@contextmanager
def flooded_server(folder: Path) -> Iterator[tuple[str, Path]]:
    """`toolc serve --transport http` on the flood project; yields (base URL, audit database)."""
    project = write_flood_project(folder)
    database = folder / "audit.sqlite3"
    environ = serve_env("http://127.0.0.1:9", TOOLC_AUDIT_DB=str(database))
    with serving_http(project, environ, "--max-calls", "64") as (url, _):
        yield url, database


def main(calls: int, concurrency: int) -> None:
    with tempfile.TemporaryDirectory() as folder, flooded_server(Path(folder)) as (url, database):
        growth = Growth(database)
        before = growth.sizes()
        started = time.monotonic()
        with watching(growth):
            statuses = asyncio.run(flood(url, calls, concurrency))
        took = time.monotonic() - started
        after = growth.sizes()
        time.sleep(3.0)
        idle = growth.sizes()
        print(json.dumps({"calls": calls, "seconds": round(took, 2), "statuses": dict(statuses),
                          "before": before, "peak_wal": growth.peak_wal, "after": after, "idle_3s": idle,
                          "wal_bytes_per_call": round(growth.peak_wal / calls)}))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6_000, int(sys.argv[2]) if len(sys.argv) > 2 else 32)
    os._exit(0)
