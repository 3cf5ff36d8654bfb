"""Benchmark (not a test): one task done with direct tool calls and with code mode, no model needed.

    .venv/bin/python bench/bench_codemode_task.py [--newest 20]

The task: "list the 20 newest issues of octo/demo, fetch each one's comments, count the comments per author",
against a loopback GitHub issues API of the tests' own (`tests/support/issues_api.py`, answers shaped as GitHub's)
through the generated router of `fixtures/openapi/issues.yaml`. Each way is run as the fixed plan a model would
follow, with every call made for real; the figures are the model round trips (requests to the model, the final
answer included) and the o200k tokens of what the tools return, which enters the model's context:

    direct, parallel calls   list the issues; then all comment lists in one turn (parallel tool calls); answer
    direct, one call a turn  list the issues; one comment list per turn; answer
    code mode                search the docs twice (list issues, list comments); run one program; answer

The results of both ways are checked to give the same counts (`issues_api.expected_counts`). Also printed: how
long the program takes to run (the first run starts the sandbox's worker; then the median of 5 runs, 21 calls each)
against the 21 direct calls made one after another.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from compiler.config import OpenApiConfig  # noqa: E402
from compiler.providers.tokens import count_text  # noqa: E402
from tests.support.issues_api import expected_counts, issues_api  # noqa: E402
from tests.support.router import catalog_from, load_router, make_build, write_router  # noqa: E402

ISSUES_API = OpenApiConfig(id="issues", path="fixtures/openapi/issues.yaml", base_url="${ISSUES_API_URL}")
CONTEXT = {"mode": "execution", "project_id": "bench", "spec_frozen": True, "spec_hash": "h"}
REPO = {"owner": "octo", "repo": "demo"}
PROGRAM = """import issues
newest = await issues.issues_list_for_repo(owner="octo", repo="demo", per_page={newest})
counts = {{}}
for item in newest:
    comments = await issues.issues_list_comments(owner="octo", repo="demo", issue_number=item["number"])
    for comment in comments:
        counts[comment["user"]["login"]] = counts.get(comment["user"]["login"], 0) + 1
print(dict(sorted(counts.items())))
"""
DOCS_QUERIES = ("list the issues of a repository", "list the comments of an issue")


@dataclass
class Way:
    name: str
    round_trips: int
    tool_calls: int
    result_tokens: int
    model_written_tokens: int


def shown(result: Any) -> str:
    """What a tool result puts in the model's context: its text content, as the served form carries it."""
    return "\n".join(block["text"] for block in result.content if block.get("type") == "text")


def counted(comment_lists: list[Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for comments in comment_lists:
        for comment in comments:
            counts[comment["user"]["login"]] = counts.get(comment["user"]["login"], 0) + 1
    return dict(sorted(counts.items()))


async def direct(router: Any, newest: int) -> tuple[Way, Way]:
    listed = await router.call_tool("openapi:issues:issues/list-for-repo", {**REPO, "per_page": newest})
    tokens = count_text(shown(listed))
    calls = [await router.call_tool("openapi:issues:issues/list-comments", {**REPO, "issue_number": item["number"]})
             for item in listed.structured]
    tokens += sum(count_text(shown(call)) for call in calls)
    assert counted([call.structured for call in calls]) == expected_counts(newest)
    written = count_text(json.dumps({**REPO, "per_page": newest})) + sum(
        count_text(json.dumps({**REPO, "issue_number": item["number"]})) for item in listed.structured)
    parallel = Way("direct, parallel calls", 3, 1 + len(calls), tokens, written)
    one_by_one = Way("direct, one call a turn", 2 + len(calls), 1 + len(calls), tokens, written)
    return parallel, one_by_one


async def code_mode(code: Any, newest: int) -> Way:
    tokens = sum(count_text(shown(code.docs(query, 2))) for query in DOCS_QUERIES)
    program = PROGRAM.format(newest=newest)
    ran = await code.execute(program)
    assert not ran.is_error, ran.error
    assert ran.content[0]["text"].strip() == str(expected_counts(newest))
    tokens += count_text(shown(ran))
    written = count_text(program) + sum(count_text(query) for query in DOCS_QUERIES)
    return Way("code mode", len(DOCS_QUERIES) + 2, 1 + newest, tokens, written)


async def run(newest: int) -> list[Way]:
    build = make_build(catalog_from(recordings=(), openapi=("issues",)), openapi=[ISSUES_API])
    with tempfile.TemporaryDirectory() as folder, issues_api() as (url, _served), \
            load_router(write_router(build, Path(folder) / "gen")) as rt:
        from toolc_router.codemode import CodeMode

        router = rt.Router(audit_sink=rt.MemoryAuditSink(), environ={**os.environ, "ISSUES_API_URL": url},
                           default_context=rt.InvocationContext(**CONTEXT))
        code = CodeMode(router)
        try:
            started = time.perf_counter()
            ways = [*await direct(router, newest)]
            direct_s = time.perf_counter() - started
            started = time.perf_counter()
            ways.append(await code_mode(code, newest))
            first_s = time.perf_counter() - started
            again = []
            for _ in range(5):
                started = time.perf_counter()
                assert not (await code.execute(PROGRAM.format(newest=newest))).is_error
                again.append(time.perf_counter() - started)
            print(f"<!-- direct calls {direct_s * 1000:.0f} ms; code mode first run (worker start, docs, program) "
                  f"{first_s * 1000:.0f} ms, then the program alone: median {statistics.median(again) * 1000:.0f} ms "
                  "-->")
        finally:
            await code.aclose()
            await router.aclose()
    return ways


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--newest", type=int, default=20)
    newest = parser.parse_args().newest
    ways = asyncio.run(run(newest))
    print(f"Task: the {newest} newest issues, each one's comments, comments per author "
          f"(same answer each way: {expected_counts(newest)})\n")
    print("| way | model round trips | tool calls | tokens of tool results in context | tokens the model writes |")
    print("|---|---:|---:|---:|---:|")
    for way in ways:
        print(f"| {way.name} | {way.round_trips} | {way.tool_calls} | {way.result_tokens:,} | "
              f"{way.model_written_tokens:,} |")
    base, coded = ways[0], ways[-1]
    print(f"\ncode mode: {base.result_tokens / coded.result_tokens:.0f}x fewer result tokens than direct calls")


if __name__ == "__main__":
    main()
