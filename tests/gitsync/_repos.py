"""git for the sync tests: run it, and what a sync must never change in a clone."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def git_state(clone: Path) -> tuple[str, str, str, bytes]:
    """What a sync must never change: HEAD, `git status`, the branches, the index file."""
    index = clone / ".git" / "index"
    return (
        git(clone, "rev-parse", "HEAD"),
        git(clone, "status", "--porcelain", "--untracked-files=all", "--", ".", ":!.homeport"),
        git(clone, "for-each-ref", "refs/heads", "refs/tags"),
        index.read_bytes() if index.exists() else b"",
    )
