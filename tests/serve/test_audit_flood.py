"""A flood of refused calls against `toolc serve` (issue 22, item 6): the SQLite audit's write-ahead log stays
bounded while it lasts and is given back once the server is idle, and a refused call's rows keep no argument
value, so the audit grows with the number of calls, not with what the caller sends."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from tests.support.audit_flood import HOSTILE, Growth, flood, flooded_server, watching
from tests.support.serve import audit_rows

CALLS = 3_000
WAL_BOUND = 8 * 1024 * 1024
"""The sink's WAL limit (4 MiB) plus what a flood writes while a checkpoint waits for its turn."""


def test_a_flood_of_refused_calls_keeps_the_audit_log_bounded_and_gives_it_back(tmp_path: Path) -> None:
    with flooded_server(tmp_path) as (url, database):
        growth = Growth(database)
        with watching(growth):
            statuses = asyncio.run(flood(url, CALLS, concurrency=32))
        assert statuses == {404: CALLS // 2, 422: CALLS // 2}
        assert growth.peak_wal <= WAL_BOUND, f"the WAL grew to {growth.peak_wal / 2**20:.1f} MiB for {CALLS} calls"
        deadline = time.monotonic() + 10
        while growth.sizes()[1] > 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert growth.sizes()[1] == 0, "an idle server keeps its WAL"
        rows = audit_rows(database.parent / "toolc.yaml", database)
    assert len(rows) == 2 * CALLS
    assert {kind for _, kind, _, _ in rows} == {"policy_decision", "policy_violation"}
    refused = [payload for _, _, tool, payload in rows if tool == "openapi:params:getPet"]
    assert len(refused) == CALLS and all(payload["gate"] == "validation" for payload in refused)
    assert not any(HOSTILE[:16] in payload["reason"] for payload in refused), "a refused argument's value was kept"
    assert refused[0]["reason"].startswith("invalid arguments: /id: ")
