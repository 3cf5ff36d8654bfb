"""What code generation spends besides the model generator (issue 27): checked by what runs, never by time."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compiler.codegen.stubs import model_chunks
from compiler.codegen.stubs.literals import UnsafeModule, check_module
from compiler.codegen.stubs.models import run_datamodel_codegen
from compiler.infra.collector import collector_paused
from tests.support.paths import FIXTURES


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of every cyclic collection that starts while the test runs."""
    started: list[int] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(record)
    try:
        yield started
    finally:
        gc.callbacks.remove(record)


def _models_module(classes: int) -> str:
    body = "".join(f"\n\nclass Model{i}(BaseModel):\n    name: str | None = Field(None, max_length={i})\n"
                   f"    items: list[int] | None = None\n" for i in range(classes))
    return f"from __future__ import annotations\n\nfrom pydantic import BaseModel, Field\n{body}"


def test_checking_a_module_pauses_the_collector(collections: list[int]) -> None:
    """Parsing and compiling a big generated module allocates an acyclic tree: the collector stays paused (with
    it running, this module's check starts hundreds of collections), and is running again after: at most one
    collection, as the pause ends, looks at what the check allocated."""
    code = _models_module(3000)
    assert gc.isenabled()
    collections.clear()  # only those the check starts
    tree = check_module(code, filename="models.py")
    assert len(tree.body) == 3002
    assert len(collections) <= 1
    assert gc.isenabled()


def test_a_refused_module_leaves_the_collector_running() -> None:
    with pytest.raises(UnsafeModule):
        check_module("from __future__ import annotations\ndef broken(:\n", filename="models.py")
    assert gc.isenabled()


def test_a_collector_the_caller_paused_stays_paused() -> None:
    gc.disable()
    try:
        check_module(_models_module(2), filename="models.py")
        assert not gc.isenabled()
    finally:
        gc.enable()


_COMPILE_TWICE = """import json, sys
from pathlib import Path
from compiler.config import Config
from compiler.pipeline import adhoc_inputs, compile_project, write_build
config = Config(root=Path.cwd()).model_copy(update={"codegen": True})
out = Path(sys.argv[2])
for _ in range(2):  # the second compile reads the first one's tools.py for `# toolc: keep` functions
    build = compile_project(config, adhoc_inputs([Path(sys.argv[1])], Path.cwd()), out_dir=out)
    write_build(build, out)
print(json.dumps([(out / "python/params/tools.py").is_file(), "libcst" in sys.modules]))
"""


def test_code_generation_loads_libcst_only_when_it_needs_it(tmp_path: Path) -> None:
    """libcst (0.3 s to import) rewrites non-ASCII field names and carries `# toolc: keep` functions over;
    generated models from real APIs have neither, nor does a tools.py nobody marked."""
    done = subprocess.run([sys.executable, "-c", _COMPILE_TWICE, str(FIXTURES / "openapi" / "params.yaml"),
                           str(tmp_path / "out")], check=True, capture_output=True, text=True, cwd=tmp_path)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [True, False]


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cyclic collector frees it


def test_a_paused_block_that_collects_after_leaves_no_cyclic_garbage() -> None:
    freed: list[bool] = []
    with collector_paused(collect_after=True):
        node = _Node()
        weakref.finalize(node, freed.append, True)
        del node
        assert freed == []  # the cycle keeps it, and no collection runs here
    assert freed == [True]


def test_model_generation_runs_with_the_collector_paused(monkeypatch: pytest.MonkeyPatch,
                                                         collections: list[int]) -> None:
    """The generator's run over a chunk starts no collection (it ends with one, `collector_paused`)."""
    seen: list[tuple[bool, int]] = []
    generate = run_datamodel_codegen

    def watched(schema: Any, **kwargs: Any) -> str:
        started = len(collections)
        code = generate(schema, **kwargs)
        seen.append((gc.isenabled(), len(collections) - started))
        return code

    monkeypatch.setattr(model_chunks, "run_datamodel_codegen", watched)
    table = {f"Tool{i}Input": {"type": "object", "properties": {f"field{j}": {"type": "string", "maxLength": j + 1}
                                                                  for j in range(30)}} for i in range(40)}
    models = model_chunks.generate_models(table, sorted(table), package="p", header="# models",
                                          allow_calls=frozenset())
    assert "class Tool39Input(BaseModel):" in models.files["models.py"]
    assert seen == [(False, 0)]
    assert gc.isenabled()
