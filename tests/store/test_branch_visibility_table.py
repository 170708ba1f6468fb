"""Which decisions a reader sees, over real git repositories: the table of docs/explanation/branches.md.

Each row scripts a topology with the git command in a temporary directory, writes decisions where
the script says (`decide`), and checks at each `expect` which decisions a reader at that place sees
and how many are hidden from it. Every repository starts (unless the row says otherwise) with one
commit on `main` and a decision `M` written there: made on the default branch, it is seen everywhere,
and every `expect` checks that too. The expected visibility was written before the code.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from homeport.store import branches, decisions

GIT_ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


@dataclass
class Place:
    """The directories of one scripted topology and the store every place of it shares."""

    base: Path
    here: Path
    store: object
    files: int = 0

    def git(self, *args: str, at: Path | None = None) -> str:
        done = subprocess.run(
            ["git", *args], cwd=at or self.here, env=GIT_ENV, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
        return done.stdout.strip()


# The steps of a script. Each is (verb, *arguments).
def git(*args: str) -> tuple:
    return ("git", *args)


def commit(name: str) -> tuple:
    return ("commit", name)


def decide(label: str) -> tuple:
    return ("decide", label)


def expect(visible: set[str], hidden: int = 0) -> tuple:
    return ("expect", visible, hidden)


def cd(relative: str) -> tuple:
    return ("cd", relative)


def promote(branch: str) -> tuple:
    return ("promote", branch)


@dataclass
class Row:
    name: str
    steps: list[tuple]
    init: str = "main"  # the first branch; "" for a directory that is not a repository
    base_commit: bool = True  # one commit and the decision M on the first branch before the steps
    always: set[str] = field(default_factory=lambda: {"M"})


TABLE = [
    Row(
        "plain merge",
        [
            git("checkout", "-b", "feat"),
            commit("f1"),
            decide("A"),
            expect({"A"}),
            git("checkout", "main"),
            expect(set(), hidden=1),
            git("merge", "--no-ff", "feat", "-m", "merge feat"),
            expect({"A"}),
            git("checkout", "-b", "later"),
            expect({"A"}),
        ],
    ),
    Row(
        "fast-forward",
        [
            git("checkout", "-b", "feat"),
            commit("f1"),
            commit("f2"),
            decide("A"),
            git("checkout", "main"),
            expect(set(), hidden=1),
            git("merge", "--ff-only", "feat"),
            expect({"A"}),
        ],
    ),
    Row(
        "squash merge",
        [
            git("checkout", "-b", "feat"),
            commit("f1"),
            commit("f2"),
            decide("A"),
            git("checkout", "main"),
            commit("m1"),
            expect(set(), hidden=1),
            git("merge", "--squash", "feat"),
            git("commit", "-m", "feat squashed"),
            expect({"A"}),
            git("branch", "-D", "feat"),
            expect({"A"}),
        ],
    ),
    Row(
        "rebase merge",
        [
            git("checkout", "-b", "feat"),
            commit("f1"),
            commit("f2"),
            decide("A"),
            git("checkout", "main"),
            commit("m1"),
            expect(set(), hidden=1),
            # What a forge's "rebase and merge" does: the branch's commits replayed on main, the branch kept.
            git("checkout", "-b", "replay", "feat"),
            git("rebase", "main"),
            git("checkout", "main"),
            git("merge", "--ff-only", "replay"),
            git("branch", "-D", "replay"),
            expect({"A"}),
        ],
    ),
    Row(
        "cherry-pick of part of a branch",
        [
            git("checkout", "-b", "feat"),
            commit("f1"),
            commit("f2"),
            decide("A"),
            git("checkout", "main"),
            git("cherry-pick", "feat~1"),
            expect(set(), hidden=1),  # one of its two commits is on main: the branch is not merged
        ],
    ),
    Row(
        "branch deleted unmerged",
        [
            git("checkout", "-b", "feat"),
            commit("f1"),
            decide("A"),
            git("checkout", "main"),
            git("branch", "-D", "feat"),
            expect(set(), hidden=1),
            git("checkout", "-b", "other"),
            expect(set(), hidden=1),
        ],
    ),
    Row(
        "detached HEAD",
        [
            git("checkout", "--detach", "main"),
            commit("d1"),
            decide("A"),  # no branch, the commit d1
            expect({"A"}),
            git("branch", "keep"),  # a branch at d1 contains its commit
            git("checkout", "main"),
            expect(set(), hidden=1),
            git("checkout", "keep"),
            expect({"A"}),
            git("checkout", "main"),
            git("merge", "--no-ff", "keep", "-m", "merge keep"),
            expect({"A"}),
        ],
    ),
    Row(
        "two worktrees on two branches",
        [
            git("worktree", "add", "-b", "a", "../wt-a"),
            git("worktree", "add", "-b", "b", "../wt-b"),
            cd("wt-a"),
            commit("a1"),
            decide("A"),
            cd("wt-b"),
            commit("b1"),
            decide("B"),
            expect({"B"}, hidden=1),
            cd("wt-a"),
            expect({"A"}, hidden=1),
            cd("repo"),
            expect(set(), hidden=2),
        ],
    ),
    Row(
        "shallow clone",
        [
            commit("c1"),
            commit("c2"),
            git("checkout", "-b", "old"),
            commit("o1"),
            decide("O"),  # written in the origin on a branch the shallow clone never fetches
            git("checkout", "main"),
            ("clone", "--depth", "1", "--single-branch", "--branch", "main"),
            cd("clone"),
            expect(set(), hidden=1),  # O's commit is unknown here: hidden, not guessed
            git("checkout", "-b", "feat"),
            commit("f1"),
            decide("A"),
            expect({"A"}, hidden=1),
            git("checkout", "main"),
            expect(set(), hidden=2),
        ],
    ),
    Row(
        "renamed default branch",
        [
            git("checkout", "-b", "feat"),
            commit("f1"),
            decide("A"),
            git("checkout", "master"),
            git("branch", "-m", "master", "main"),  # M was written on master when it was the default
            expect(set(), hidden=1),
            git("checkout", "feat"),
            expect({"A"}),
            git("checkout", "main"),
            git("merge", "--no-ff", "feat", "-m", "merge feat"),
            expect({"A"}),
        ],
        init="master",
    ),
    Row(
        "no commits yet",
        [
            decide("A"),  # on the unborn main: the default branch
            expect({"A"}),
            commit("c0"),
            expect({"A"}),
            git("checkout", "-b", "x"),
            expect({"A"}),
        ],
        base_commit=False,
        always=set(),
    ),
    Row(
        "not a git repository",
        [
            decide("A"),
            expect({"A"}),
            git("init", "-q", "-b", "main"),
            commit("c0"),
            git("checkout", "-b", "x"),
            expect({"A"}),  # written where there was no branch: seen everywhere
        ],
        init="",
        base_commit=False,
        always=set(),
    ),
    Row(
        "branch merged into another feature branch",
        [
            git("checkout", "-b", "feat-a"),
            commit("a1"),
            decide("A"),
            git("checkout", "main"),
            git("checkout", "-b", "feat-b"),
            commit("b1"),
            decide("B"),
            git("merge", "--no-ff", "feat-a", "-m", "merge feat-a"),
            expect({"A", "B"}),
            git("checkout", "feat-a"),
            expect({"A"}, hidden=1),
            git("checkout", "main"),
            expect(set(), hidden=2),
        ],
    ),
    Row(
        "default branch from origin/HEAD",
        [
            git("checkout", "-b", "develop"),
            commit("d1"),
            git("symbolic-ref", "HEAD", "refs/heads/develop"),  # the origin's HEAD names develop
            ("clone",),
            cd("clone"),
            decide("D"),  # on develop, the default branch here: seen everywhere
            git("checkout", "main"),
            commit("m1"),
            decide("X"),  # on main, which is not the default branch here
            expect({"D", "X"}),
            git("checkout", "develop"),
            expect({"D"}, hidden=1),
        ],
    ),
    Row(
        "nested: a branch of a branch",
        [
            git("checkout", "-b", "feat1"),
            commit("f1"),
            decide("A"),
            git("checkout", "-b", "feat2"),
            commit("g1"),
            decide("B"),
            expect({"A", "B"}),
            git("checkout", "feat1"),
            expect({"A"}, hidden=1),
            git("checkout", "main"),
            expect(set(), hidden=2),
            git("merge", "--no-ff", "feat2", "-m", "merge feat2"),
            expect({"A", "B"}),
        ],
    ),
    Row(
        "decision written before the branch's first commit",
        [
            git("checkout", "-b", "feat"),
            decide("A"),  # its commit is main's: main must not count as having merged it
            git("checkout", "main"),
            expect(set(), hidden=1),
            git("checkout", "feat"),
            commit("f1"),
            expect({"A"}),
            git("checkout", "main"),
            expect(set(), hidden=1),
            git("merge", "--no-ff", "feat", "-m", "merge feat"),
            expect({"A"}),
        ],
    ),
    Row(
        "promoted by hand",
        [
            git("checkout", "-b", "feat"),
            commit("f1"),
            decide("A"),
            git("checkout", "main"),
            git("branch", "-D", "feat"),
            expect(set(), hidden=1),
            promote("feat"),
            expect({"A"}),
        ],
    ),
]


def test_the_table_has_the_topologies_the_issue_names():
    names = {row.name for row in TABLE}
    assert len(TABLE) >= 14
    for needed in (
        "plain merge",
        "fast-forward",
        "squash merge",
        "rebase merge",
        "cherry-pick of part of a branch",
        "branch deleted unmerged",
        "detached HEAD",
        "two worktrees on two branches",
        "shallow clone",
        "renamed default branch",
        "no commits yet",
        "not a git repository",
        "branch merged into another feature branch",
        "default branch from origin/HEAD",
        "nested: a branch of a branch",
    ):
        assert needed in names


@pytest.mark.parametrize("row", TABLE, ids=[row.name for row in TABLE])
def test_visibility_over_a_scripted_topology(row: Row, tmp_path: Path, copy_store):
    store = copy_store(tmp_path / "store")
    try:
        place = Place(tmp_path, tmp_path / "repo", store)
        place.here.mkdir()
        if row.init:
            place.git("init", "-q", "-b", row.init)
        if row.base_commit:
            run(place, commit("c0"))
            run(place, decide("M"))
        for step in row.steps:
            if step[0] == "expect":
                _, visible, hidden = step
                seen, count = read(place)
                where = f"{row.name}, at {place.here.name} ({describe(place)})"
                assert seen == visible | row.always, where
                assert count == hidden, where
            else:
                run(place, step)
    finally:
        store.close()


def run(place: Place, step: tuple) -> None:
    verb, *args = step
    if verb == "git":
        place.git(*args)
    elif verb == "commit":
        place.files += 1
        (place.here / f"{args[0]}-{place.files}.txt").write_text(f"{args[0]}\n", encoding="utf-8")
        place.git("add", ".")
        place.git("commit", "-q", "-m", args[0])
    elif verb == "decide":
        with branches.working_in(place.here):
            decisions.log_decision(place.store, args[0])
    elif verb == "cd":
        place.here = place.base / args[0]
    elif verb == "clone":
        origin = place.base / "repo"
        place.git("clone", "-q", *args, f"file://{origin}", str(place.base / "clone"), at=place.base)
    elif verb == "promote":
        branches.promote(place.store, args[0])
    else:
        raise AssertionError(f"unknown step {verb}")


def read(place: Place) -> tuple[set[str], int]:
    with branches.working_in(place.here) as view:
        seen = {d["summary"] for d in decisions.get_decisions(place.store, limit=1000)}
    return seen, view.hidden_on_other_branches


def describe(place: Place) -> str:
    if not (place.here / ".git").exists():
        return "no repository"
    done = subprocess.run(
        ["git", "log", "--oneline", "--graph", "--all", "--decorate"],
        cwd=place.here,
        env=GIT_ENV,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout
