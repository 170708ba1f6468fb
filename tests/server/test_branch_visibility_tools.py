"""Branch-aware visibility through the real MCP client, in both protocol eras: every read that lists
decisions or patterns leaves out a branch's unmerged ones and says how many and why."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from _git_repos import git

pytestmark = pytest.mark.anyio
MODES = pytest.mark.parametrize("mode", ["auto", "legacy"])


def repository(root: Path) -> Path:
    """The fixture's project (a bare `.git` folder) as a real repository with one commit on main."""
    (root / ".git").rmdir()
    (root / "README").write_text("hello\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    return root


def commit(root: Path, name: str) -> None:
    (root / name).write_text(name)
    git(root, "add", name)
    git(root, "commit", "-q", "-m", name)


async def call(c: Client, tool: str, /, **arguments):
    r = await c.call_tool(tool, arguments)
    assert not r.is_error, r.content[0].text
    return r.structured_content


@MODES
async def test_a_feature_branch_decision_is_hidden_on_main_counted_and_seen_once_merged(server_factory, projects, mode):
    root = repository(projects["alpha"])
    ws = str(root)
    async with Client(server_factory(), mode=mode) as c:
        await call(c, "log_decision", summary="Queue retries on main", workspace=ws)
        git(root, "checkout", "-q", "-b", "feat/retry")
        commit(root, "retry.py")
        d = await call(c, "log_decision", summary="Retry with jitter on the branch", workspace=ws)
        await call(c, "log_system_pattern", name="Jittered backoff", description="sleep a random share", workspace=ws)
        await call(c, "log_progress", status="TODO", description="retry everything", workspace=ws)
        assert {x["summary"] for x in (await call(c, "get_decisions", workspace=ws))["decisions"]} == {
            "Queue retries on main",
            "Retry with jitter on the branch",
        }

        git(root, "checkout", "-q", "main")
        listed = await call(c, "get_decisions", workspace=ws)
        assert [x["summary"] for x in listed["decisions"]] == ["Queue retries on main"]
        assert listed["hidden_on_other_branches"] == 1
        assert listed["hidden_why"][0]["branch"] == "feat/retry"
        assert "not merged into main" in listed["hidden_why"][0]["why"]
        patterns = await call(c, "get_system_patterns", workspace=ws)
        assert patterns["system_patterns"] == [] and patterns["hidden_on_other_branches"] == 1
        found = await call(c, "search", query="retry", mode="words", workspace=ws)
        assert d["id"] not in [h["id"] for h in found["results"] if h["type"] == "decision"]
        assert [h["type"] for h in found["results"]].count("progress") == 1  # progress is shared by every branch
        assert found["hidden_on_other_branches"] == 1
        context = await call(c, "get_context", task="retry jitter backoff", workspace=ws)
        assert ("decision", d["id"]) not in {(i["type"], i["id"]) for i in context["items"]}
        assert context["hidden_on_other_branches"] >= 1

        git(root, "merge", "-q", "--no-ff", "feat/retry", "-m", "merge")
        listed = await call(c, "get_decisions", workspace=ws)
        assert len(listed["decisions"]) == 2 and "hidden_on_other_branches" not in listed


@MODES
async def test_promote_makes_a_deleted_branch_s_decisions_visible_everywhere(server_factory, projects, mode):
    root = repository(projects["alpha"])
    ws = str(root)
    async with Client(server_factory(), mode=mode) as c:
        git(root, "checkout", "-q", "-b", "spike")
        commit(root, "spike.py")
        await call(c, "log_decision", summary="Spike: use a ring buffer", workspace=ws)
        git(root, "checkout", "-q", "main")
        git(root, "branch", "-q", "-D", "spike")
        assert (await call(c, "get_decisions", workspace=ws))["hidden_on_other_branches"] == 1
        promoted = await call(c, "promote_branch", branch="spike", workspace=ws)
        assert promoted["promoted"] == 1 and promoted["decisions"] == 1
        listed = await call(c, "get_decisions", workspace=ws)
        assert [x["summary"] for x in listed["decisions"]] == ["Spike: use a ring buffer"]


async def test_conport_s_get_decisions_says_how_many_it_left_out(server_factory, projects):
    root = repository(projects["alpha"])
    ws = str(root)
    async with Client(server_factory(), mode="auto") as c:
        git(root, "checkout", "-q", "-b", "feat")
        commit(root, "f.py")
        await call(c, "log_decision", summary="on the branch", workspace=ws)
        git(root, "checkout", "-q", "main")
    async with Client(server_factory(tool_groups=("workspace", "conport")), mode="auto") as c:
        listed = await call(c, "get_decisions", workspace_id=ws)
        assert listed["result"] == [] and listed["hidden_on_other_branches"] == 1


@MODES
async def test_a_write_records_its_branch_commit_and_work_tree_in_its_version(server_factory, projects, mode):
    root = repository(projects["alpha"])
    ws = str(root)
    head = git(root, "rev-parse", "HEAD")
    async with Client(server_factory(), mode=mode) as c:
        d = await call(c, "log_decision", summary="recorded where", workspace=ws)
        history = await call(c, "get_item_history", item_type="decision", item_id=d["id"], workspace=ws)
    (version,) = history["versions"]
    assert version["made_in"] == {"branch": "main", "commit": head, "worktree": ws}


async def test_search_by_meaning_leaves_out_another_branch_s_decision_too(runtime_factory, projects):
    from homeport.embedding.model import unavailable_reason
    from homeport.server import build_server

    reason = unavailable_reason(None)
    if reason is not None:
        pytest.skip(reason)
    root = repository(projects["alpha"])
    ws = str(root)
    runtime = runtime_factory()
    async with Client(build_server(runtime), mode="auto") as c:
        git(root, "checkout", "-q", "-b", "cdn")
        commit(root, "cdn.txt")
        hidden = await call(c, "log_decision", summary="Avatars are served from the CDN", workspace=ws)
        git(root, "checkout", "-q", "main")
        shown = await call(c, "log_decision", summary="Profile pictures are resized on upload", workspace=ws)
        assert runtime.semantic.drain(timeout=120)
        found = await call(c, "search", query="where are user profile pictures hosted", mode="semantic", workspace=ws)
    ids = [h["id"] for h in found["results"]]
    assert hidden["id"] not in ids and shown["id"] in ids
    assert found["hidden_on_other_branches"] == 1
