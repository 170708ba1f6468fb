"""Fixtures shared by every test: temporary projects and servers built the way the CLI builds them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from homeport.core import Runtime, ServeSettings, build_runtime
from homeport.server import build_server
from homeport.workspace import CLIENT_ENV_VARS

# CI runs the "ci" profile; `HOMEPORT_HYPOTHESIS=deep python -m pytest` searches ten times longer.
# The machines are shared: a timing health check or deadline would fail a test for the machine's
# load (seen: "input generation is slow" while other processes held both cores), never for a bug.
_SHARED_MACHINE = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("ci", max_examples=100, **_SHARED_MACHINE)
settings.register_profile("deep", max_examples=1000, **_SHARED_MACHINE)
settings.load_profile(os.environ.get("HOMEPORT_HYPOTHESIS", "ci"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def shell_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A person's shell without this machine's Homeport settings or client hints; HOME is a fresh folder."""
    for var in [v for v in os.environ if v.startswith("HOMEPORT_")] + list(CLIENT_ENV_VARS):
        monkeypatch.delenv(var, raising=False)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def shell_in_project(shell_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`shell_home`, standing in a fresh git project `shop` (the shell commands' current directory)."""
    (tmp_path / "shop" / ".git").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "shop")
    return tmp_path / "shop"


def make_project(base: Path, name: str, *, marker: str = ".git") -> Path:
    """A directory that is a project root (a git repository by default)."""
    root = base / name
    (root / marker).mkdir(parents=True)
    return root


@pytest.fixture
def projects(tmp_path: Path) -> dict[str, Path]:
    return {name: make_project(tmp_path, name) for name in ("alpha", "beta")}


@pytest.fixture
def runtime_factory(tmp_path: Path) -> Iterator:
    made: list[Runtime] = []

    def build(**overrides) -> Runtime:
        settings = ServeSettings(**{"cwd": Path("/"), "home": tmp_path / "home", **overrides})
        (tmp_path / "home").mkdir(exist_ok=True)
        runtime = build_runtime(settings)
        made.append(runtime)
        return runtime

    yield build
    for runtime in made:
        runtime.close()


@pytest.fixture
def server_factory(runtime_factory):
    def build(**overrides):
        return build_server(runtime_factory(**overrides))

    return build


@pytest.fixture(scope="session")
def store_postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL database for the memory store on 127.0.0.1:5432, dropped at the end of the run.

    Skips (with the reason) when no server answers there; never passes without one.
    """
    import uuid

    import psycopg

    try:
        admin = psycopg.connect(host="127.0.0.1", port=5432, user="postgres", dbname="test", autocommit=True)
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL is not reachable at 127.0.0.1:5432 as postgres (db test): {str(exc).strip()}")
    name = f"homeport_test_{uuid.uuid4().hex[:12]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


@pytest.fixture(scope="session")
def pgvector_postgres_url() -> Iterator[str]:
    """A PostgreSQL 16 server with the pgvector extension, from the `pgserver` wheel (the test extra), for the run.

    Debian packages no pgvector for the system's PostgreSQL 15, so the store's pgvector path is tested
    on this one: initdb and pg_ctl from pgserver's build, as the `postgres` OS user when the tests run
    as root (postgres refuses root), on a free port of 127.0.0.1. Skips with the reason when it cannot start.
    """
    import importlib.util
    import pwd
    import shutil
    import socket
    import subprocess
    import tempfile

    # Found, not imported: importing pgserver starts its own machinery (and warns about XDG_RUNTIME_DIR).
    spec = importlib.util.find_spec("pgserver")
    if spec is None or spec.origin is None:
        pytest.skip("pgserver is not installed (pip install -e '.[test]'): no PostgreSQL with pgvector to test on")
    bin_dir = Path(spec.origin).parent / "pginstall" / "bin"
    as_user: list[str] = []
    # Not under pytest's temporary directory: root's, and closed to other users.
    base = Path(tempfile.mkdtemp(prefix="homeport-pgvector-"))
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no `postgres` OS user to run pgserver's PostgreSQL as")
        runuser = shutil.which("runuser")
        if runuser is None:
            pytest.skip("running as root without `runuser` to start pgserver's PostgreSQL as `postgres`")
        as_user = [runuser, "-u", "postgres", "--"]
        os.chown(base, owner.pw_uid, owner.pw_gid)
        base.chmod(0o700)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data, log = base / "data", base / "log"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*as_user, *args], capture_output=True, text=True, timeout=120)

    done = run(str(bin_dir / "initdb"), "-D", str(data), "--auth=trust", "-U", "postgres", "-E", "utf8")
    if done.returncode != 0:
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip(f"pgserver's initdb failed: {done.stderr.strip()[-500:]}")
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {base} -c fsync=off"
    done = run(str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "start")
    if done.returncode != 0:
        reason = f"{done.stderr.strip()[-500:]} {log.read_text()[-500:] if log.exists() else ''}"
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip(f"pgserver's PostgreSQL did not start: {reason}")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(base, ignore_errors=True)


class Healthz:
    """A /healthz on 127.0.0.1 that answers with this process's pid, as a running Homeport's does."""

    def __init__(self) -> None:
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, HTTPServer

        class Answer(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = json.dumps({"pid": os.getpid()}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._server = HTTPServer(("127.0.0.1", 0), Answer)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._stopped = False

    def stop(self) -> None:
        """Stop answering (the port is closed); again does nothing."""
        if not self._stopped:
            self._stopped = True
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()


@pytest.fixture
def healthz() -> Iterator[Healthz]:
    answering = Healthz()
    yield answering
    answering.stop()
