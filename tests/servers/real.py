"""Real MCP servers nobody here wrote: the PyPI servers (run with this interpreter) and npm's server-everything.

server-everything is installed by `npm ci --prefix tests/servers`. Without it a test skips, with that reason,
only on a developer machine: when `CI` is set a missing install fails the test instead of hiding it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.servers.inprocess import free_port
from tests.support.loopback import stop, wait_for_port
from tests.support.paths import SERVERS

HERE = SERVERS
EVERYTHING = HERE / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
LOCALHOST_ONLY = HERE / "localhost_only.cjs"
INSTALL = "npm ci --prefix tests/servers"


def python_server(module: str, *args: str) -> tuple[str, ...]:
    return (sys.executable, "-m", module, *args)


def require_everything() -> str:
    """The `node` executable, once server-everything is known to be installed (else skip, or fail under CI)."""
    node = shutil.which("node")
    problem = None if node else "node is not on PATH"
    if problem is None and not EVERYTHING.exists():
        problem = f"tests/servers/node_modules is not installed (run `{INSTALL}`)"
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run server-everything: {problem}")
        pytest.skip(problem)
    assert node is not None
    return node


def everything_stdio() -> tuple[str, ...]:
    return (require_everything(), str(EVERYTHING), "stdio")


@contextmanager
def everything_http(mode: str) -> Iterator[str]:
    """server-everything in `streamableHttp` or `sse` mode on 127.0.0.1:<free port>; yields the endpoint URL."""
    node = require_everything()
    port = free_port()
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below
    process = subprocess.Popen([node, "--require", str(LOCALHOST_ONLY), str(EVERYTHING), mode],
                               env={**os.environ, "PORT": str(port)}, stdout=subprocess.DEVNULL, stderr=log, cwd=HERE)
    try:
        wait_for_port(port, process, f"server-everything {mode}", timeout_s=30, log=log)
        yield f"http://127.0.0.1:{port}/{'mcp' if mode == 'streamableHttp' else 'sse'}"
    finally:
        stop(process)
        log.close()
