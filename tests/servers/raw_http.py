"""A loopback HTTP/1.1 server that records each request exactly as it arrived: the raw request line, the raw header
lines (bytes, in order, duplicates kept) and the raw body bytes. No HTTP library parses anything on the way in, so
what the tests assert is what reached the wire. Every request gets `200` and a small JSON body.
"""

from __future__ import annotations

import json
import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import unquote

_MAX_HEAD = 1 << 16


@dataclass
class RawRequest:
    request_line: bytes
    header_lines: list[bytes]
    body: bytes

    @property
    def method(self) -> str:
        return self.request_line.split(b" ", 1)[0].decode()

    @property
    def target(self) -> str:
        """The request target as sent (still percent-encoded)."""
        return self.request_line.split(b" ")[1].decode()

    @property
    def raw_path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def path_segments(self) -> list[str]:
        return self.raw_path.split("/")

    @property
    def raw_query(self) -> str:
        return self.target.split("?", 1)[1] if "?" in self.target else ""

    @property
    def query_pairs(self) -> list[tuple[str, str]]:
        """`(key, value)` split on `&` and the first `=` only, each still encoded."""
        return [(pair.split("=", 1)[0], pair.split("=", 1)[1] if "=" in pair else "")
                for pair in self.raw_query.split("&") if pair]

    @property
    def query_keys(self) -> list[str]:
        return [unquote(key) for key, _ in self.query_pairs]

    def headers(self, name: str) -> list[str]:
        """Every value of header `name` (case-insensitive), as sent."""
        wanted = name.lower().encode()
        return [line.split(b":", 1)[1].strip().decode("latin-1") for line in self.header_lines
                if line.split(b":", 1)[0].strip().lower() == wanted]

    @property
    def header_names(self) -> list[str]:
        return [line.split(b":", 1)[0].strip().decode("latin-1").lower() for line in self.header_lines]

    @property
    def cookies(self) -> list[tuple[str, str]]:
        """`(name, value)` of every cookie of every Cookie header, values still encoded."""
        pairs = []
        for header in self.headers("cookie"):
            for item in header.split(";"):
                name, _, value = item.strip().partition("=")
                pairs.append((name, value))
        return pairs


@dataclass
class RawRecorder:
    url: str
    requests: list[RawRequest] = field(default_factory=list)

    def clear(self) -> None:
        self.requests.clear()

    @property
    def last(self) -> RawRequest:
        assert self.requests, "no request reached the server"
        return self.requests[-1]


class _Handler(socketserver.StreamRequestHandler):
    recorder: RawRecorder

    def handle(self) -> None:
        while True:
            request_line = self.rfile.readline(_MAX_HEAD)
            if not request_line.strip():
                return
            header_lines: list[bytes] = []
            while True:
                line = self.rfile.readline(_MAX_HEAD)
                if line in (b"\r\n", b"\n", b""):
                    break
                header_lines.append(line.rstrip(b"\r\n"))
            recorded = RawRequest(request_line.rstrip(b"\r\n"), header_lines, b"")
            length = recorded.headers("content-length")
            if length:
                recorded.body = self.rfile.read(int(length[0]))
            elif recorded.headers("transfer-encoding"):
                recorded.body = self._chunked()
            self.server.recorder.requests.append(recorded)  # type: ignore[attr-defined]
            payload = json.dumps({"ok": True, "path": recorded.raw_path}).encode()
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(payload)).encode() + b"\r\n\r\n" + payload)
            self.wfile.flush()

    def _chunked(self) -> bytes:
        body = b""
        while True:
            size = int(self.rfile.readline(_MAX_HEAD).strip().split(b";")[0], 16)
            if size == 0:
                self.rfile.readline(_MAX_HEAD)
                return body
            body += self.rfile.read(size)
            self.rfile.readline(_MAX_HEAD)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@contextmanager
def raw_http_server() -> Iterator[RawRecorder]:
    server = _Server(("127.0.0.1", 0), _Handler)
    recorder = RawRecorder(f"http://127.0.0.1:{server.server_address[1]}")
    server.recorder = recorder  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield recorder
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
