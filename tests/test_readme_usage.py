"""The README's usage snippet runs as written: generated stub → generated router → the real mcp-server-time."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

README = (ROOT / "README.md").read_text()


def _usage_snippet() -> str:
    section = README.split("## Using the generated code", 1)[1]
    return section.split("```python", 1)[1].split("```", 1)[0]


@pytest.mark.servers
def test_usage_snippet_runs_against_the_real_time_server(tmp_path: Path) -> None:
    bin_dir = Path(sys.executable).parent
    if shutil.which("mcp-server-time", path=str(bin_dir)) is None:
        pytest.fail("mcp-server-time is a dev dependency and must be installed beside the interpreter")
    script = tmp_path / "app.py"
    script.write_text(_usage_snippet())
    env = {**os.environ, "PYTHONPATH": str(ROOT / "generated" / "python"),
           "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "TOOLC_AUDIT_DB": str(tmp_path / "audit.sqlite3")}
    env.pop("TOOLC_AUDIT_DSN", None)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    # The stub returns the tool's typed output model, filled from the server's structured answer.
    assert done.stdout.startswith("timezone='Europe/Paris' datetime='"), done.stdout
    assert (tmp_path / "audit.sqlite3").exists()
