"""Fixtures shared by every test: temporary projects and servers built the way the CLI builds them."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def _share_the_embedding_model() -> None:
    """One loaded embedding model per test process, not one per runtime.

    Every runtime a test builds (there are thousands) embeds what it writes on a background thread,
    which loads the model first: about 0.15 s of CPU each time (an ONNX session over the same file),
    and `Runtime.close()` waits for it. The model is read-only and `OnnxEmbedder` serialises its
    tokenizer, so runtimes of one process can share it. Only a successful load is kept, per file and
    its size and mtime: a missing extra or model still raises every time, a damaged file is still
    tried, and `homeport.embedding.model.load_embedder` itself (tests/test_semantic_extra.py) is untouched.
    """
    import threading

    from homeport.core import semantic
    from homeport.embedding import model

    loaded: dict[tuple[object, ...], Any] = {}
    lock = threading.Lock()

    def load_embedder(data_dir: Path | None) -> Any:
        files = model.find_model(data_dir) if model.unavailable_reason(data_dir) is None else None
        if files is None:
            return model.load_embedder(data_dir)  # raises with the reason
        try:
            stats = [(p, p.stat().st_size, p.stat().st_mtime_ns) for p in (files.onnx, files.tokenizer)]
        except OSError:
            return model.load_embedder(data_dir)
        key = (files.name, *stats)
        with lock:
            if key not in loaded:
                loaded[key] = model.load_embedder(data_dir)
            return loaded[key]

    semantic.load_embedder = load_embedder  # type: ignore[assignment]


_share_the_embedding_model()


def _build_each_tool_schema_once() -> None:
    """The SDK's tool for a catalog spec, built once per test process, then copied for each server.

    `build_server` makes ~60 SDK tools from the catalog's specs: a pydantic model and its JSON schema
    each, about 0.1 s of CPU per server, which was 60% of the CPU of tests/server (they build a
    server per test). A tool depends only on its spec (the entry's signature, the same Parameter and
    annotation objects every time, its name, description and hints), never on the runtime, so the
    SDK's work is done once per signature and each server gets a copy: its own entry function and
    its own `parameters` dict (which `_bind` edits), the same `fn_metadata` (immutable). A spec made
    in a test with new objects is built afresh, as before.
    """
    import copy
    import inspect

    from homeport.server.mcp_tools import StrictTool

    original = StrictTool.from_function.__func__  # type: ignore[attr-defined]
    built: dict[tuple[object, ...], Any] = {}
    alive: list[object] = []  # the annotations whose ids are in the keys, so no id is ever reused

    def from_function(cls: type, fn: Any, **kwargs: Any) -> Any:
        signature = inspect.signature(fn)
        params = tuple((p.name, p.kind, id(p.annotation), repr(p.default)) for p in signature.parameters.values())
        key = (cls, fn.__name__, params, id(signature.return_annotation), repr(sorted(kwargs.items())))
        template = built.get(key)
        if template is None:
            tool = original(cls, fn, **kwargs)
            alive.extend([*(p.annotation for p in signature.parameters.values()), signature.return_annotation])
            built[key] = tool.model_copy(update={"parameters": copy.deepcopy(tool.parameters)})
            return tool
        return template.model_copy(update={"fn": fn, "parameters": copy.deepcopy(template.parameters)})

    StrictTool.from_function = classmethod(from_function)  # type: ignore[method-assign,assignment]


_build_each_tool_schema_once()


# Running in parallel (pytest-xdist: `-n auto --dist loadgroup` in pyproject's addopts). Each worker is
# a session of its own, so the session fixtures (the PostgreSQL and MariaDB databases under unique
# names, the pgvector server on a free port) are per worker already. What workers could still share
# goes into a group that runs on one worker, one test after another (`_group`):
# - the tests that start owner processes (`serve --own`): each takes the first free owner port (28001 up) in
#   its own registry and listens on it a moment later, so two on different workers could pick one port;
# - a module with a module- or class-scoped fixture (a browser, a server started once for the module,
#   a built wheel): its tests stay together, so the fixture is made once rather than once per worker;
# - the tests on the pgvector server: one worker starts it, not each.
# xdist's own loadgroup cannot do this with pytest 9 (it renames node ids to carry the group, which
# pytest 9 no longer lets it do), so the scheduler below reads the groups from the test files.
OWNERS_GROUP = "owners-from-port-50001"
_WIDE_SCOPE = re.compile(r"""scope=["'](module|class|package)["']""")


@functools.cache
def _test_file(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def _group(rootdir: Path, nodeid: str) -> str:
    """The unit of work `nodeid` is scheduled in: its group, or the test alone."""
    file = nodeid.split("::", 1)[0]
    source = _test_file(rootdir / file)
    if '"--own"' in source and "subprocess" in source:
        return OWNERS_GROUP
    if "pgvector" in nodeid:  # before the module rule: tests/store/test_pgvector.py joins the others
        return "pgvector"
    if _WIDE_SCOPE.search(source):
        return file
    return nodeid


# Workers for `-n auto` (pyproject's addopts): 4 for the suite, twice the 2 cores, as many tests wait on
# subprocesses and sockets rather than compute; none for a single file or test, where starting workers
# costs more than it saves. PYTEST_XDIST_AUTO_NUM_WORKERS=N, or -n N, decides otherwise.
WORKERS = 4


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    args = [a for a in config.args if not a.startswith("-")]
    one_file = len(args) == 1 and args[0].split("::", 1)[0].endswith(".py")
    if one_file or (args and all("::" in a for a in args)):
        return 0
    return WORKERS


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        """Groups first, the largest first; then single tests in the order collected (see below)."""

        def _split_scope(self, nodeid: str) -> str:
            return _group(config.rootpath, nodeid)

    return GroupScheduling(config, log)


# The tests that took minutes (`--durations`), handed out before everything else: started late, one of
# them would keep its worker busy long after the others are done.
LONGEST = (
    "tests/routing/test_routing_invariants.py::test_every_call_lands_in_the_workspace_the_rules_give_or_is_refused",
    "tests/e2e/test_http_scale_script.py::",
    "tests/e2e/test_load_routing.py::",
    "tests/e2e/test_durability.py::",
    "tests/test_typing.py::",  # mypy --strict over src/, cold (about a minute)
    "tests/store/test_vector_sync.py::test_after_any_writes",  # a store per example, on four backends
)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker: the longest tests first, then the end-to-end ones, so no worker is left with
    a long test at the end."""
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: (not item.nodeid.startswith(LONGEST), item.get_closest_marker("slow") is None))


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
