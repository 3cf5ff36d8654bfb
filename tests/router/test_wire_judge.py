"""Independent judges of the wire. For every operation of the OpenAPI examples, Stripe and a Kubernetes sample, the
generated router sends one call (example arguments from the tool's input schema, `judge_examples`) to a raw
recorder; the recorded bytes are then judged twice:

1. by Stoplight Prism 5's request validator (`prism mock`, replayed byte for byte, `judge_prism`);
2. against a control request serialised independently from the document (`judge_control`, written from the
   specification's text; it shares no code with the router or the compiler).

Each operation is called twice when that differs: with every argument (nested ones too), and with only the
required ones (optional bodies left out: a required body must still go out). Zero violations are allowed. Not judged (counted, with the reason, in the printed summary): operations whose
example arguments could not be made valid for their input schema, and the documents' operations listed in
`NOT_JUDGED` below with their reasons.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from compiler.codegen.router.tables import env_name
from compiler.config import OpenApiConfig
from compiler.infra.diagnostics import Diagnostics
from compiler.infra.loading import load_document
from compiler.ir import Catalog, HttpBinding
from compiler.sources.openapi import read_openapi
from tests.servers.raw_http import RawRecorder, RawRequest, raw_http_server
from tests.support.judge_control import compare
from tests.support.judge_examples import arguments_for, required_only
from tests.support.judge_prism import Verdict, prism_mock, prism_or_skip, replay
from tests.support.paths import FIXTURES
from tests.support.router import load_router, make_build, write_router

OAI = FIXTURES / "corpus" / "oai-examples"
DOCUMENTS = {
    "oai-petstore": OAI / "v3.0" / "petstore.yaml",
    "oai-petstore-expanded": OAI / "v3.0" / "petstore-expanded.yaml",
    "oai-uspto": OAI / "v3.0" / "uspto.yaml",
    "oai-api-with-examples": OAI / "v3.0" / "api-with-examples.yaml",
    "oai-link-example": OAI / "v3.0" / "link-example.yaml",
    "oai-callback-example": OAI / "v3.0" / "callback-example.yaml",
    "oai-non-oauth-scopes": OAI / "v3.1" / "non-oauth-scopes.yaml",
    "oai2-petstore": OAI / "v2.0" / "yaml" / "petstore.yaml",
    "oai2-petstore-minimal": OAI / "v2.0" / "yaml" / "petstore-minimal.yaml",
    "oai2-petstore-simple": OAI / "v2.0" / "yaml" / "petstore-simple.yaml",
    "oai2-petstore-expanded": OAI / "v2.0" / "yaml" / "petstore-expanded.yaml",
    "oai2-petstore-external-docs": OAI / "v2.0" / "yaml" / "petstore-with-external-docs.yaml",
    "oai2-api-with-examples": OAI / "v2.0" / "yaml" / "api-with-examples.yaml",
    "oai2-uber": OAI / "v2.0" / "yaml" / "uber.yaml",
    "kubernetes": FIXTURES / "judge" / "kubernetes-sample.json",
    "stripe": FIXTURES / "judge" / "stripe-plain.json",
}
NOT_JUDGED: dict[str, str] = {}
"""`tool id` → why the judges don't see it."""


_NESTED_ARRAY = re.compile(r"\[\d+\]\[")
ARRAYS_OF_OBJECTS = "arrays of objects in a form body (`items[0][price]`, Stripe's encoding) are refused with 415"
ABSENT_OBJECTS = "an optional deepObject object that was not sent is rebuilt empty, so its 'required' fails"
NESTED_UNIONS = "a deepObject property under anyOf/oneOf is not rebuilt, so its nested 'required' fails"


def prism_findings(verdict: Verdict, sent: RawRequest) -> list[tuple[str, str | None]]:
    """Prism's violations, each with the Prism limitation that explains it (None: it stands). A limitation is only
    granted when the wire provably carries what Prism says is missing (its own deserialiser dropped it)."""
    if verdict.status < 400 or verdict.unjudged:
        return []
    form = sent.body.decode(errors="replace") if (sent.headers("content-type") or [""])[0].startswith(
        "application/x-www-form-urlencoded") else ""
    keys = [unquote(pair.split("=", 1)[0]) for pair in form.split("&") if pair]
    query_keys = [unquote(key) for key, _ in sent.query_pairs]
    detail = str(verdict.problem.get("detail", ""))
    if verdict.status == 415 and "JSON object array" in detail and any(_NESTED_ARRAY.search(k) for k in keys):
        return [("INVALID_CONTENT_TYPE", ARRAYS_OF_OBJECTS)]
    if not verdict.entries:
        return [(violation, None) for violation in verdict.violations]
    findings: list[tuple[str, str | None]] = []
    for entry in verdict.entries:
        location = [str(part) for part in entry.get("location", [])]
        name = f"{'.'.join(location[:2])}: {entry.get('code')}"
        missing = re.search(r"required property '([^']+)'", str(entry.get("message", "")))
        where = keys if location[:1] == ["body"] else query_keys if location[:1] == ["query"] else None
        if entry.get("code") == "required" and missing and where is not None and len(location) > 1 and not any(
                key == location[1] or key.startswith(location[1] + "[") for key in where):
            findings.append((name, ABSENT_OBJECTS))  # nothing of it was sent: Prism invented the object
            continue
        if entry.get("code") == "required" and missing and location[:1] == ["body"] and len(location) > 1:
            prefix = location[1] + "".join(f"[{part}]" for part in location[2:]) + f"[{missing.group(1)}]"
            if any(key == prefix or key.startswith(prefix + "[") for key in keys):
                findings.append((name, NESTED_UNIONS))
                continue
        findings.append((name, None))
    return findings


def _credentials(catalog: Catalog, source_id: str) -> dict[str, str]:
    values = {}
    for tool in catalog.tools:
        if isinstance(tool.binding, HttpBinding):
            for alternative in tool.binding.security:
                for scheme in alternative:
                    basic = scheme.type == "http" and scheme.scheme == "basic"
                    values[env_name(source_id, scheme.name)] = "user:pass" if basic else "tok-123"
    return values


@pytest.fixture(scope="module")
def recorder() -> Iterator[RawRecorder]:
    with raw_http_server() as server:
        yield server


@pytest.mark.slow
@pytest.mark.parametrize("source_id", list(DOCUMENTS))
async def test_every_operation_passes_both_judges(source_id: str, recorder: RawRecorder, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    prism_or_skip()
    path = DOCUMENTS[source_id]
    document: Any = load_document(path)
    config = OpenApiConfig(id=source_id, path=str(path), base_url=recorder.url)
    diagnostics = Diagnostics()
    source, tools = read_openapi(document, source_id=source_id, location=str(path), diagnostics=diagnostics,
                                 config=config)
    catalog = Catalog(sources=(source,), tools=tuple(sorted(tools, key=lambda t: t.id)))
    build = make_build(catalog, policy={"admin_min_risk": None}, openapi=[config])
    counts: Counter[str] = Counter()
    problems: list[str] = []
    with load_router(write_router(build, tmp_path / "gen")) as rt, \
            prism_mock(path, tmp_path / "prism.log") as port:
        router = rt.Router(audit_sink=rt.MemoryAuditSink(), environ=_credentials(catalog, source_id))
        context = rt.InvocationContext(mode="execution", project_id="judge", spec_frozen=True, spec_hash="sha256:x")

        async def judge(tool: Any, arguments: dict[str, Any]) -> None:
            recorder.clear()
            result = await router.call_tool(tool.id, arguments, context=context)
            if not recorder.requests:
                problems.append(f"{tool.id}: refused by the router: {result.error}")
                counts["refused by the router"] += 1
                return
            sent = recorder.last
            counts["judged"] += 1
            verdict = replay(port, sent)
            if verdict.unjudged:
                counts["prism: no verdict (no response declared)"] += 1
            before = len(problems)
            for violation, limitation in prism_findings(verdict, sent):
                if limitation is not None:
                    counts[f"prism limitation (the control judges it): {limitation}"] += 1
                    continue
                problems.append(f"{tool.id}: prism {verdict.status} {violation} {sent.request_line!r}")
                counts[f"prism: {violation.split(': ')[-1]}"] += 1
            counts["calls rejected by prism"] += len(problems) > before
            before = len(problems)
            for difference in compare(document, tool.name, arguments, sent):
                problems.append(f"{tool.id}: control: {difference}")
                counts["control: " + difference.split(":", 1)[0]] += 1
            counts["calls differing from the control"] += len(problems) > before

        for tool in catalog.tools:
            if tool.id in NOT_JUDGED:
                counts["not judged (listed)"] += 1
                continue
            full = arguments_for(tool.input_schema, source.definitions)
            if full is None:
                counts["not judged (no valid example arguments)"] += 1
                continue
            minimal = required_only(full, tool.input_schema, source.definitions)
            for arguments in (full, minimal) if minimal is not None else (full,):
                await judge(tool, arguments)
        await router.aclose()
    with capsys.disabled():
        print(f"\n[wire judge] {source_id}: {json.dumps(dict(sorted((k, v) for k, v in counts.items() if v)))}")
    assert not problems, "\n".join(problems[:40])
