"""The store side of branch scoping: what is scoped, what forgets it, promote, and where nothing is asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from _git_repos import git
from homeport.errors import InvalidItemError
from homeport.store import branches, decisions, patterns, progress
from homeport.store.transfer import export_memory, import_memory


def commit(root: Path, name: str) -> None:
    (root / name).write_text(name)
    git(root, "add", name)
    git(root, "commit", "-q", "-m", name)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "trunk")
    commit(root, "first")
    return root


@pytest.fixture
def store(tmp_path: Path, copy_store):
    s = copy_store(tmp_path / "store")
    yield s
    s.close()


def scoped(store) -> list[tuple[str, str | None]]:
    from sqlalchemy import select

    from homeport.store.schema import item_branches

    with store.read() as conn:
        return [(r.item_type, r.branch) for r in conn.execute(select(item_branches).order_by(item_branches.c.id))]


def seen(store, root: Path) -> tuple[list[str], int]:
    with branches.working_in(root) as place:
        summaries = [d["summary"] for d in decisions.get_decisions(store, limit=100)]
    return summaries, place.hidden_on_other_branches


def test_only_decisions_and_patterns_are_scoped_and_progress_is_seen_everywhere(store, repo: Path):
    (repo / ".homeport").mkdir()
    (repo / ".homeport" / "config.toml").write_text('[branches]\ndefault = "trunk"\n')  # git names no default
    git(repo, "checkout", "-q", "-b", "feat")
    commit(repo, "f")
    with branches.working_in(repo):
        decisions.log_decision(store, "branch decision")
        patterns.log_system_pattern(store, "branch pattern", "p")
        progress.log_progress(store, "TODO", "branch task")
    assert scoped(store) == [("decision", "feat"), ("system_pattern", "feat")]
    git(repo, "checkout", "-q", "trunk")
    assert seen(store, repo) == ([], 1)
    with branches.working_in(repo):
        assert [p["description"] for p in progress.get_progress(store)] == ["branch task"]


def test_a_detached_head_on_the_default_branch_s_history_writes_as_the_default_branch(store, repo: Path):
    (repo / ".homeport").mkdir()
    (repo / ".homeport" / "config.toml").write_text('[branches]\ndefault = "trunk"\n')
    git(repo, "checkout", "-q", "--detach")
    with branches.working_in(repo):
        decisions.log_decision(store, "detached on trunk's commit")
    assert scoped(store) == []


def test_deleting_a_scoped_decision_forgets_its_branch_and_an_import_replacing_the_memory_too(store, repo, tmp_path):
    git(repo, "branch", "-q", "-m", "trunk", "main")
    git(repo, "checkout", "-q", "-b", "feat")
    commit(repo, "f")
    with branches.working_in(repo):
        gone = decisions.log_decision(store, "deleted")
        kept = decisions.log_decision(store, "kept")
    decisions.delete_decision(store, gone["id"])
    assert scoped(store) == [("decision", "feat")]
    export_memory(store, repo)
    import_memory(store, repo, mode="replace")
    assert scoped(store) == [("decision", "feat")]  # the export carries where "kept" was written; "deleted" had none
    git(repo, "checkout", "-q", "main")
    assert seen(store, repo) == ([], 1)
    assert kept["id"]


def test_promote_counts_by_type_and_refuses_an_empty_name(store, repo: Path):
    git(repo, "branch", "-q", "-m", "trunk", "main")
    git(repo, "checkout", "-q", "-b", "spike")
    commit(repo, "s")
    with branches.working_in(repo):
        decisions.log_decision(store, "one")
        patterns.log_system_pattern(store, "two", "p")
    assert branches.promote(store, "spike") == {
        "branch": "spike",
        "promoted": 2,
        "decisions": 1,
        "system_patterns": 1,
    }
    assert branches.promote(store, "spike")["promoted"] == 0  # idempotent
    with pytest.raises(InvalidItemError):
        branches.promote(store, "  ")


def test_outside_a_work_tree_and_outside_any_call_nothing_is_hidden_or_recorded(store, repo: Path, tmp_path):
    git(repo, "branch", "-q", "-m", "trunk", "main")
    git(repo, "checkout", "-q", "-b", "feat")
    commit(repo, "f")
    with branches.working_in(repo):
        decisions.log_decision(store, "on feat")
    git(repo, "checkout", "-q", "main")
    assert [d["summary"] for d in decisions.get_decisions(store)] == ["on feat"]  # no call: no place
    plain = tmp_path / "plain"
    plain.mkdir()
    assert seen(store, plain) == (["on feat"], 0)  # a reader outside git judges nothing
    with branches.working_in(None):
        decisions.log_decision(store, "nowhere")
    assert branches.place_columns() == {"branch": None, "head_commit": None, "worktree": None}


def test_on_the_event_loop_git_is_never_run_and_a_judged_view_is_read_from_memory(store, repo: Path):
    from homeport.store.loop_calls import MustWait, on_loop

    git(repo, "branch", "-q", "-m", "trunk", "main")
    git(repo, "checkout", "-q", "-b", "feat")
    commit(repo, "f")
    with on_loop(), branches.working_in(repo), pytest.raises(MustWait):
        decisions.log_decision(store, "on feat")  # is it already on main? asks git: not on the loop
    with branches.working_in(repo):
        decisions.log_decision(store, "on feat")
    git(repo, "checkout", "-q", "main")
    with on_loop(), branches.working_in(repo), pytest.raises(MustWait):
        decisions.get_decisions(store)  # a view never judged: git runs, so the call moves to a thread
    assert seen(store, repo) == ([], 1)
    with on_loop(), branches.working_in(repo) as place:
        assert decisions.get_decisions(store) == []  # judged already: from memory, on the loop
    assert place.hidden_on_other_branches == 1
