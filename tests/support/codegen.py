"""Helpers for the stub generator's tests: build a catalog from recorded listings, write generated files,
and run generated code in a subprocess that cannot import `compiler`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from compiler.build import Build
from compiler.codegen.router.router_package import static_files
from compiler.config import Config
from compiler.infra.diagnostics import Diagnostics
from compiler.ir import Catalog
from compiler.refs import RefResolver
from compiler.sources.recording import read_recording
from tests.support.paths import ROOT

RECORDINGS = sorted((ROOT / "fixtures" / "mcp").glob("*.json"))
HOSTILE = ROOT / "fixtures" / "codegen" / "hostile.json"
BIN = Path(sys.executable).parent


def build_from(documents: Iterable[tuple[Any, str]], previous_output: dict[str, bytes] | None = None) -> Build:
    diagnostics = Diagnostics()
    sources, tools = [], []
    for document, location in documents:
        source, source_tools = read_recording(document, source_id=None, location=location, diagnostics=diagnostics)
        sources.append(source)
        tools.extend(source_tools)
    catalog = Catalog(tuple(sorted(sources, key=lambda s: s.id)), tuple(sorted(tools, key=lambda t: t.id)))
    return Build(config=Config(), catalog=catalog, resolver=RefResolver(diagnostics), diagnostics=diagnostics,
                 targets=(), previous_output=dict(previous_output or {}))


def build_from_files(paths: Iterable[Path]) -> Build:
    return build_from((json.loads(path.read_text()), path.name) for path in paths)


_SHIM = '''"""Test-only stand-in for the generated router, matching the contract the stubs rely on."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class InvocationContext:
    user: str | None = None


@dataclass
class ToolResult:
    structured: Any | None = None
    content: list[Any] = field(default_factory=list)
    is_error: bool = False


async def call_tool(tool_id: str, arguments: dict[str, Any], *, context: InvocationContext | None = None) -> ToolResult:
    raise RuntimeError("no router in this test")
'''


def router_files(build: Build) -> dict[str, bytes]:
    """The real router package when the router generator is there, else a contract-shaped shim.

    The shim still carries the real `toolc_router/stubs.py` (the stubs' support code), which needs only the
    contract the shim provides."""
    try:
        from compiler.codegen.router.router_package import generate_router

        files = generate_router(build)
    except ImportError:
        files = {}
    if "toolc_router/__init__.py" in files:
        return files
    return {"toolc_router/__init__.py": _SHIM.encode(), "toolc_router/stubs.py": static_files()["stubs.py"].read_bytes(),
            "toolc_router/py.typed": b""}


def write_files(folder: Path, files: dict[str, bytes]) -> None:
    for relative, content in files.items():
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)


def run_isolated(folder: Path, code: str) -> subprocess.CompletedProcess[str]:
    """Run `code` with `python -I` (no user site, no PYTHONPATH, no cwd on sys.path) and only `folder` added."""
    script = f"import sys\nsys.path.insert(0, {str(folder)!r})\n" + code
    return subprocess.run([sys.executable, "-I", "-c", script], cwd=folder, capture_output=True, text=True,
                          timeout=300, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})


def tool(binary: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / binary), *args], cwd=cwd, capture_output=True, text=True, timeout=600)


CALL_DRIVER = '''
import ast, asyncio, importlib, inspect, json, types
package = importlib.import_module({package!r})
support = importlib.import_module("toolc_router.stubs")
calls = []

async def fake_call_tool(tool_id, arguments, *, context=None):
    calls.append({{"tool_id": tool_id, "arguments": arguments, "context": context}})
    return types.SimpleNamespace(structured={{}}, content=[], is_error=False)

def value_for(function, parameter):
    kind = parameter.annotation.removesuffix(" | None")
    if kind in ("str", "_Any"):
        return "v:" + function + ":" + parameter.name
    if kind.startswith("_Literal["):
        return ast.literal_eval(kind.removeprefix("_Literal"))[0] if "," in kind else ast.literal_eval(kind[9:-1])
    return {{"bool": True, "int": 7, "float": 1.5}}.get(kind, [] if kind.startswith("list[") else None)

support.call_tool = fake_call_tool
report = {{}}
for name in package.__all__:
    function = getattr(package, name)
    if not inspect.iscoroutinefunction(function):
        continue
    passed = {{}}
    for parameter in inspect.signature(function).parameters.values():
        value = None if parameter.name == "context" else value_for(name, parameter)
        if value is not None:
            passed[parameter.name] = value
    before = len(calls)
    try:
        asyncio.run(function(**passed, context="CTX"))
        error = None
    except Exception as exc:  # output validation of the fake empty result
        error = type(exc).__name__
    assert len(calls) == before + 1, (name, error)
    report[name] = {{"passed": passed, "error": error, **calls[-1]}}
print(json.dumps({{"report": report, "compiler_loaded": "compiler" in sys.modules}}))
'''


def call_every_stub(folder: Path, package: str) -> dict[str, Any]:
    """Call every stub of `package` through a fake `call_tool` that records tool_id, arguments and context."""
    result = run_isolated(folder, CALL_DRIVER.format(package=package))
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def same_json(one: Any, other: Any) -> bool:
    """Whether two JSON values are the same, integral floats equal to integers (`1.0` is the JSON number `1`)."""
    def fold(node: Any) -> Any:
        if isinstance(node, float) and node.is_integer():
            return int(node)
        if isinstance(node, dict):
            return {key: fold(item) for key, item in node.items()}
        if isinstance(node, list):
            return [fold(item) for item in node]
        return node

    return json.dumps(fold(one), sort_keys=True) == json.dumps(fold(other), sort_keys=True)
