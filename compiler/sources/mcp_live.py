"""Live MCP servers → recording documents (the pipeline's `--live` source, and what `toolc record` writes).

    fetch_listings(servers, diagnostics, root=...) -> {server_id: {"server", "initialize", "tools_list_pages"}}

Every server is listed concurrently (`mcp_fetch.fetch_server` each); one that fails is reported and left out, the
others go on, unless `strict`, where the first failure stops the rest. The returned documents are canonical (keys
sorted, no timestamps) and redacted (no secret value, see `mcp_env`): `toolc record` writes exactly them, and
`pipeline.read_catalog` feeds exactly them to `sources.recording`, so a live compile and a compile of a fresh
recording cannot differ. Diagnostics are merged in the order the servers were given, whatever order they finished.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

import anyio
import orjson

from compiler.config import ServerConfig
from compiler.infra.diagnostics import CompilerError, Diagnostics
from compiler.infra.loading import check_depth
from compiler.infra.serialize import compact_json
from compiler.sources.mcp_fetch import Outcome, fetch_server

STOPPED_BY_STRICT = "TC514"
UNSTORABLE = "TC517"


def fetch_listings(servers: Sequence[ServerConfig], diagnostics: Diagnostics, *, root: Path | str,
                   strict: bool = False, progress: TextIO | None = None) -> dict[str, dict[str, Any]]:
    """The pipeline contract: one recording document per server that answered, keyed by server id."""
    outcomes = list_servers(servers, diagnostics, root=root, strict=strict, progress=progress)
    return {o.server.id: o.document for o in outcomes if o.document is not None}


def list_servers(servers: Sequence[ServerConfig], diagnostics: Diagnostics, *, root: Path | str,
                 strict: bool = False, progress: TextIO | None = None) -> list[Outcome]:
    """Like `fetch_listings`, with each server's outcome (timing, counts, own diagnostics) for record/health."""
    stream = progress if progress is not None else _terminal()
    outcomes = anyio.run(_list_all, list(servers), str(Path(root).resolve()), strict, stream)
    for outcome in outcomes:
        diagnostics.extend(outcome.diagnostics)
    return outcomes


async def _list_all(servers: list[ServerConfig], root: str, strict: bool, stream: TextIO | None) -> list[Outcome]:
    outcomes: dict[str, Outcome] = {}
    reporter = _Progress(stream, len(servers))
    with _quiet_sdk_logging():
        async with anyio.create_task_group() as group:

            async def one(server: ServerConfig) -> None:
                outcome = await fetch_server(server, root=root)
                if outcome.document is not None:
                    outcome.document = storable(outcome.document, outcome.diagnostics, server.id)
                outcomes[server.id] = outcome
                reporter.done(outcome)
                if strict and not outcome.ok:
                    group.cancel_scope.cancel()

            for server in servers:
                group.start_soon(one, server)
    reporter.close()
    ordered: list[Outcome] = []
    for server in servers:
        outcome = outcomes.get(server.id)
        if outcome is None:
            outcome = Outcome(server=server)
            outcome.diagnostics.error(STOPPED_BY_STRICT, "not listed: another server failed and --strict stops "
                                                         "at the first failure", source=server.id)
        ordered.append(outcome)
    return ordered


def storable(document: Any, diagnostics: Diagnostics, server: str) -> Any:
    """`canonical(document)`, or None with this server's diagnostic when JSON cannot hold it: nesting past
    `limits.max_depth` (TC131), or a number no JSON reader agrees on (TC517). An integer beyond 64 bits becomes
    a float, as orjson reads it from a recording (the SDK's parser keeps it exact, orjson cannot write it)."""
    try:
        check_depth(document, source=server)
        try:
            return canonical(document)
        except TypeError:  # orjson: "Integer exceeds 64-bit range"
            return canonical(orjson.loads(json.dumps(document, allow_nan=False)))
    except CompilerError as exc:
        diagnostics.add(exc.diagnostic)
    except (TypeError, ValueError) as exc:
        diagnostics.error(UNSTORABLE, f"the listing cannot be stored as JSON: {exc}", source=server)
    return None


def canonical(document: Any) -> Any:
    """The same data with every object's keys sorted: equal listings are equal dicts, and dump to equal bytes."""
    return orjson.loads(compact_json(document))


def _terminal() -> TextIO | None:
    return sys.stderr if sys.stderr.isatty() else None


class _Progress:
    """One line per finished server, on a terminal only (stderr); nothing when piped or captured."""

    def __init__(self, stream: TextIO | None, total: int) -> None:
        self.stream = stream
        self.total = total
        self.finished = 0
        if stream is not None and total:
            stream.write(f"toolc: listing {total} MCP server(s)…\n")
            stream.flush()

    def done(self, outcome: Outcome) -> None:
        self.finished += 1
        if self.stream is None:
            return
        if outcome.ok:
            detail = f"{outcome.tool_count} tools, {outcome.page_count} page(s)"
            mark = "ok"
        else:
            detail = next((d.message for d in outcome.diagnostics if d.severity.value == "error"), "failed")
            mark = "FAILED"
        self.stream.write(f"  [{self.finished}/{self.total}] {outcome.server.id}: {mark} "
                          f"({outcome.seconds:.1f}s) {detail[:160]}\n")
        self.stream.flush()

    def close(self) -> None:
        if self.stream is not None:
            self.stream.flush()


@contextmanager
def _quiet_sdk_logging() -> Iterator[None]:
    """The SDK logs (with tracebacks) what we turn into diagnostics; keep that off the user's terminal."""
    logger = logging.getLogger("mcp")
    handler = logging.NullHandler()
    previous = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = previous
