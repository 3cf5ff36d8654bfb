"""Generated Python formatted by ruff's formatter, so `ruff format --check` (a user's pre-commit) never fights
`toolc check` over files toolc wrote.

ruff has no Python API: its binary ships in the `ruff` wheel, which is a runtime dependency pinned exactly
(pyproject.toml) because the output bytes depend on its version (the codegen cache fingerprints it too). It
runs with `--isolated` and the settings below, so neither the folder toolc runs in nor a user's own ruff
config changes the bytes. The same settings are written to `python/ruff.toml` beside the generated packages:
ruff uses the nearest config file, so `ruff format --check` on the output agrees whatever the enclosing
project's line length or quote style.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from compiler.codegen.format_reuse import FormatReuse

FORMAT_FAILED = "TC638"
LINE_LENGTH = 88
TARGET_VERSION = "py311"
RUFF_TOML = (
    "# Written by toolc: the settings the generated code is formatted with (ruff's defaults for Python 3.11),\n"
    "# so `ruff format --check` agrees with `toolc check` whatever the enclosing project's ruff config says.\n"
    f"line-length = {LINE_LENGTH}\n"
    f'target-version = "{TARGET_VERSION}"\n'
).encode()


class FormatError(RuntimeError):
    """The pinned ruff could not be run or refused a generated module."""


def ruff_binary() -> str:
    try:
        from ruff.__main__ import find_ruff_bin
    except ImportError as exc:
        raise FormatError("the `ruff` package (a toolc runtime dependency) is not installed") from exc
    return str(find_ruff_bin())


def format_python(files: Mapping[str, bytes], reuse: FormatReuse | None = None) -> dict[str, bytes]:
    """`files` with every `.py` file formatted; one ruff run over a scratch copy (ruff formats in parallel) of those
    `reuse` (the last compile's formatting) does not give back."""
    sources = {path: content for path, content in files.items() if path.endswith(".py")}
    formatted: dict[str, bytes] = {}
    if reuse is not None:
        for path, content in sources.items():
            found = reuse.get(path, content)
            if found is not None:
                formatted[path] = found
    missing = {path: content for path, content in sources.items() if path not in formatted}
    made = run_ruff(missing) if missing else {}
    if reuse is not None:
        for path, content in missing.items():
            reuse.put(path, content, made[path])
    formatted.update(made)
    return {path: formatted.get(path, content) for path, content in files.items()}


def run_ruff(sources: Mapping[str, bytes]) -> dict[str, bytes]:
    """`sources` (relative path → module) formatted, in one ruff run over a scratch copy."""
    with tempfile.TemporaryDirectory(prefix="toolc-format-") as scratch:
        root = Path(scratch)
        for path, content in sources.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        # `exclude=[]`: ruff's default excludes would skip a source package named `dist`, `venv`, `_build`...
        command = [ruff_binary(), "format", "--isolated", "--no-cache", "--quiet", "--config", "exclude = []",
                   f"--line-length={LINE_LENGTH}", f"--target-version={TARGET_VERSION}", "."]
        try:
            result = subprocess.run(command, cwd=root, capture_output=True, check=False)
        except OSError as exc:
            raise FormatError(f"cannot run ruff: {exc}") from exc
        if result.returncode != 0:
            raise FormatError(result.stderr.decode("utf-8", "replace").strip()[:2000] or f"exit {result.returncode}")
        return {path: (root / path).read_bytes() for path in sources}
