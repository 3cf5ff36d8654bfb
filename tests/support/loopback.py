"""Loopback HTTP APIs and child servers, for the tests and the benchmarks: a quiet JSON handler, a threaded
server on 127.0.0.1:<any port>, the recording API the router and serve tests call, waiting for a child's port and
stopping a child."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any, ClassVar
from urllib.parse import parse_qsl, urlsplit


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing and answers JSON in one call."""

    def send_json(self, status: int, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        return None


class KeepAliveHandler(QuietHandler):
    """As a real API answers (the benchmarks measure against it)."""

    protocol_version = "HTTP/1.1"  # keep-alive
    disable_nagle_algorithm = True  # headers and body are separate writes: no 40 ms delayed-ACK stall


@contextlib.contextmanager
def loopback_http(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """`handler` served on 127.0.0.1:<free port> from a daemon thread; yields the base URL; shut down after."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class Recorder(QuietHandler):
    """Records every request (method, path, query, headers, body) in `Recorder.requests`; answers 200 with an echo
    of the path and method (and a pet), 404 for a path ending in `/404`."""

    requests: ClassVar[list[dict[str, Any]]] = []

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        seen = {"method": self.command, "path": url.path, "query": parse_qsl(url.query),
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": json.loads(body) if body and "json" in self.headers.get("Content-Type", "") else body.decode()}
        Recorder.requests.append(seen)
        status = 404 if url.path.endswith("/404") else 200
        self.send_json(status, json.dumps({"echo": {"path": url.path, "method": self.command}, "id": 7,
                                           "name": "Rex"}).encode())

    do_GET = do_PUT = do_POST = do_PATCH = _handle


@contextlib.contextmanager
def recording_api() -> Iterator[str]:
    """A loopback `Recorder` with an empty record; yields its base URL."""
    Recorder.requests = []
    with loopback_http(Recorder) as url:
        yield url


def _tail(log: IO[bytes] | Path | None) -> str:
    if log is None:
        return ""
    if isinstance(log, Path):
        return log.read_text(errors="replace")[-2000:]
    log.seek(0)
    return log.read().decode(errors="replace")[-2000:]


def wait_for_port(port: int, process: subprocess.Popen[Any], what: str, *, timeout_s: float = 60,
                  log: IO[bytes] | Path | None = None) -> None:
    """Return once 127.0.0.1:`port` accepts a connection. RuntimeError naming `what`, with the end of the child's
    `log`, when the child exits first or `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start: {_tail(log)}")
        time.sleep(0.05)


def stop(process: subprocess.Popen[Any], *, timeout_s: float = 10, sig: int = signal.SIGTERM) -> None:
    """Signal a child that still runs, wait for it, and kill it if it does not end within `timeout_s`."""
    if process.poll() is None:
        process.send_signal(sig)
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
