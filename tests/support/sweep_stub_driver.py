"""Calls generated typed stubs, one per tool, and reports what each gave back. Run by the return-path sweep
(`tests/support/prism_sweep.py`) as `python -I sweep_stub_driver.py PYTHON_DIR CALLS_FILE`, with only the generated
`python/` folder importable (never `compiler` or `tests`).

CALLS_FILE holds `[{"tool_id": ..., "arguments": {...}}, ...]` (arguments keyed by the input schema's property
names). Each stub is found by the `Tool id:` line of its docstring and called with its own parameter names (read
from the `build_arguments` call in its body). `toolc_router.stubs.call_tool` is wrapped to keep the router's raw
`ToolResult`, so the sweep can judge the answer itself; the stub's code is not changed. One JSON line per call:

    tool_id, called (the router was reached), returned (the stub returned), error (type: text, when it raised),
    structured / is_error / router_error / denied_by (the router's raw result), reachable (the raw answer,
    structured or else its text, can be found in what the stub returned or raised; see `reachable`)
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import importlib
import json
import sys
from pathlib import Path
from typing import Any

CONTEXT_FIELDS = {"mode": "execution", "project_id": "sweep", "spec_frozen": True, "spec_hash": "sha256:sweep"}
_MISSING = object()


def stub_index(python_dir: Path) -> dict[str, tuple[str, str, dict[str, str]]]:
    """tool id -> (package, function, {wire name: parameter name}) for every stub of every source package."""
    index: dict[str, tuple[str, str, dict[str, str]]] = {}
    for tools in sorted(python_dir.glob("*/tools.py")):
        for node in ast.parse(tools.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.AsyncFunctionDef):
                continue
            doc = ast.get_docstring(node) or ""
            tool_id = next((line.strip()[len("Tool id: "):] for line in doc.splitlines()
                            if line.strip().startswith("Tool id: ")), None)
            if tool_id is not None:
                index[tool_id] = (tools.parent.name, node.name, _parameters(node))
    return index


def _parameters(function: ast.AsyncFunctionDef) -> dict[str, str]:
    names: dict[str, str] = {}
    for call in ast.walk(function):
        if isinstance(call, ast.Call) and getattr(call.func, "attr", None) == "build_arguments":
            for keyword in call.keywords:
                if isinstance(keyword.value, ast.Dict):
                    for key, value in zip(keyword.value.keys, keyword.value.values, strict=True):
                        if isinstance(key, ast.Constant) and isinstance(value, ast.Name):
                            names[str(key.value)] = value.id
    return names


def _children(value: Any) -> list[Any]:
    """What a caller can get at from `value`: attributes, items, an exception's cause and context, a pydantic
    model's dump, its extra fields and private attributes."""
    found: list[Any] = []
    if isinstance(value, dict):
        found.extend(value.values())
    elif isinstance(value, list | tuple):
        found.extend(value)
    if isinstance(value, BaseException):
        found.extend([value.args, value.__cause__, value.__context__, getattr(value, "__notes__", None)])
    if hasattr(value, "model_dump") and not isinstance(value, type):
        for options in ({"by_alias": True, "exclude_unset": True}, {"by_alias": True}):
            try:
                found.append(value.model_dump(mode="json", **options))
            except Exception:  # a model that cannot dump itself hides nothing more
                continue
        found.append(getattr(value, "__pydantic_extra__", None))
        found.append(getattr(value, "__pydantic_private__", None))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        found.extend(getattr(value, field.name, None) for field in dataclasses.fields(value))
    elif hasattr(value, "__dict__") and not isinstance(value, type):
        found.extend(vars(value).values())
    for slot in getattr(type(value), "__slots__", ()):
        found.append(getattr(value, slot, None))
    return found


def reachable(raw: Any, start: Any) -> bool:
    """Whether a value equal to `raw` (the whole answer) is among what `start` exposes, at most 6 steps away."""
    seen: set[int] = set()
    level = [start]
    for _ in range(7):
        following = []
        for value in level:
            if value is None or id(value) in seen:
                continue
            seen.add(id(value))
            if value is raw or (type(value) is type(raw) and value == raw):
                return True
            if isinstance(value, str | int | float | bool | bytes):
                continue
            following.extend(_children(value))
        level = following
    return False


async def call_one(index: dict[str, tuple[str, str, dict[str, str]]], call: dict[str, Any],
                   last: dict[str, Any], support: Any) -> dict[str, Any]:
    tool_id, arguments = call["tool_id"], call["arguments"]
    report: dict[str, Any] = {"tool_id": tool_id, "called": False, "returned": False}
    if tool_id not in index:
        return {**report, "error": "harness: no stub names this tool id"}
    package, function_name, names = index[tool_id]
    function = getattr(importlib.import_module(f"{package}.tools"), function_name)
    unknown = sorted(set(arguments) - set(names))
    if unknown:
        return {**report, "error": f"harness: the stub has no parameter for {unknown}"}
    last.clear()
    outcome: Any = _MISSING
    try:
        outcome = await function(**{names[key]: value for key, value in arguments.items()},
                                 context=support.InvocationContext(**CONTEXT_FIELDS))
        report["returned"] = True
    except Exception as error:  # what the stub raised is the finding
        outcome = error
        report["error"] = f"{type(error).__name__}: {str(error)[:600]}"
    result = last.get("result")
    if result is not None:
        report.update(called=True, structured=result.structured, is_error=result.is_error,
                      router_error=result.error, denied_by=result.denied_by,
                      text=next((c.get("text") for c in result.content if isinstance(c, dict)), None))
        raw = result.structured if result.structured is not None else report["text"]
        report["reachable"] = raw is not None and reachable(raw, outcome)
    return report


async def main(python_dir: Path, calls_file: Path) -> None:
    support = importlib.import_module("toolc_router.stubs")
    original = support.call_tool
    last: dict[str, Any] = {}

    async def keep_result(tool_id: str, arguments: dict[str, Any], *, context: Any = None) -> Any:
        last["result"] = result = await original(tool_id, arguments, context=context)
        return result

    support.call_tool = keep_result
    index = stub_index(python_dir)
    for call in json.loads(calls_file.read_text(encoding="utf-8")):
        print(json.dumps(await call_one(index, call, last, support), default=repr), flush=True)
    await importlib.import_module("toolc_router").default_router().aclose()


if __name__ == "__main__":
    sys.path.insert(0, sys.argv[1])
    asyncio.run(main(Path(sys.argv[1]), Path(sys.argv[2])))
