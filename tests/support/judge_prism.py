"""Stoplight Prism 5 (npm `@stoplight/prism-cli`, in tests/servers) as an independent request validator: `prism
mock` on a loopback port validates every request against the document and answers 422 (with the violations), 401
(security), 404/405 (no such path or method) or 415 (media type) when it is not valid, 2xx when it is. Requests are
replayed to it byte for byte as the router sent them to the raw recorder (only `Host` and `Connection` change)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.servers.inprocess import free_port
from tests.servers.raw_http import RawRequest
from tests.support.loopback import stop, wait_for_port
from tests.support.paths import ROOT

PRISM = ROOT / "tests" / "servers" / "node_modules" / "@stoplight" / "prism-cli" / "dist" / "index.js"


def prism_or_skip() -> Path:
    if PRISM.is_file() and shutil.which("node"):
        return PRISM
    if os.environ.get("CI"):
        pytest.fail("Prism is not installed (npm ci --prefix tests/servers)")
    pytest.skip("Prism is not installed: npm ci --prefix tests/servers")


@contextlib.contextmanager
def prism_mock(document: Path, log: Path, *options: str) -> Iterator[int]:
    """`prism mock` on `document` (with its command-line `options`), yielding its port once it answers; stopped
    (and waited for) afterwards."""
    port = free_port()
    with log.open("wb") as sink:
        process = subprocess.Popen(["node", str(prism_or_skip()), "mock", "-h", "127.0.0.1", "-p", str(port),
                                    *options, str(document)], stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            wait_for_port(port, process, "prism mock", timeout_s=120, log=log)
            yield port
        finally:
            stop(process)


@dataclass
class Verdict:
    status: int
    problem: dict[str, Any]

    @property
    def unjudged(self) -> bool:
        """Prism could not mock an answer (the operation declares no response): no verdict on the request."""
        return self.status == 500 and "RESPONSE_DEFINED" in str(self.problem.get("type", ""))

    @property
    def entries(self) -> list[dict[str, Any]]:
        return [v for v in self.problem.get("validation", []) if isinstance(v, dict)
                and v.get("severity", "Error") == "Error"]

    @property
    def violations(self) -> list[str]:
        """`location: code` of each violation Prism names; its problem type when it names none."""
        if self.status < 400 or self.unjudged:
            return []
        found = [f"{'.'.join(map(str, v.get('location', [])[:2]))}: {v.get('code')}"
                 for v in self.problem.get("validation", []) if v.get("severity", "Error") == "Error"]
        return found or [str(self.problem.get("type", self.status)).rsplit("#", 1)[-1]]


def replay(port: int, request: RawRequest) -> Verdict:
    kept = [line for line in request.header_lines
            if line.split(b":", 1)[0].strip().lower() not in (b"host", b"connection")]
    head = b"\r\n".join([request.request_line, *kept, f"Host: 127.0.0.1:{port}".encode(), b"Connection: close"])
    with socket.create_connection(("127.0.0.1", port), timeout=60) as connection:
        connection.sendall(head + b"\r\n\r\n" + request.body)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    status = int(status_line.split(b" ")[1])
    body = rest.partition(b"\r\n\r\n")[2]
    try:
        problem = json.loads(body) if body.strip() else {}
    except ValueError:
        problem = {}
    return Verdict(status, problem if isinstance(problem, dict) else {})
