"""A seeded project and the HTTP app that serves its dashboard, in process."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from homeport.files.directory import DirectoryFile
from homeport.files.tokens import TokenStore
from homeport.server.app import build_http_app, build_server
from homeport.server.runtime import Runtime, build_runtime
from homeport.server.settings import ServeSettings
from homeport.store import Store, contexts, custom_data, decisions, links, patterns, progress

BASE = "http://127.0.0.1:8765"


def make_project(base: Path, name: str) -> Path:
    root = base / name
    (root / ".git").mkdir(parents=True)
    return root


def seed(runtime: Runtime, root: Path) -> dict[str, Any]:
    store = runtime.stores.get(root, create=True)
    assert store is not None
    return seed_store(store)


def seed_store(store: Store, *, many: bool = False) -> dict[str, Any]:
    """A small memory with every item type, two context versions and links two steps deep; `many`
    adds 120 older decisions, so the decisions are paginated."""
    if many:
        for n in range(120):
            decisions.log_decision(store, f"Earlier decision {n}", tags=["history"])
    wal = decisions.log_decision(
        store, "Use SQLite in WAL mode", rationale="Readers never block the writer.", tags=["storage", "db"]
    )
    pipeline = decisions.log_decision(
        store, "Every tool call takes one pipeline", rationale="No side path.", tags=["arch"]
    )
    task = progress.log_progress(store, "IN_PROGRESS", "Build the dashboard")
    progress.log_progress(store, "DONE", "Render the workspace page", parent_id=task["id"])
    progress.log_progress(store, "BLOCKED", "Screenshots in CI", parent_id=task["id"])
    progress.log_progress(store, "TODO", "Write the release notes")
    pattern = patterns.log_system_pattern(
        store, "One composition root", "Build settings once, pass them down.", tags=["arch"]
    )
    custom_data.log_custom_data(store, "ProjectGlossary", "WAL", "Write-ahead log: readers see a snapshot.")
    custom_data.log_custom_data(store, "limits", "max_body", {"bytes": 4194304})
    contexts.update_context(store, "product", content={"goal": "Project memory for **coding agents**."})
    contexts.update_context(store, "active", content={"focus": "Ship the dashboard", "open": "- screenshots\n- docs"})
    contexts.update_context(store, "active", patch={"focus": "Ship the dashboard this week"})
    links.link_items(store, "decision", wal["id"], "progress", task["id"], "implements")
    links.link_items(store, "progress", task["id"], "system_pattern", pattern["id"], "follows")
    links.link_items(store, "decision", pipeline["id"], "decision", wal["id"], "relates_to")
    return {"wal": wal, "pipeline": pipeline, "task": task, "pattern": pattern}


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
        return build_http_app(build_server(runtime), runtime), runtime

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
