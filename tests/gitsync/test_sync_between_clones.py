"""Two clones of one repository with separate stores converge through `homeport sync`, with real git."""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

import pytest

from homeport.errors import SyncError, SyncSecretError
from homeport.store import custom_data, decisions, links, patterns, progress
from homeport.store.versions import read_versions
from homeport.sync import FALLBACK_BRANCH, open_conflicts, resolve_conflicts, sync_memory

from ._repos import git, git_state


def memory_files(clone: Path, ref: str = "refs/homeport/memory") -> dict[str, str]:
    listing = git(clone, "ls-tree", "-r", "--name-only", ref).split()
    return {path: git(clone, "show", f"{ref}:{path}") for path in listing}


def test_two_clones_converge_and_git_status_never_changes(clone):
    a, store_a = clone("a")
    b, store_b = clone("b")
    before = git_state(a), git_state(b)
    d = decisions.log_decision(store_a, "Use SQLite WAL", rationale="readers never block", tags=["storage"])
    p = patterns.log_system_pattern(store_a, "Repository pattern", "one module per item type")
    links.link_items(store_a, "decision", d["id"], "system_pattern", p["id"], "implements")
    custom_data.log_custom_data(store_a, "glossary", "HLC", {"means": "hybrid logical clock"})
    parent = progress.log_progress(store_a, "IN_PROGRESS", "sync memory")
    progress.log_progress(store_a, "TODO", "write the bench", parent_id=parent["id"])

    first = sync_memory(store_a, a)
    assert first["pushed"] and first["exported"] == 5
    second = sync_memory(store_b, b)
    assert second["received"] == 5 and not second["pushed"]

    got = decisions.get_decisions(store_b)
    assert [(x["summary"], x["rationale"], x["tags"]) for x in got] == [
        ("Use SQLite WAL", "readers never block", ["storage"])
    ]
    linked = links.get_linked_items(store_b, "decision", got[0]["id"])
    assert [x["relationship"] for x in linked] == ["implements"]
    tree = progress.get_progress_tree(store_b)
    assert tree[0]["description"] == "sync memory"
    assert [c["description"] for c in tree[0]["children"]] == ["write the bench"]
    assert custom_data.get_custom_data(store_b, category="glossary")[0]["value"] == {"means": "hybrid logical clock"}

    assert memory_files(a) == memory_files(b)
    assert (git_state(a), git_state(b)) == before  # no work tree, index, HEAD or branch touched


def test_edits_on_both_sides_merge_field_by_field(clone):
    a, store_a = clone("a")
    b, store_b = clone("b")
    d = decisions.log_decision(store_a, "cache results", rationale="slow")
    sync_memory(store_a, a)
    sync_memory(store_b, b)
    decisions.update_decision(store_a, d["id"], rationale="slow upstream")  # a different field on each side
    decisions.update_decision(store_b, d["id"], summary="cache upstream results", tags=["perf"])
    sync_memory(store_a, a)
    report = sync_memory(store_b, b)
    sync_memory(store_a, a)
    assert report["merged"] and report["conflicts"] == []
    for store in (store_a, store_b):
        (got,) = decisions.get_decisions(store)
        assert (got["summary"], got["rationale"], got["tags"]) == ("cache upstream results", "slow upstream", ["perf"])
    assert memory_files(a) == memory_files(b)


def test_a_concurrent_edit_of_one_field_is_kept_in_history_and_reported(clone):
    a, store_a = clone("a")
    b, store_b = clone("b")
    d = decisions.log_decision(store_a, "deploy on fridays")
    sync_memory(store_a, a)
    sync_memory(store_b, b)
    decisions.update_decision(store_a, d["id"], summary="never deploy on fridays")
    # An edit's clock is its time in milliseconds; two edits in the same one tie, and the replica id (random)
    # decides. This test is about the later edit winning, so the second is made a millisecond later.
    _next_millisecond()
    decisions.update_decision(store_b, d["id"], summary="deploy on fridays with a rollback plan")  # later: wins
    sync_memory(store_a, a)
    report = sync_memory(store_b, b)
    sync_memory(store_a, a)

    assert [(c["item_type"], c["field"]) for c in report["conflicts"]] == [("decision", "summary")]
    for store in (store_a, store_b):
        (got,) = decisions.get_decisions(store)
        assert got["summary"] == "deploy on fridays with a rollback plan"
        with store.read() as conn:
            summaries = [v["fields"]["summary"] for v in read_versions(conn, "decision", got["id"])]
        assert "never deploy on fridays" in summaries  # the losing value is in the item's history
        conflicts = open_conflicts(store)
        assert conflicts["count"] == 1
        assert conflicts["items"][0]["lost_value"] == "never deploy on fridays"
    assert memory_files(a) == memory_files(b)
    assert resolve_conflicts(store_a) == {"resolved": 1}
    assert open_conflicts(store_a)["count"] == 0 and open_conflicts(store_b)["count"] == 1  # looked at here only


def test_a_delete_travels_as_a_tombstone(clone):
    a, store_a = clone("a")
    b, store_b = clone("b")
    d = decisions.log_decision(store_a, "temporary decision")
    sync_memory(store_a, a)
    sync_memory(store_b, b)
    decisions.delete_decision(store_b, decisions.get_decisions(store_b)[0]["id"])
    sync_memory(store_b, b)
    sync_memory(store_a, a)
    assert decisions.get_decisions(store_a) == []
    (path,) = [p for p in memory_files(a) if p.startswith("decision/")]
    doc = json.loads(memory_files(a)[path])
    assert doc["deleted"]["v"] is True and doc["fields"]["summary"]["v"] == "temporary decision"
    assert d["id"]


def test_a_tag_added_concurrently_with_its_removal_survives(clone):
    (a, store_a), (c, store_c) = clone("a"), clone("c")
    d = decisions.log_decision(store_a, "tagged")
    sync_memory(store_a, a)
    sync_memory(store_c, c)
    decisions.update_decision(store_a, d["id"], tags=["x"])
    sync_memory(store_a, a)
    decisions.update_decision(store_a, d["id"], tags=[])  # a removes the x it added
    cid = decisions.get_decisions(store_c)[0]["id"]
    decisions.update_decision(store_c, cid, tags=["x"])  # c, not having seen a's x, adds its own
    for path, store in ((a, store_a), (c, store_c), (a, store_a)):
        sync_memory(store, path)
    # a's removal removed only the add it had seen: c's add wins, on both sides.
    assert [x["tags"] for x in decisions.get_decisions(store_a)] == [["x"]]
    assert [x["tags"] for x in decisions.get_decisions(store_c)] == [["x"]]


def test_an_item_holding_a_secret_blocks_the_sync_naming_it(clone):
    a, store_a = clone("a")
    d = decisions.log_decision(store_a, "deploy key", rationale="AWS key AKIAIOSFODNN7EXAMPLE for the bucket")
    with pytest.raises(SyncSecretError) as caught:
        sync_memory(store_a, a)
    assert f"decision {d['id']}" in caught.value.message and "rationale" in caught.value.message
    assert git(a, "for-each-ref", "refs/homeport") == ""  # nothing exported


def test_a_host_that_refuses_custom_refs_gets_the_memory_branch(clone, remote):
    hook = remote / "hooks" / "update"
    hook.write_text('#!/bin/sh\ncase "$1" in refs/heads/*) exit 0;; esac\necho "only branches here" >&2\nexit 1\n')
    hook.chmod(hook.stat().st_mode | stat.S_IEXEC)
    a, store_a = clone("a")
    b, store_b = clone("b")
    decisions.log_decision(store_a, "works on branch-only hosts")
    report = sync_memory(store_a, a)
    assert report["pushed"] and report["remote_ref"] == FALLBACK_BRANCH
    assert git(remote, "for-each-ref", "--format=%(refname)", "refs/").split() == [
        "refs/heads/homeport-memory",
        "refs/heads/main",
    ]
    sync_memory(store_b, b)
    assert [x["summary"] for x in decisions.get_decisions(store_b)] == ["works on branch-only hosts"]
    files = git(remote, "ls-tree", "-r", "--name-only", FALLBACK_BRANCH).split()
    assert files and all(f.startswith("decision/") for f in files)  # only memory files on that branch


def test_a_hostile_repository_config_runs_nothing(clone, tmp_path):
    a, store_a = clone("a")
    proof = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {proof}\nexit 1\n")
    script.chmod(0o755)
    git(a, "config", "core.fsmonitor", str(script))
    git(a, "config", "remote.origin.uploadpack", str(script))
    git(a, "config", "remote.origin.receivepack", str(script))
    hooks = a / ".git" / "hooks"
    for name in ("reference-transaction", "pre-push", "post-commit"):
        (hooks / name).write_text(f"#!/bin/sh\ntouch {proof}\n")
        (hooks / name).chmod(0o755)
    decisions.log_decision(store_a, "safe")
    assert sync_memory(store_a, a)["pushed"]
    assert not proof.exists()


def test_without_a_remote_the_sync_says_which_and_how(clone, tmp_path):
    a, store_a = clone("a")
    decisions.log_decision(store_a, "x")
    with pytest.raises(SyncError) as caught:
        sync_memory(store_a, a, remote="nowhere")
    assert "nowhere" in caught.value.message
    with pytest.raises(SyncError) as caught:
        sync_memory(store_a, tmp_path, remote="origin")  # tmp_path holds the clones but is no repository
    assert "git repository" in caught.value.message


def _next_millisecond() -> None:
    start = time.time_ns() // 1_000_000
    while time.time_ns() // 1_000_000 <= start + 1:
        pass
