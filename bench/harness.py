"""Shared measuring for the benchmarks: each case runs N times in a fresh process under `/usr/bin/time -v`,
and the median wall time and peak RSS are reported (the method of `reference/performance.md`)."""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable

# The FastMCP side of reference/anchors/peer_run.py ("fastmcp" mode), copied here so the benches stand
# alone; one script for every bench that runs the peer. FastMCP 4.1.2 as installed here builds on httpx2 (no
# `httpx` in its venv), so the client is httpx2's where the reference still says httpx.
FASTMCP_RUN = r"""
import asyncio, json, sys, warnings
import httpx2
from fastmcp import FastMCP
warnings.simplefilter("ignore")
spec = json.loads(open(sys.argv[1], "rb").read())
server = FastMCP.from_openapi(openapi_spec=spec, client=httpx2.AsyncClient(base_url="http://127.0.0.1:9"))
tools = asyncio.run(server.list_tools())
data = [t.to_mcp_tool().model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools]
print(json.dumps({"tools": len(tools), "bytes": len(json.dumps(data))}))
"""


@dataclass
class Measurement:
    name: str
    wall_s: float
    rss_mb: float
    ok: bool
    note: str = ""
    stdout: str = ""
    """The last run's standard output, for callers that parse what the command prints."""
    returncode: int = 0
    """The last failing run's exit status (0 when every run succeeded)."""
    cpu_s: float = 0.0
    """Median CPU seconds (user + system, the process and the children it waited for): steadier than wall time
    on a machine other jobs load."""


def _time_v(command: list[str], env: dict[str, str] | None, cwd: Path) -> tuple[float, float, int, str, str, float]:
    with tempfile.NamedTemporaryFile("r", suffix=".time") as timing:
        proc = subprocess.run(
            ["/usr/bin/time", "-v", "-o", timing.name, *command],
            capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=cwd,
        )
        report = timing.read()
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", report)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", report)
    cpu = sum(float(found.group(1)) for found in re.finditer(r"(?:User|System) time \(seconds\): ([\d.]+)", report))
    if not wall or not rss:
        return 0.0, 0.0, proc.returncode or 1, proc.stderr[-500:], proc.stdout, cpu
    hours = float(wall.group(1) or 0)
    seconds = hours * 3600 + float(wall.group(2)) * 60 + float(wall.group(3))
    return seconds, int(rss.group(1)) / 1024, proc.returncode, proc.stderr[-500:], proc.stdout, cpu


def measure(name: str, command: list[str], *, runs: int = 3, env: dict[str, str] | None = None,
            cwd: Path = ROOT) -> Measurement:
    walls: list[float] = []
    rsss: list[float] = []
    cpus: list[float] = []
    note = stdout = ""
    ok = True
    returncode = 0
    for _ in range(runs):
        wall, rss, code, stderr, stdout, cpu = _time_v(command, env, cwd)
        walls.append(wall)
        rsss.append(rss)
        cpus.append(cpu)
        if code != 0:
            ok = False
            returncode = code
            note = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit {code}"
    return Measurement(name, statistics.median(walls), statistics.median(rsss), ok, note, stdout, returncode,
                       statistics.median(cpus))


def print_table(rows: list[Measurement], baseline: str | None = None) -> None:
    base = next((r for r in rows if r.name == baseline), None)
    print(f"{'case':58} {'wall s':>8} {'RSS MB':>8} {'x base':>8}  note")
    for row in rows:
        ratio = f"{row.wall_s / base.wall_s:8.2f}" if base and base.wall_s else f"{'':8}"
        status = "" if row.ok else "FAILED "
        print(f"{row.name:58} {row.wall_s:8.2f} {row.rss_mb:8.0f} {ratio}  {status}{row.note}")


def precompile() -> None:
    """Byte-compile toolc as `pip install` does for a normal install. The editable install used in development
    leaves the sources uncompiled, and with PYTHONDONTWRITEBYTECODE set (as on this machine) every run would
    pay ~0.3 s recompiling them, which no installed toolc and none of the peers (installed from wheels) pays."""
    subprocess.run([PYTHON, "-m", "compileall", "-q", str(ROOT / "compiler")], check=True, capture_output=True)


def peer_venv(name: str, packages: list[str]) -> Path:
    """A separate venv for a peer tool, created once under bench/.peers-<name>."""
    venv = ROOT / "bench" / f".peers-{name}"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *packages], check=True)
    return python
