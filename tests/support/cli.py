"""Shared test helper: a one-call, in-process `toolc` run (paths live in `tests.support.paths`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner, Result

from compiler.cli import main


def run_toolc(*args: str | Path, cwd: Path | None = None) -> Result:
    """Run the CLI in-process; stderr is kept apart so tests can read diagnostics."""
    runner = CliRunner()
    argv = [str(a) for a in args]
    if cwd is None:
        return runner.invoke(main, argv, catch_exceptions=False)
    with runner.isolated_filesystem(temp_dir=cwd):
        return runner.invoke(main, argv, catch_exceptions=False)


def compiled_project(folder: Path, config: dict[str, Any], *options: str) -> Path:
    """`config` written as `folder/toolc.yaml` and compiled (`toolc compile -c` with `options`), which must
    succeed; the project file's path."""
    path = folder / "toolc.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    result = run_toolc("compile", "-c", path, *options)
    assert result.exit_code == 0, result.stderr[-3000:]
    return path
