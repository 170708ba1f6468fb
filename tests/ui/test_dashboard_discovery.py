"""/ui on a fresh `serve --http` lists the projects with a store under the allowed roots (issue 27).

The list is bounded (a depth and a count, never a walk of the whole disk), follows no symlink out of the
allowed roots, and every project on it still goes through the same guards as a call naming it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from homeport.core.discovery import DISCOVERY_DEPTH, DISCOVERY_LIMIT, stores_under
from homeport.core.runtime import build_runtime
from homeport.core.settings import ServeSettings
from homeport.store import decisions

from ._seed import make_project

pytestmark = pytest.mark.anyio


def with_store(root: Path, summary: str = "Use SQLite") -> Path:
    """`root` as a project whose memory was written by an earlier server (closed since)."""
    if not (root / ".git").exists():
        (root / ".git").mkdir(parents=True)
    runtime = build_runtime(ServeSettings(transport="stdio", cwd=root))
    try:
        store = runtime.stores.get(root.resolve(), create=True)
        assert store is not None
        decisions.log_decision(store, summary)
    finally:
        runtime.close()
    return root.resolve()


async def test_a_fresh_dashboard_lists_the_projects_with_a_store_under_the_allowed_root(
    make_app, client_for, tmp_path: Path
):
    alpha = with_store(make_project(tmp_path / "src", "alpha"))
    beta = with_store(make_project(tmp_path / "src" / "team", "beta"))
    bare = make_project(tmp_path / "src", "no-memory-yet").resolve()
    app, _ = make_app()
    listing = await client_for(app).get("/ui/")
    assert listing.status_code == 200
    assert str(alpha) in listing.text and str(beta) in listing.text
    assert str(bare) not in listing.text  # a project without a store has nothing to show


async def test_a_project_outside_the_allowed_root_reached_by_a_symlink_is_not_listed(
    make_app, client_for, tmp_path: Path
):
    outside = with_store(make_project(tmp_path / "elsewhere", "secret"), "Outside the root")
    (tmp_path / "src").mkdir()
    os.symlink(outside, tmp_path / "src" / "link")
    os.symlink(tmp_path / "elsewhere", tmp_path / "src" / "dirlink")
    app, _ = make_app()
    listing = await client_for(app).get("/ui/")
    assert listing.status_code == 200
    for shown in (outside, tmp_path / "src" / "link", tmp_path / "src" / "dirlink"):
        assert str(shown) not in listing.text
    assert "<tbody>" not in listing.text  # nothing listed at all


async def test_a_store_behind_a_symlinked_homeport_folder_is_not_listed(make_app, client_for, tmp_path: Path):
    outside = with_store(make_project(tmp_path / "elsewhere", "real"))
    trap = make_project(tmp_path / "src", "trap")
    os.symlink(outside / ".homeport", trap / ".homeport")
    app, _ = make_app()
    listing = await client_for(app).get("/ui/")
    assert listing.status_code == 200 and str(trap.resolve()) not in listing.text and str(outside) not in listing.text


async def test_under_auth_the_found_projects_are_listed_only_to_whom_may_read_them(
    make_app, client_for, tmp_path: Path, agents: dict[str, str]
):
    alpha = with_store(make_project(tmp_path / "src", "alpha"))
    app, _ = make_app(auth=True)
    for agent, sees in (("ada", True), ("bea", False)):
        client = client_for(app)
        token = await _login(client, agents[agent])
        assert token.status_code == 303
        listing = await client.get("/ui/")
        assert listing.status_code == 200
        assert (str(alpha) in listing.text) is sees, agent


async def _login(client, token: str):
    import re

    page = await client.get("/ui/login")
    csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page.text)
    assert csrf
    return await client.post("/ui/login", data={"token": token, "csrf": csrf.group(1), "next": "/ui/"})


def test_the_search_stops_at_its_depth(tmp_path: Path):
    deep = tmp_path / "src"
    for n in range(DISCOVERY_DEPTH + 1):
        deep = deep / f"level{n}"
    shallow = with_store(make_project(tmp_path / "src", "shallow"))
    with_store(make_project(deep, "too-deep"))
    runtime = build_runtime(ServeSettings(transport="http", allow_roots=(tmp_path / "src",), cwd=tmp_path))
    try:
        assert set(runtime.known_workspaces()) == {shallow}
    finally:
        runtime.close()


def test_the_search_lists_at_most_its_limit_and_walks_a_bounded_number_of_folders(tmp_path: Path):
    src = tmp_path / "src"
    for n in range(DISCOVERY_LIMIT + 5):
        (src / f"p{n:03}" / ".homeport").mkdir(parents=True)
        (src / f"p{n:03}" / ".homeport" / "homeport.db").write_bytes(b"")
    runtime = build_runtime(ServeSettings(transport="http", allow_roots=(src,), cwd=tmp_path))
    try:
        guard = runtime.resolver.settings.guard
        assert len(stores_under((src,), guard)) == DISCOVERY_LIMIT
        many = src / "wide"  # inside the allowed root: the guard accepts what lies there
        for n in range(300):
            (many / f"d{n}").mkdir(parents=True)
        (many / "d299" / "x" / ".homeport").mkdir(parents=True)
        (many / "d299" / "x" / ".homeport" / "homeport.db").write_bytes(b"")
        assert stores_under((many,), guard, budget=100) == []  # the budget ran out before d299
        assert stores_under((many,), guard) == [(many / "d299" / "x").resolve()]
    finally:
        runtime.close()


def test_homeports_own_data_directory_inside_the_allowed_root_is_never_listed(tmp_path: Path):
    src = tmp_path / "src"
    data = src / "data"
    (data / ".homeport").mkdir(parents=True)
    (data / ".homeport" / "homeport.db").write_bytes(b"")
    runtime = build_runtime(
        ServeSettings(transport="http", allow_roots=(src,), cwd=tmp_path, data_dir=data, directory_file=data / "d.toml")
    )
    try:
        assert runtime.known_workspaces() == {}
    finally:
        runtime.close()
