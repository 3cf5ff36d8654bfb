"""The return-path sweep's harness (`tests/router/test_prism_sweep.py`): real documents, answered by Stoplight Prism
in its static example mode, called through the typed stubs and through `toolc serve`.

Each document is cut down to a deterministic sample of its GET operations (`sample_gets`) and the definitions they
reach (`pruned`): Prism's start-up and `toolc compile` both grow with the document, and Prism never finishes loading
all of Stripe. What is left is the document's own text for those operations, responses and examples included.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
from mcp import Client

from compiler.codegen.router.tables import env_name
from tests.support.cli import compiled_project
from tests.support.judge_examples import Examples, arguments_for, required_only
from tests.support.serve import serving_http

DRIVER = Path(__file__).with_name("sweep_stub_driver.py")
URL_VARIABLE = "SWEEP_API_URL"

_SECTIONS = ("components", "definitions", "parameters", "responses")
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


@dataclass(frozen=True)
class Operation:
    path: str
    operation_id: str


def get_operations(document: Mapping[str, Any]) -> list[Operation]:
    """Every GET operation of the document, sorted by operationId (the tool id's last part)."""
    found = [Operation(path, str(item["get"].get("operationId") or f"GET {path}"))
             for path, item in document.get("paths", {}).items()
             if isinstance(item, dict) and isinstance(item.get("get"), dict)]
    return sorted(found, key=lambda op: (op.operation_id, op.path))


def sample_gets(document: Mapping[str, Any], cap: int) -> list[Operation]:
    """At most `cap` GET operations: every k-th by operationId, k = ceil(count / cap), starting with the first."""
    operations = get_operations(document)
    step = max(1, math.ceil(len(operations) / cap))
    return operations[::step]


def _refs(node: Any) -> Iterator[str]:
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("$ref"), str):
                yield item["$ref"]
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _target(document: Mapping[str, Any], ref: str) -> Any:
    node: Any = document
    for token in ref[2:].split("/"):
        node = node[token.replace("~1", "/").replace("~0", "~")]
    return node


def pruned(document: Mapping[str, Any], operations: list[Operation]) -> dict[str, Any]:
    """The document with only `operations` (their GET, the path item's shared parameters) and the local definitions
    they reach; security schemes and every other top-level key are kept as they are, except webhooks (no call
    goes to them)."""
    result = {key: value for key, value in document.items() if key not in ("webhooks", "x-webhooks")}
    kept = {op.path for op in operations}
    result["paths"] = {path: {key: value for key, value in item.items() if key not in _METHODS or key == "get"}
                       for path, item in document["paths"].items() if path in kept}
    reached: set[str] = set()
    pending = set(_refs([value for key, value in result.items() if key not in _SECTIONS]))
    while pending:
        ref = pending.pop()
        if ref in reached or not ref.startswith("#/"):
            continue
        reached.add(ref)
        pending |= set(_refs(_target(document, ref)))
    if isinstance(document.get("components"), dict):
        result["components"] = {kind: entries if kind == "securitySchemes" or not isinstance(entries, dict) else
                                {k: v for k, v in entries.items() if f"#/components/{kind}/{k}" in reached}
                                for kind, entries in document["components"].items()}
    for section in _SECTIONS[1:]:
        if isinstance(document.get(section), dict):
            result[section] = {k: v for k, v in document[section].items() if f"#/{section}/{k}" in reached}
    return result


def first_branches(node: Any) -> None:
    """Keep only the first branch of every `anyOf`/`oneOf` under `node`, in place. Prism's static examples
    (openapi-sampler) take the first branch anyway, so its answers do not change; what goes is most of what
    Prism cannot load: Stripe's expandable fields (`anyOf: [id string, $ref object]`) make every object reach
    every other one."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in ("anyOf", "oneOf"):
                if isinstance(item.get(key), list):
                    del item[key][1:]
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def conforms(value: Any, schema: Mapping[str, Any], definitions: Mapping[str, Any]) -> str | None:
    """None when `value` passes the tool's JSON Schema (with its source's shared definitions), else the first
    violation as `path: message`."""
    validator = jsonschema.Draft202012Validator({**schema, "$defs": dict(definitions)})
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is None:
        return None
    where = "/" + "/".join(str(part) for part in error.absolute_path)
    return f"{where}: {error.message[:300]}"


def _inlined(node: Any, document: Mapping[str, Any], depth: int, limit: int) -> Any:
    """`node` with every local `$ref` replaced by its target, `limit` references deep; deeper ones become `{}`."""
    if isinstance(node, list):
        return [_inlined(item, document, depth, limit) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if not (isinstance(ref, str) and ref.startswith("#/")):
        return {key: _inlined(value, document, depth, limit) for key, value in node.items()}
    if depth >= limit:
        return {}
    target = _inlined(_target(document, ref), document, depth + 1, limit)
    siblings = {key: _inlined(value, document, depth, limit) for key, value in node.items() if key != "$ref"}
    return {**target, **siblings} if isinstance(target, dict) else target


def for_prism(document: Mapping[str, Any], operations: list[Operation], inline_depth: int | None) -> dict[str, Any]:
    """Prism's copy of the pruned document. With `inline_depth` (Stripe), Prism cannot load the references
    themselves (it did not start within 10 minutes on Stripe's sampled GETs, cycles cut or not), so each 2xx
    response's schema is inlined `inline_depth` references deep (deeper: `{}`, which Prism answers with `null`),
    after keeping only the first `anyOf`/`oneOf` branch (`first_branches`); error responses are left out. Prism's
    static answers are what it would have generated from the full schema down to that depth."""
    copy: dict[str, Any] = json.loads(json.dumps(document))
    if inline_depth is None:
        return copy
    for section in (copy.get("components", {}).get("schemas"), copy.get("definitions")):
        first_branches(section)
    for item in copy["paths"].values():
        operation = item["get"]
        responses = {}
        for code, response in operation.get("responses", {}).items():
            if not str(code).startswith("2"):
                continue
            response = dict(_target(copy, response["$ref"]) if "$ref" in response else response)
            if isinstance(response.get("content"), dict):
                response["content"] = {
                    media: {**body, **({"schema": _inlined(body["schema"], copy, 0, inline_depth)}
                                       if "schema" in body else {})}
                    for media, body in response["content"].items()}
            if "schema" in response:
                response["schema"] = _inlined(response["schema"], copy, 0, inline_depth)
            responses[code] = response
        operation["responses"] = responses
    return pruned(copy, operations)


@dataclass
class Project:
    """A sampled document compiled by `toolc compile`, its tools and the arguments each is called with."""

    folder: Path
    name: str
    output: Path
    tools: dict[str, dict[str, Any]]
    definitions: dict[str, Any]
    arguments: dict[str, dict[str, Any]]
    not_called: dict[str, str] = field(default_factory=dict)

    @property
    def config(self) -> Path:
        return self.folder / "toolc.yaml"


def compile_sample(folder: Path, name: str, document_path: Path) -> Project:
    """`toolc compile` on the sampled document, its base URL `${SWEEP_API_URL}` (Prism's, set when called)."""
    config = {"name": f"prism sweep {name}", "output": "out", "targets": ["openai-chat"],
              "openapi": [{"id": name, "path": str(document_path), "base_url": "${" + URL_VARIABLE + "}"}],
              "policy": {"admin_min_risk": None}}
    compiled_project(folder, config, "--quiet")
    catalog = json.loads((folder / "out" / "catalog.json").read_text())
    tools = {tool["id"]: tool for tool in catalog["tools"]}
    source = next(s for s in catalog["sources"] if s["id"] == name)
    project = Project(folder, name, folder / "out", tools, source.get("definitions") or {}, {})
    for tool_id, tool in sorted(tools.items()):
        full = arguments_for(tool["input_schema"], project.definitions)
        if full is None:
            project.not_called[tool_id] = "no valid example arguments"
            continue
        arguments = required_only(full, tool["input_schema"], project.definitions) or full
        project.arguments[tool_id] = unambiguous_on_the_wire(arguments, tool, project.definitions)
    return project


def unambiguous_on_the_wire(arguments: dict[str, Any], tool: Mapping[str, Any],
                            definitions: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments`, with a `oneOf` parameter that has a string branch given a (non-numeric) string. A path, query,
    header or cookie value travels as text: GitHub's `workflow_id` (`oneOf: [integer, string]`) sent as `1` is
    valid under both branches once Prism reads it back, and Prism refuses the request (422)."""
    examples = Examples(definitions)
    properties = tool["input_schema"].get("properties", {})
    outside_body = {arg["name"] for arg in tool["binding"].get("arguments", ()) if arg.get("location") != "body"}
    result = dict(arguments)
    for name, value in arguments.items():
        branches = examples.resolve(properties.get(name, {})).get("oneOf") if name in outside_body else None
        strings = [b for b in map(examples.resolve, branches or ()) if isinstance(b, dict) and b.get("type") == "string"]
        if strings and not isinstance(value, str):
            result[name] = examples.value(strings[0])
    validator = jsonschema.Draft202012Validator({**tool["input_schema"], "$defs": dict(definitions)})
    return result if validator.is_valid(result) else arguments


def environment(project: Project, url: str) -> dict[str, str]:
    """The process environment for the router: Prism's URL and a credential for every security scheme."""
    environ = {key: value for key, value in os.environ.items() if not key.startswith("TOOLC_")}
    environ[URL_VARIABLE] = url
    for tool in project.tools.values():
        for alternative in tool["binding"].get("security") or ():
            for scheme in alternative:
                basic = scheme.get("type") == "http" and scheme.get("scheme") == "basic"
                environ[env_name(project.name, scheme["name"])] = "user:pass" if basic else "tok-123"
    return environ


def run_stubs(project: Project, environ: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Every tool through its typed stub, in a child process that sees only the generated `python/` folder."""
    calls = project.folder / "calls.json"
    calls.write_text(json.dumps([{"tool_id": tool_id, "arguments": arguments}
                                 for tool_id, arguments in sorted(project.arguments.items())]))
    done = subprocess.run([sys.executable, "-I", str(DRIVER), str(project.output / "python"), str(calls)],
                          cwd=project.folder, env=environ, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    reports = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {report["tool_id"]: report for report in reports}


async def run_served(project: Project, environ: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Every tool through `toolc serve --transport http`, called by the official `mcp` client."""
    served = json.loads((project.output / "python" / "toolc_router" / "_serve.json").read_text())["tools"]
    names = {entry["id"]: name for name, entry in served.items()}
    reports: dict[str, dict[str, Any]] = {}
    with serving_http(project.config, environ) as (url, _):
        async with Client(f"{url}/mcp", read_timeout_seconds=120) as client:
            cursor: str | None = None
            while True:  # list every page first, as a client does, so each output schema is known
                page = await client.list_tools(cursor=cursor)
                cursor = page.next_cursor
                if not cursor:
                    break
            for tool_id, arguments in sorted(project.arguments.items()):
                try:
                    result = await client.call_tool(names[tool_id], arguments)
                except RuntimeError as rejection:
                    reports[tool_id] = {"rejected": f"{rejection}"[:600]}
                    continue
                texts = [block.text for block in result.content if getattr(block, "type", "") == "text"]
                reports[tool_id] = {"is_error": result.is_error, "structured": result.structured_content,
                                    "texts": texts}
    return reports


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


@dataclass
class Finding:
    tool_id: str
    category: str
    detail: str
    answer: Any = None


def judge_stub(project: Project, tool_id: str, report: dict[str, Any]) -> Finding:
    """One typed-stub call, classified (the categories of the test's docstring)."""
    error = str(report.get("error") or "")
    if not report.get("called"):
        kind = "harness" if error.startswith("harness:") else "stub refused valid arguments"
        return Finding(tool_id, kind, error)
    raw = report["structured"] if report.get("structured") is not None else report.get("text")  # text: not JSON
    if report.get("denied_by") or (report.get("is_error") and not str(report.get("router_error")).startswith("HTTP ")):
        return Finding(tool_id, "refused by the router", f"{report.get('denied_by')}: {report.get('router_error')}")
    if report.get("is_error"):
        return Finding(tool_id, "HTTP error answer", f"{report.get('router_error')}: {str(raw)[:300]}", raw)
    schema = project.tools[tool_id].get("output_schema")
    broken = None if schema is None or raw is None else conforms(raw, schema, project.definitions)
    if broken is None:
        if report.get("returned"):
            return Finding(tool_id, "typed ok", "")
        return Finding(tool_id, "stub stricter than its JSON Schema", error, raw)
    reach = "data reachable" if report.get("reachable") else "data hidden"
    how = "returned" if report.get("returned") else f"raised {error}"
    return Finding(tool_id, f"answer breaks the document's schema, {reach}", f"{broken} | stub {how}", raw)


def judge_served(project: Project, tool_id: str, report: dict[str, Any], stub: Finding, raw: Any) -> Finding:
    """One call through `toolc serve`, classified. `stub` and `raw` are the same call's finding and answer in the
    stub run: Prism answers the same request with the same static example."""
    if "rejected" in report:
        return Finding(tool_id, "client rejection", report["rejected"], raw)
    texts = report["texts"]
    if report["is_error"] and stub.category in ("HTTP error answer", "refused by the router"):
        return Finding(tool_id, stub.category, " ".join(texts)[:300])
    received = [report["structured"], *(_parsed(text) for text in texts), *texts]
    if raw is not None and not any(item == raw for item in received if item is not None):
        return Finding(tool_id, "data not reaching the caller", f"got {str(received)[:300]}", raw)
    schema = project.tools[tool_id].get("output_schema")
    broken = schema is not None and raw is not None and conforms(raw, schema, project.definitions) is not None
    category = "answer breaks the document's schema, data reachable" if broken else "ok"
    return Finding(tool_id, category + (" (as an error result)" if report["is_error"] else ""), " ".join(texts)[:300])


def tally(findings: list[Finding]) -> Counter[str]:
    return Counter(finding.category for finding in findings)
