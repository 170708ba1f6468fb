"""homeport.git reads refs from files exactly as git resolves them, and a hostile repository runs nothing."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from _git_repos import git
from homeport.git import refs
from homeport.git.command import SAFE_CONFIG
from homeport.git.topology import Facts
from homeport.store import Store, branches, decisions


def commit(root: Path, name: str) -> str:
    (root / name).write_text(f"{name}\n")
    git(root, "add", name)
    git(root, "commit", "-q", "-m", name)
    return git(root, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit(root, "first")
    return root


def test_loose_and_packed_refs_resolve_as_git_resolves_them(repo: Path):
    git(repo, "checkout", "-q", "-b", "feat/deep/name")
    tip = commit(repo, "f")
    repository = refs.find_repository(repo)
    assert repository is not None
    assert refs.read_head(repository) == refs.Head("feat/deep/name", tip)
    git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "feat").exists() or not any(
        (repo / ".git" / "refs" / "heads" / "feat").rglob("name")
    )
    assert refs.resolve(repository, "refs/heads/feat/deep/name") == tip
    assert refs.branch_tip(repository, "main") == git(repo, "rev-parse", "main")
    assert refs.resolve(repository, "refs/heads/../../config") is None  # never leaves the git directory


def test_a_detached_head_has_no_branch_and_an_unborn_branch_no_commit(tmp_path: Path, repo: Path):
    git(repo, "checkout", "-q", "--detach")
    repository = refs.find_repository(repo)
    assert repository is not None
    assert refs.read_head(repository) == refs.Head(None, git(repo, "rev-parse", "HEAD"))
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q", "-b", "trunk")
    unborn = refs.find_repository(empty)
    assert unborn is not None
    assert refs.read_head(unborn) == refs.Head("trunk", None)
    assert refs.default_branch(unborn) is None
    assert refs.default_branch(unborn, configured="trunk") == "trunk"


def test_a_linked_worktree_has_its_own_head_and_the_clone_s_refs(tmp_path: Path, repo: Path):
    git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    side = refs.find_repository(tmp_path / "side")
    assert side is not None and side.common_dir.resolve() == (repo / ".git").resolve()
    assert refs.read_head(side).branch == "side"
    assert refs.location_of(tmp_path / "side") == refs.Location(
        "side", git(repo, "rev-parse", "main"), str(tmp_path / "side"), "main"
    )


def test_the_default_branch_is_origin_s_head_then_main_then_master(tmp_path: Path, repo: Path):
    git(repo, "checkout", "-q", "-b", "develop")
    commit(repo, "d")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", f"file://{repo}", str(clone))
    repository = refs.find_repository(clone)
    assert repository is not None and refs.default_branch(repository) == "develop"
    git(repo, "branch", "-q", "-m", "main", "master")
    master_only = refs.find_repository(repo)
    assert master_only is not None and refs.default_branch(master_only) == "master"


def test_a_head_that_is_a_fifo_or_a_directory_is_not_read(repo: Path):
    head = repo / ".git" / "HEAD"
    head.unlink()
    os.mkfifo(head)  # a read would block forever
    assert stat.S_ISFIFO(head.stat().st_mode)
    repository = refs.find_repository(repo)
    assert repository is not None
    assert refs.read_head(repository) == refs.Head(None, None)


HOSTILE = """#!/bin/sh
echo "$0 $*" >> {marker}
"""


def test_a_hostile_repository_config_runs_no_program_while_memory_is_written_and_read(tmp_path: Path, repo: Path):
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(HOSTILE.format(marker=marker))
    script.chmod(0o755)
    git(repo, "checkout", "-q", "-b", "feat")
    commit(repo, "a")
    commit(repo, "b")
    store = Store.open(tmp_path / "store", create=True)
    assert store is not None
    hooks = repo / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in ("post-checkout", "pre-commit", "reference-transaction", "fsmonitor-watchman"):
        (hooks / name).write_text(HOSTILE.format(marker=marker))
        (hooks / name).chmod(0o755)
    (repo / ".gitattributes").write_text("* diff=evil filter=evil\n")
    with (repo / ".git" / "config").open("a") as config:
        config.write(
            f"[core]\n\tfsmonitor = {script}\n\tpager = {script}\n\tsshCommand = {script}\n"
            f"\talternateRefsCommand = {script}\n\thooksPath = {hooks}\n"
            f'[diff]\n\texternal = {script}\n[diff "evil"]\n\ttextconv = {script}\n\tcommand = {script}\n'
            f'[filter "evil"]\n\tclean = {script}\n\tsmudge = {script}\n\tprocess = {script}\n'
            f"[gpg]\n\tprogram = {script}\n[log]\n\tshowSignature = true\n"
            f"[credential]\n\thelper = !{script}\n[alias]\n\tcherry = !{script}\n"
        )
    # the test's own checkout would run them: move HEAD by hand, as git does, and write on the branch
    with branches.working_in(repo):
        decisions.log_decision(store, "on feat")
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    with branches.working_in(repo) as place:
        assert decisions.get_decisions(store) == []
    assert place.hidden_on_other_branches == 1
    facts = Facts(repo / ".git")  # every question topology asks, on a fresh cache
    tip = git(repo, "rev-parse", "feat")
    assert not facts.is_ancestor(tip, git(repo, "rev-parse", "main"))
    assert not facts.patches_on(tip, git(repo, "rev-parse", "main"))
    assert facts.has_commit(tip)
    store.close()
    assert not marker.exists(), marker.read_text()


def test_every_setting_that_runs_a_program_on_a_read_is_overridden():
    overridden = {setting.split("=", 1)[0] for setting in SAFE_CONFIG}
    assert {"core.fsmonitor", "core.hooksPath", "diff.external", "core.pager", "core.sshCommand"} <= overridden
    assert "protocol.allow" in overridden  # a partial clone's lazy fetch would use the network and core.sshCommand


def test_asking_many_commits_at_once_gives_the_answers_asking_one_by_one_gives(tmp_path: Path, repo: Path):
    main = git(repo, "rev-parse", "main")
    commits = {main}
    for n in range(4):
        git(repo, "checkout", "-q", "-b", f"b{n}", "main")
        commits.add(commit(repo, f"b{n}"))
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "b1", "-m", "merge b1")
    tip = git(repo, "rev-parse", "main")
    unknown = "0" * 40
    batch, single = Facts(repo / ".git"), Facts(repo / ".git")
    batch.prefetch({*commits, unknown}, {tip, main})
    for c in commits:
        for d in (tip, main):
            assert batch.is_ancestor(c, d) == single.is_ancestor(c, d), (c, d)
    assert batch.has_commit(unknown) is False and single.has_commit(unknown) is False
    assert sum(batch.is_ancestor(c, tip) for c in commits) == 2  # main's first commit and b1


def test_a_squash_found_after_the_default_branch_moved_on_stays_found(repo: Path):
    git(repo, "checkout", "-q", "-b", "feat")
    commit(repo, "f1")
    work = commit(repo, "f2")
    git(repo, "checkout", "-q", "main")
    facts = Facts(repo / ".git")
    assert not facts.patches_on(work, commit(repo, "m1"))  # remembers what main had then
    git(repo, "merge", "-q", "--squash", "feat")
    git(repo, "commit", "-q", "-m", "feat squashed")
    squashed = git(repo, "rev-parse", "HEAD")
    assert facts.patches_on(work, squashed)  # only main's new commits were read
    assert facts.patches_on(work, commit(repo, "m2"))
    assert Facts(repo / ".git").patches_on(work, git(repo, "rev-parse", "HEAD"))  # the same, asked afresh


def test_a_rebase_merged_in_two_pulls_is_found_when_its_last_commit_arrives(repo: Path):
    git(repo, "checkout", "-q", "-b", "feat")
    first = commit(repo, "f1")
    work = commit(repo, "f2")
    git(repo, "checkout", "-q", "main")
    facts = Facts(repo / ".git")
    git(repo, "cherry-pick", first)
    assert not facts.patches_on(work, git(repo, "rev-parse", "HEAD"))  # half of it
    git(repo, "cherry-pick", work)
    assert facts.patches_on(work, git(repo, "rev-parse", "HEAD"))
