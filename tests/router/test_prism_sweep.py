"""The return-path sweep (issue 21): GitHub, Stripe and Kubernetes, answered by Stoplight Prism in its static
example mode (`prism mock` without `-d`: a response's own example when the document has one, else an example
Prism builds from the schema), called GET by GET with arguments built from each tool's input schema

(a) through the generated typed stubs (a child process that imports only the generated `python/` folder), and
(b) through `toolc serve --transport http`, by the official `mcp` client (`mcp.Client`, Streamable HTTP).

Must hold: 0 client rejections, 0 stubs stricter than their JSON Schema (a stub that raises on an answer which
passes the tool's output schema, or refuses arguments which pass its input schema), and for every answer that
breaks the document's own schema, the data reachable by the caller (a value equal to the whole answer among what
the stub returned or raised, `sweep_stub_driver.reachable`; over MCP, in `structuredContent` or a text block).
Floors, so the sweep cannot pass by calling nothing: every sampled GET is called both ways, and most calls get a
2xx answer.

Sampling, for CI time: each document's GET operations sorted by operationId, every k-th from the first, k =
ceil(GETs / SWEEP_PER_DOCUMENT) (`prism_sweep.sample_gets`); the document is cut down to those operations and the
definitions they reach (`prism_sweep.pruned`) before toolc compiles it and Prism serves it. `TOOLC_SWEEP_PER_DOCUMENT=
1000` sweeps every GET (GitHub 639, Stripe 197, Kubernetes 551); `TOOLC_SWEEP_REPORT=DIR` writes every finding to
`DIR/<document>.json`. Stripe's copy for Prism has its response schemas
inlined three references deep (`prism_sweep.for_prism`: Prism does not load Stripe's references), so its answers
are `null` below that depth.

Each call is classified (the printed summary and the assertion message name the tool, the answer and the error):

    typed ok                                   the answer passes the tool's output schema and the stub returned
    stub stricter than its JSON Schema         it passes, and the stub raised (or refused valid arguments)
    answer breaks the document's schema, ...   it does not pass; "data reachable" or "data hidden" from the caller
    HTTP error answer / refused by the router  no 2xx answer (Prism refused the request, or the router did)

and through `toolc serve`: client rejection (the `mcp` client raised), data not reaching the caller (neither
`structuredContent` nor a text block holds the answer the stub run saw), ok, answer breaks the document's schema
(data reachable), each possibly "as an error result" (`isError` with the data in it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pydantic
import pytest

from tests.support.judge_prism import prism_mock, prism_or_skip
from tests.support.paths import FIXTURES
from tests.support.prism_sweep import (
    Finding,
    compile_sample,
    environment,
    for_prism,
    judge_served,
    judge_stub,
    pruned,
    run_served,
    run_stubs,
    sample_gets,
    tally,
)
from tests.support.sweep_stub_driver import reachable

CORPUS = FIXTURES / "corpus" / "openapi"
SWEEP_PER_DOCUMENT = int(os.environ.get("TOOLC_SWEEP_PER_DOCUMENT", "60"))
PRISM_INLINE_DEPTH = {"stripe": 3}
"""Documents whose references Prism cannot load: how deep their response schemas are inlined for Prism."""
FAILURES = ("harness", "stub stricter than its JSON Schema", "stub refused valid arguments",
            "answer breaks the document's schema, data hidden", "client rejection", "data not reaching the caller")



def _examples(findings: list[Finding], category: str, limit: int = 3) -> list[str]:
    return [f"{f.tool_id}: {f.detail} | answer {json.dumps(f.answer)[:400]}" for f in findings
            if f.category == category][:limit]


@pytest.mark.slow
@pytest.mark.servers
@pytest.mark.parametrize("name", ["github", "stripe", "kubernetes"])
async def test_every_sampled_get_reaches_the_caller(name: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    prism_or_skip()
    document = json.loads((CORPUS / f"{name}.json").read_text())
    operations = sample_gets(document, SWEEP_PER_DOCUMENT)
    sample = pruned(document, operations)
    (tmp_path / f"{name}.json").write_text(json.dumps(sample))
    (tmp_path / f"{name}.prism.json").write_text(json.dumps(for_prism(sample, operations,
                                                                      PRISM_INLINE_DEPTH.get(name))))
    project = compile_sample(tmp_path, name, tmp_path / f"{name}.json")
    assert len(project.tools) == len(operations), "every sampled GET is a tool"
    with prism_mock(tmp_path / f"{name}.prism.json", tmp_path / "prism.log", "-v", "warn") as port:
        environ = environment(project, f"http://127.0.0.1:{port}")
        stub_reports = run_stubs(project, environ)
        served_reports = await run_served(project, environ)

    stubs = [judge_stub(project, tool_id, report) for tool_id, report in sorted(stub_reports.items())]
    raw = {tool_id: report["structured"] if report.get("structured") is not None else report.get("text")
           for tool_id, report in stub_reports.items()}
    by_tool = {finding.tool_id: finding for finding in stubs}
    served = [judge_served(project, tool_id, report, by_tool[tool_id], raw.get(tool_id))
              for tool_id, report in sorted(served_reports.items())]
    stub_counts, served_counts = tally(stubs), tally(served)
    with capsys.disabled():
        print(f"\n[prism sweep] {name}: {len(operations)} GETs sampled, "
              f"not called {project.not_called}\n  stubs: {json.dumps(dict(sorted(stub_counts.items())))}\n"
              f"  serve: {json.dumps(dict(sorted(served_counts.items())))}")

    if os.environ.get("TOOLC_SWEEP_REPORT"):  # every finding, for people hunting the bugs behind them
        folder = Path(os.environ["TOOLC_SWEEP_REPORT"])
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.json").write_text(json.dumps(
            {"stubs": [vars(f) for f in stubs], "serve": [vars(f) for f in served],
             "arguments": project.arguments, "not_called": project.not_called}, indent=1, default=repr))

    called = len(project.arguments)
    assert called >= 0.9 * len(operations), project.not_called
    assert len(stubs) == called and len(served) == called
    for counts in (stub_counts, served_counts):
        answered = called - counts["HTTP error answer"] - counts["refused by the router"]
        assert answered > called / 2, counts
    problems = [line for category in FAILURES for findings in (stubs, served)
                for line in _examples(findings, category, limit=5)]
    assert not problems, "\n".join(problems)


class _AnswerError(Exception):
    def __init__(self, answer: object) -> None:
        super().__init__("the answer does not fit")
        self.structured = answer


def test_reachable_means_the_whole_answer() -> None:
    """The sweep's notion of "the data is reachable": the whole answer, not pydantic's fragments of it."""
    answer = {"id": "7", "items": [{"when": "2024-01-02T03:04:05.000Z"}], "extra": None}

    class Strict(pydantic.BaseModel):
        id: int

    class Lenient(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(extra="allow")
        id: str

    with pytest.raises(pydantic.ValidationError) as refused:
        Strict.model_validate({"id": "x", **{k: v for k, v in answer.items() if k != "id"}})
    assert not reachable(answer, refused.value)
    assert reachable(answer, _AnswerError(answer))
    assert reachable(answer, RuntimeError("wrapped")) is False
    assert reachable(answer, Lenient.model_validate(answer))
    assert not reachable(answer, Strict.model_validate(answer))  # "7" became 7: not the answer as sent


def test_the_sample_is_every_kth_get_by_operation_id() -> None:
    paths = {f"/p{i}": {"get": {"operationId": f"op{i:03d}"}, "post": {"operationId": f"w{i}"}} for i in range(10)}
    assert [op.operation_id for op in sample_gets({"paths": paths}, 4)] == ["op000", "op003", "op006", "op009"]
    assert len(sample_gets({"paths": paths}, 100)) == 10
