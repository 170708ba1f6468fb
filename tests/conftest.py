"""Fixtures shared by every test: temporary projects and servers built the way the CLI builds them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from homeport.server import Runtime, ServeSettings, build_runtime, build_server
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
