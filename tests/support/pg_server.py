"""A throwaway PostgreSQL server for the audit tests: its own data folder, a loopback port, password auth.

Binaries come from the `pgserver` wheel (a dev dependency, so `pip install -e '.[dev]'` is all a fresh machine
needs), else from a system install (`pg_config --bindir`, /usr/lib/postgresql/*/bin, PATH). PostgreSQL refuses
to run as root, so as root the server runs as the `postgres` user if there is one, else `nobody`, through
`runuser`. `PgServer.stop()` / `start()` restart it on the same port and data (the restart test).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.servers.inprocess import free_port

USER = "toolc"
PASSWORD = "audit-Pa55-correct-horse"




def candidate_bindirs() -> list[Path]:
    found: list[Path] = []
    spec = importlib.util.find_spec("pgserver")  # located, not imported (its import writes to a runtime dir)
    if spec is not None and spec.submodule_search_locations:
        found.append(Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin")
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            found.append(Path(subprocess.run([pg_config, "--bindir"], capture_output=True, text=True,
                                             check=True).stdout.strip()))
    found += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    initdb = shutil.which("initdb")
    if initdb:
        found.append(Path(initdb).resolve().parent)
    return [folder for folder in found if (folder / "initdb").exists() and (folder / "pg_ctl").exists()]


def _runner() -> tuple[list[str], str | None]:
    """The command prefix that runs the server's programs, and the user they run as (None: ourselves)."""
    if os.geteuid() != 0:
        return [], None
    for user in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(user)
            return ["runuser", "-u", user, "--"], user
    raise RuntimeError("running as root and neither a postgres nor a nobody user exists")


@dataclass
class PgServer:
    bindir: Path
    folder: Path
    port: int
    prefix: list[str]

    @property
    def data(self) -> Path:
        return self.folder / "data"

    def dsn(self, password: str = PASSWORD, *, port: int | None = None, dbname: str = "postgres") -> str:
        return (f"host=127.0.0.1 port={port or self.port} dbname={dbname} user={USER} password={password} "
                "connect_timeout=5")

    def _ctl(self, *args: str) -> None:
        subprocess.run([*self.prefix, str(self.bindir / "pg_ctl"), "-D", str(self.data), *args], check=True,
                       capture_output=True, text=True, timeout=120)

    def start(self) -> None:
        options = f"-p {self.port} -h 127.0.0.1 -k {self.folder / 'sock'} -c max_connections=200"
        self._ctl("-l", str(self.folder / "server.log"), "-o", options, "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        self._ctl("-m", mode, "-w", "-t", "60", "stop")

    def log(self) -> str:
        path = self.folder / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""


def _start(bindir: Path) -> PgServer:
    prefix, user = _runner()
    # Under /tmp when the server runs as another user: pytest's own temp folders are private to us.
    folder = Path(tempfile.mkdtemp(prefix="toolc-pg-", dir="/tmp" if user is not None else None))
    (folder / "sock").mkdir()
    password_file = folder / "password"
    password_file.write_text(PASSWORD + "\n")
    if user is not None:
        record = pwd.getpwnam(user)
        for path in (folder, folder / "sock", password_file):
            os.chown(path, record.pw_uid, record.pw_gid)
    folder.chmod(0o700)
    if prefix and subprocess.run([*prefix, str(bindir / "initdb"), "--version"], capture_output=True).returncode:
        # The server's user cannot reach the binaries (a checkout under a private home): run a copy of them.
        shutil.copytree(bindir.parent, folder / "pginstall", symlinks=True)
        subprocess.run(["chmod", "-R", "a+rX", str(folder / "pginstall")], check=True)
        bindir = folder / "pginstall" / "bin"
    subprocess.run([*prefix, str(bindir / "initdb"), "-D", str(folder / "data"), "-U", USER, "-E", "UTF8",
                    "--auth=scram-sha-256", f"--pwfile={password_file}", "--no-sync", "--no-instructions"],
                   check=True, capture_output=True, text=True, timeout=120)
    password_file.unlink()
    server = PgServer(bindir, folder, free_port(), prefix)
    server.start()
    return server


@contextlib.contextmanager
def postgres_server() -> Iterator[PgServer]:
    """Start a server from the first binaries that work; raise RuntimeError with every reason if none does."""
    reasons = []
    for bindir in candidate_bindirs():
        try:
            server = _start(bindir)
        except (OSError, subprocess.SubprocessError, RuntimeError) as exc:
            detail = getattr(exc, "stderr", "") or ""
            reasons.append(f"{bindir}: {type(exc).__name__}: {exc} {detail.strip()[-300:]}")
            continue
        try:
            yield server
        finally:
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                server.stop("immediate")
            shutil.rmtree(server.folder, ignore_errors=True)
        return
    raise RuntimeError("no PostgreSQL server could start: " + ("; ".join(reasons) or "no binaries found "
                       "(pip install pgserver, or apt-get install postgresql)"))


def postgres_or_skip(what: str) -> Iterator[PgServer]:
    """A module fixture's body: a running server, or the module skipped where none can start (failed on CI,
    which must run `what`)."""
    server_context = postgres_server()
    try:
        server = server_context.__enter__()
    except RuntimeError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run {what}: {exc}")
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        server_context.__exit__(None, None, None)
