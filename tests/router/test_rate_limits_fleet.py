"""Fleet rate limits: router processes sharing one PostgreSQL (tests/support/pg_server.py) share a bucket. 1,000
calls started at once from 4 processes, and from 2, admit the bucket's burst within one token (counted, not
timed: the rule refills one token an hour); every refusal is a `rate_limit` violation in the shared audit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from compiler.config import Config, GatewayConfig, RateLimitRule, RateLimitsConfig
from tests.support.paths import ROOT
from tests.support.pg_server import PgServer, postgres_or_skip
from tests.support.router import make_build, probe_catalog, write_router

psycopg = pytest.importorskip("psycopg")

BURST = 100
FLEET = RateLimitRule(tools="mcp:probe:*", calls=BURST, per="hour", fleet=True)


@pytest.fixture(scope="module")
def pg() -> Iterator[PgServer]:
    yield from postgres_or_skip("the PostgreSQL fleet tests")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    build = make_build(probe_catalog())
    build.config = Config(root=build.config.root, gateway=GatewayConfig(rate_limits=RateLimitsConfig(rules=(FLEET,))))
    return write_router(build, tmp_path_factory.mktemp("gen"))


def fresh_database(pg: PgServer) -> str:
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg.dsn(), autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    return pg.dsn(dbname=name)


def run_fleet(generated: Path, dsn: str, processes: int, calls: int) -> list[dict[str, str | None]]:
    """Start the processes, let each get ready (imported, connected to nothing yet), then start them together."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    workers = [subprocess.Popen([sys.executable, "-m", "tests.support.rate_limit_worker", str(generated), str(calls)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                cwd=ROOT, env=environment) for _ in range(processes)]
    for worker in workers:
        assert worker.stdin is not None and worker.stdout is not None
        worker.stdin.write(dsn + "\n")
        worker.stdin.flush()
        assert worker.stdout.readline().strip() == "ready"
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.close()
        worker.stdin = None  # closed: communicate() must not flush it again
    results = []
    for worker in workers:
        out, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err[-3000:]
        results += [json.loads(line) for line in out.splitlines()]
    return results


@pytest.mark.parametrize("processes", [4, 2])
def test_a_fleet_bucket_holds_across_processes(pg: PgServer, generated: Path, processes: int) -> None:
    dsn = fresh_database(pg)
    results = run_fleet(generated, dsn, processes, 1000 // processes)
    assert len(results) == 1000
    outcomes = Counter(result["denied_by"] for result in results)
    assert set(outcomes) <= {None, "rate_limit"}, [r["error"] for r in results if r["denied_by"] not in (None, "rate_limit")][:3]
    assert BURST <= outcomes[None] <= BURST + 1, outcomes  # within one token of the configured rate
    refusal = next(result["error"] for result in results if result["denied_by"] == "rate_limit")
    assert refusal is not None and "rate limit of 100 per hour for tools 'mcp:probe:*' (caller 'agent' across " \
        "the fleet) reached; retry in " in refusal
    with psycopg.connect(dsn) as connection:
        stored = Counter(connection.execute(
            "SELECT event_type, payload->>'gate' FROM task_audits WHERE event_type <> 'tool_invocation_end'").fetchall())
        buckets = connection.execute("SELECT count(*) FROM toolc_rate_buckets").fetchone()
    assert stored[("policy_violation", "rate_limit")] == outcomes["rate_limit"]
    assert stored[("tool_invocation_start", None)] == outcomes[None]
    assert buckets == (1,)  # one bucket for the caller, shared by every process
