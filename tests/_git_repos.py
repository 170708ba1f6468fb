"""Real git repositories for tests: the git command with no user or system config, and a fixed author."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = ["GIT_ENV", "git"]

GIT_ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(root: Path, *args: str) -> str:
    """Run git in `root`; its stripped stdout (fails the test, with git's stderr, on a non-zero exit)."""
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@e", *args],
        cwd=root,
        env=GIT_ENV,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
