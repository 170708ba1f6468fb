"""A seeded project and the HTTP app that serves its dashboard, in process."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from homeport.cli._compose import dashboard_app
from homeport.core.runtime import Runtime, build_runtime
from homeport.core.settings import ServeSettings
from homeport.files.directory import DirectoryFile
from homeport.files.tokens import TokenStore
from homeport.server.app import build_http_app, build_server

from ._seed import make_project

BASE = "http://127.0.0.1:8765"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "src", "app")


@pytest.fixture
def make_app(tmp_path: Path) -> Iterator[Callable[..., tuple[Any, Runtime]]]:
    runtimes: list[Runtime] = []

    def build(**overrides: Any) -> tuple[Any, Runtime]:
        values: dict[str, Any] = {
            "transport": "http",
            "allow_roots": (tmp_path / "src",),
            "cwd": tmp_path / "src",
            "data_dir": tmp_path / "data",
            "directory_file": tmp_path / "data" / "directory.toml",
            **overrides,
        }
        runtime = build_runtime(ServeSettings(**values))
        runtimes.append(runtime)
        return build_http_app(build_server(runtime), runtime, dashboard=dashboard_app), runtime

    yield build
    for runtime in runtimes:
        runtime.close()


@pytest.fixture
async def client_for() -> AsyncIterator[Callable[[Any], httpx.AsyncClient]]:
    clients: list[httpx.AsyncClient] = []

    def make(app: Any) -> httpx.AsyncClient:
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE)
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.aclose()


@pytest.fixture
def agents(tmp_path: Path) -> dict[str, str]:
    """Tokens of two agents: ada of acme (may use tmp/src), bea of beta (may use nothing there)."""
    data = tmp_path / "data"
    directory = DirectoryFile(data / "directory.toml")
    directory.add_organization("acme")
    directory.add_agent("acme", "ada")
    directory.add_workspace_root("acme", str(tmp_path / "src"))
    directory.add_organization("beta")
    directory.add_agent("beta", "bea")
    directory.add_workspace_root("beta", str(tmp_path / "elsewhere"))
    tokens = TokenStore(data / "tokens.json")
    return {"ada": tokens.add("ada"), "bea": tokens.add("bea")}
