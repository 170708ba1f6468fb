"""`homeport serve` over a real stdio subprocess: every workspace source, in both protocol eras.

Each test starts its own server process (the SDK's stdio client owns and stops it) with a clean
environment, a chosen cwd and only the sources the test names, then checks which workspace a
call landed in and which source the result reports.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import types

from ._support import clean_env, error_text, make_project, ok, stdio_client, store_file, where

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture(params=["auto", "legacy"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


def one_root(path: Path):
    async def list_roots(_context: object) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=path.as_uri(), name=path.name)])

    return list_roots


async def test_a_write_from_a_project_directory_lands_there_with_source_cwd_and_creates_its_store(
    tmp_path: Path, mode: str
) -> None:
    project = make_project(tmp_path / "shop")
    async with stdio_client(cwd=project, mode=mode) as client:
        written = await client.call_tool("log_decision", {"summary": "Use SQLite WAL", "tags": ["db"]})
        assert where(written) == (str(project), "cwd")
        listed = ok(await client.call_tool("get_decisions", {}))
    assert [d["summary"] for d in listed["decisions"]] == ["Use SQLite WAL"]
    assert listed["workspace"] == {"root": str(project), "source": "cwd"}
    assert store_file(project).is_file()


async def test_a_server_started_in_a_subdirectory_writes_to_the_project_root_not_a_second_store(
    tmp_path: Path, mode: str
) -> None:
    project = make_project(tmp_path / "shop")
    sub = project / "api" / "handlers"
    sub.mkdir(parents=True)
    async with stdio_client(cwd=sub, mode=mode) as client:
        written = await client.call_tool("log_decision", {"summary": "handlers are thin"})
    assert where(written) == (str(project), "cwd")
    assert store_file(project).is_file()
    assert not (sub / ".homeport").exists()
    assert not (project / "api" / ".homeport").exists()


async def test_a_server_started_in_the_filesystem_root_with_no_source_refuses_and_names_the_ways_to_set_one(
    mode: str,
) -> None:
    existed_before = Path("/.homeport").exists()
    async with stdio_client(cwd="/", mode=mode) as client:
        write_error = error_text(await client.call_tool("log_decision", {"summary": "lost"}))
        read_error = error_text(await client.call_tool("get_decisions", {}))
    for text in (write_error, read_error):
        assert "no workspace" in text
        assert "--workspace" in text
        assert "workspace argument" in text
        assert "CLAUDE_PROJECT_DIR" in text
    assert Path("/.homeport").exists() == existed_before


async def test_the_workspace_flag_gives_source_config_even_when_the_cwd_is_another_project(
    tmp_path: Path, mode: str
) -> None:
    configured = make_project(tmp_path / "configured")
    elsewhere = make_project(tmp_path / "elsewhere")
    async with stdio_client(cwd=elsewhere, mode=mode, args=("--workspace", str(configured))) as client:
        written = await client.call_tool("log_decision", {"summary": "configured wins"})
    assert where(written) == (str(configured), "config")
    assert store_file(configured).is_file()
    assert not (elsewhere / ".homeport").exists()


async def test_claude_project_dir_gives_source_client_env_even_when_the_cwd_is_another_project(
    tmp_path: Path, mode: str
) -> None:
    hinted = make_project(tmp_path / "hinted")
    elsewhere = make_project(tmp_path / "elsewhere")
    env = clean_env(CLAUDE_PROJECT_DIR=str(hinted))
    async with stdio_client(cwd=elsewhere, mode=mode, env=env) as client:
        written = await client.call_tool("log_decision", {"summary": "hint wins over cwd"})
    assert where(written) == (str(hinted), "client_env")
    assert store_file(hinted).is_file()
    assert not (elsewhere / ".homeport").exists()


async def test_a_client_with_one_root_and_a_server_in_the_filesystem_root_gives_source_roots(
    tmp_path: Path, mode: str
) -> None:
    rooted = make_project(tmp_path / "rooted")
    async with stdio_client(cwd="/", mode=mode, list_roots_callback=one_root(rooted)) as client:
        written = await client.call_tool("log_decision", {"summary": "from the client's root"})
        read = await client.call_tool("get_decisions", {})
    assert where(written) == (str(rooted), "roots")
    assert where(read) == (str(rooted), "roots")
    assert [d["summary"] for d in ok(read)["decisions"]] == ["from the client's root"]
    assert store_file(rooted).is_file()


async def test_the_workspace_argument_beats_session_config_roots_client_env_and_cwd(tmp_path: Path, mode: str) -> None:
    # Every other source names its own project, all inside the client's single root, so the
    # argument is also allowed by the client-roots guard whatever the server fetched.
    client_root = tmp_path / "client-root"
    chosen = make_project(client_root / "chosen")
    configured = make_project(client_root / "configured")
    hinted = make_project(client_root / "hinted")
    cwd = make_project(client_root / "cwd")
    session = make_project(client_root / "session")
    others = (configured, hinted, cwd, session)
    env = clean_env(CLAUDE_PROJECT_DIR=str(hinted))
    async with stdio_client(
        cwd=cwd,
        mode=mode,
        env=env,
        args=("--workspace", str(configured)),
        list_roots_callback=one_root(Path(client_root)),
    ) as client:
        ok(await client.call_tool("use_workspace", {"workspace": str(session)}))
        as_path = await client.call_tool("log_decision", {"summary": "by path", "workspace": str(chosen)})
        as_uri = await client.call_tool("log_decision", {"summary": "by uri", "workspace": chosen.as_uri()})
        read = await client.call_tool("get_decisions", {"workspace": str(chosen)})
        without = ok(await client.call_tool("where_am_i", {}))
    assert where(as_path) == (str(chosen), "argument")
    assert where(as_uri) == (str(chosen), "argument")
    assert where(read) == (str(chosen), "argument")
    assert sorted(d["summary"] for d in ok(read)["decisions"]) == ["by path", "by uri"]
    for other in others:
        assert not (other / ".homeport").exists(), f"a write leaked into {other}"
    # Without the argument the next source in line wins: the session (legacy) or the config (auto).
    expected = (str(session), "session") if mode == "legacy" else (str(configured), "config")
    assert (without["root"], without["source"]) == expected


async def test_use_workspace_binds_the_session_only_on_legacy_connections(tmp_path: Path, mode: str) -> None:
    chosen = make_project(tmp_path / "chosen")
    cwd = make_project(tmp_path / "cwd")
    async with stdio_client(cwd=cwd, mode=mode) as client:
        used = ok(await client.call_tool("use_workspace", {"workspace": str(chosen)}))
        later = await client.call_tool("log_decision", {"summary": "after use_workspace"})
        by_handle = await client.call_tool("get_decisions", {"workspace": used["handle"]})
    assert used["root"] == str(chosen)
    assert used["store"] == str(store_file(chosen))
    assert used["handle"].startswith("ws_")
    assert used["workspace"] == {"root": str(chosen), "source": "argument"}
    assert where(by_handle) == (str(chosen), "argument")
    if mode == "legacy":
        assert used["bound_to_session"] is True
        assert where(later) == (str(chosen), "session")
        assert [d["summary"] for d in ok(by_handle)["decisions"]] == ["after use_workspace"]
        assert not (cwd / ".homeport").exists()
    else:
        # 2026-07-28 has no sessions: nothing persists, the next call falls through to the cwd.
        assert used["bound_to_session"] is False
        assert where(later) == (str(cwd), "cwd")
        assert ok(by_handle)["decisions"] == []
        assert not (chosen / ".homeport").exists()


async def test_reads_of_a_workspace_without_a_store_do_not_create_it(tmp_path: Path, mode: str) -> None:
    project = make_project(tmp_path / "fresh")
    other = make_project(tmp_path / "other")
    async with stdio_client(cwd=project, mode=mode) as client:
        results = {
            "where_am_i": await client.call_tool("where_am_i", {}),
            "get_product_context": await client.call_tool("get_product_context", {}),
            "get_active_context": await client.call_tool("get_active_context", {}),
            "get_decisions": await client.call_tool("get_decisions", {}),
            "get_progress": await client.call_tool("get_progress", {}),
            "get_custom_data": await client.call_tool("get_custom_data", {}),
            "search": await client.call_tool("search", {"query": "anything"}),
            "use_workspace": await client.call_tool("use_workspace", {"workspace": str(other)}),
            "get_decisions(other)": await client.call_tool("get_decisions", {"workspace": str(other)}),
        }
    for name, result in results.items():
        ok(result)
        assert result.structured_content["workspace"]["root"] in (str(project), str(other)), name
    assert ok(results["where_am_i"])["store_exists"] is False
    assert ok(results["get_decisions"])["decisions"] == []
    assert ok(results["get_progress"])["progress"] == []
    assert ok(results["get_custom_data"])["items"] == []
    assert ok(results["search"])["results"] == []
    assert ok(results["get_decisions(other)"])["decisions"] == []
    assert not (project / ".homeport").exists()
    assert not (other / ".homeport").exists()
