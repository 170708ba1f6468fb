"""Reading a workspace for citations: which paths may be cited, what is unverifiable, symbols, other files."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from homeport.citations.symbols import definitions
from homeport.citations.worktree import MAX_FILE_BYTES, WorkTree, blob_id
from homeport.errors import InvalidItemError

SOURCE = """class Retry:
    def schedule(self, job):
        for attempt in range(3):
            job.run(attempt)

    def cancel(self):
        return None


def helper():
    return Retry().schedule
"""


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=root, check=True, capture_output=True
    )


@pytest.fixture
def repo(tmp_path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "retry.py").write_text(SOURCE)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    return root


@pytest.mark.parametrize(
    "path", ["/etc/passwd", "../x.py", "pkg/../../x.py", "~/x.py", "", ".git/config", ".homeport/homeport.db"]
)
def test_paths_outside_the_workspace_or_not_project_files_are_refused_by_name(repo, path):
    with pytest.raises(InvalidItemError) as caught:
        WorkTree(repo).anchor(path, lines="1")
    assert repr(path) in str(caught.value)


def test_a_symlink_that_leads_out_of_the_workspace_is_refused(repo, tmp_path):
    (tmp_path / "secret.py").write_text("token = 1\n")
    (repo / "pkg" / "link.py").symlink_to(tmp_path / "secret.py")
    (repo / "inside.py").symlink_to(repo / "pkg" / "retry.py")
    tree = WorkTree(repo)
    with pytest.raises(InvalidItemError, match="outside the workspace"):
        tree.anchor("pkg/link.py", lines="1")
    assert tree.anchor("inside.py", lines="1").quote == "class Retry:"  # a link that stays inside is fine


def test_a_symlink_retargeted_outside_after_citing_reads_unverifiable(repo, tmp_path):
    (tmp_path / "outside.py").write_text(SOURCE)
    (repo / "alias.py").symlink_to(repo / "pkg" / "retry.py")
    tree = WorkTree(repo)
    anchor = tree.anchor("alias.py", lines="1-4")
    (repo / "alias.py").unlink()
    (repo / "alias.py").symlink_to(tmp_path / "outside.py")
    assert tree.check([anchor])[0].status == "unverifiable"


def test_a_symbol_citation_covers_the_definition_and_a_line_citation_records_the_enclosing_one(repo):
    tree = WorkTree(repo)
    by_symbol = tree.anchor("pkg/retry.py", symbol="Retry.schedule")
    assert (by_symbol.start, by_symbol.end, by_symbol.symbol) == (2, 4, "Retry.schedule")
    assert tree.anchor("pkg/retry.py", lines="3-4").symbol == "Retry.schedule"
    assert tree.anchor("pkg/retry.py", lines="1-11").symbol is None
    assert by_symbol.blob == blob_id(SOURCE.encode())
    with pytest.raises(InvalidItemError, match=r"Retry\.nope"):
        tree.anchor("pkg/retry.py", symbol="Retry.nope")


def test_a_removed_symbol_is_missing_and_a_rewritten_one_changed(repo):
    tree = WorkTree(repo)
    anchor = tree.anchor("pkg/retry.py", symbol="Retry.cancel")
    path = repo / "pkg" / "retry.py"
    path.write_text(SOURCE.replace("return None", "return False"))
    verdict = tree.check([anchor])[0]
    assert (verdict.status, verdict.start, verdict.end) == ("changed", 6, 7)
    path.write_text(SOURCE.replace("    def cancel(self):\n        return None\n", ""))
    assert tree.check([anchor])[0].status == "missing"


def test_a_span_moved_to_another_tracked_file_is_reported_there(repo):
    tree = WorkTree(repo)
    anchor = tree.anchor("pkg/retry.py", symbol="Retry.schedule")
    (repo / "pkg" / "jobs.py").write_text("import os\n\n" + SOURCE)
    (repo / "pkg" / "retry.py").unlink()
    git(repo, "add", "-A")
    verdict = tree.check([anchor])[0]
    assert (verdict.status, verdict.path, verdict.start, verdict.end) == ("moved", "pkg/jobs.py", 4, 6)


def test_outside_git_binary_and_huge_files_are_unverifiable(tmp_path, repo):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.py").write_text(SOURCE)
    tree = WorkTree(plain)
    assert not tree.in_git
    assert tree.check([tree.anchor("a.py", lines="1-2")])[0].reason == "the workspace is not a git work tree"
    repo_tree = WorkTree(repo)
    anchor = repo_tree.anchor("pkg/retry.py", lines="1-2")
    (repo / "pkg" / "retry.py").write_bytes(b"\0binary" + SOURCE.encode())
    assert repo_tree.check([anchor])[0].status == "unverifiable"
    (repo / "pkg" / "retry.py").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    assert repo_tree.check([anchor])[0].status == "unverifiable"
    with pytest.raises(InvalidItemError, match="over 2 MiB"):
        repo_tree.anchor("pkg/retry.py", lines="1")


def test_a_workspace_below_the_repository_root_cites_relative_to_itself(repo):
    sub = WorkTree(repo / "pkg")
    anchor = sub.anchor("retry.py", symbol="helper")
    assert anchor.path == "retry.py" and sub.check([anchor])[0].status == "fresh"


@pytest.mark.parametrize(
    ("name", "code", "expected"),
    [
        ("a.go", b"package m\nfunc (s *Server) Serve() {\n}\n", {"Server.Serve": (2, 3)}),
        ("a.rs", b"struct S;\nimpl S {\n    fn new() -> S { S }\n}\n", {"S": (1, 1), "S.new": (3, 3)}),
        ("a.ts", b"export class A {\n  m() { return 1 }\n}\n", {"A": (1, 3), "A.m": (2, 2)}),
        ("a.js", b"function f() {\n}\n", {"f": (1, 2)}),
        ("a.py", b"@wrap\ndef f():\n    pass\n", {"f": (1, 3)}),
        ("a.txt", b"hello\n", None),
    ],
)
def test_definitions_in_each_language_the_extra_ships(name, code, expected):
    assert definitions(name, code) == expected


def test_a_directory_that_becomes_a_repository_is_checked_from_then_on(tmp_path):
    root = tmp_path / "later"
    root.mkdir()
    (root / "a.py").write_text(SOURCE)
    tree = WorkTree(root)
    anchor = tree.anchor("a.py", lines="1-4")
    assert tree.check([anchor])[0].status == "unverifiable"
    git(root, "init", "-q", "-b", "main")
    assert tree.check([anchor])[0].status == "fresh"


def test_a_repository_removed_after_checking_leaves_other_files_unsearched_not_an_error(repo):
    import shutil

    tree = WorkTree(repo)
    anchor = tree.anchor("pkg/retry.py", symbol="Retry.schedule")
    (repo / "pkg" / "retry.py").unlink()
    shutil.rmtree(repo / ".git")
    assert tree.check([anchor])[0].status == "missing"
