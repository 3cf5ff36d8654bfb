"""A project whose one MCP server is the tests' own `tests/servers/pinned_stdio.py`, compiled from the live server
(`toolc compile --live`): `echo`'s description is whatever `description.txt` beside the project file says."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from tests.support.cli import run_toolc
from tests.support.paths import ROOT

SERVER = ROOT / "tests" / "servers" / "pinned_stdio.py"


def pinned_project(folder: Path, description: str, **sections: Any) -> Path:
    """Write `description.txt` and `toolc.yaml` (plus `sections`, e.g. `gateway={...}`) in `folder`, compile."""
    (folder / "description.txt").write_text(description)
    document = {"name": "pinned", "output": "out",
                "mcp_servers": [{"id": "pinned",
                                 "command": [sys.executable, str(SERVER), str(folder / "description.txt")]}],
                **sections}
    path = folder / "toolc.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    result = run_toolc("compile", "--live", "-c", path)
    assert result.exit_code == 0, result.stderr
    return path
