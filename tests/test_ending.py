"""`toolc compile`, run as the script, ends its process without teardown (`cli.ENDS_WITHOUT_TEARDOWN`): its build
must not be freed object by object on the way there (`infra.ending`), and nothing is held where a process goes on
(click's test runner)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from compiler.cli import main
from compiler.infra import ending
from tests.support.paths import FIXTURES

STRIPE = FIXTURES / "corpus" / "openapi" / "stripe.json"

_SCRIPT = """import gc, os, sys
from compiler.build import Build
from compiler.cli import main
from compiler.infra import ending

def end(status):
    gc.collect()
    alive = sum(isinstance(thing, Build) for thing in gc.get_objects())
    print(f"builds alive at the end: {alive}, held: {len(ending._held)}", file=sys.stderr, flush=True)
    real(status)

real, os._exit = os._exit, end
sys.argv = ["toolc", *sys.argv[1:]]
main()
"""


def test_the_script_ends_with_its_build_still_held(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", _SCRIPT, "compile", str(STRIPE), "--out", str(tmp_path / "out"),
                           "--no-codegen", "-q"], capture_output=True, text=True, check=False,
                          env={**os.environ, "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert "builds alive at the end: 1, held: 1" in done.stderr


def test_a_compile_in_a_process_that_goes_on_holds_nothing(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["compile", str(STRIPE), "--out", str(tmp_path / "out"), "--no-codegen", "-q"])
    assert result.exit_code == 0, result.output
    assert ending._held == []
