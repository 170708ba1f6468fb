"""`homeport hooks install git`: the clone syncs its memory after each commit, with a real hook run by git."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

from homeport.cli.git_hooks import BEGIN, add_block, block, remove_block

from ._repos import git

HOMEPORT = str(Path(sys.executable).with_name("homeport"))


def homeport(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("HOMEPORT_WORKSPACE", "CLAUDE_PROJECT_DIR")}
    done = subprocess.run([HOMEPORT, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_a_commit_syncs_the_memory_in_the_background(clone, remote):
    a, _ = clone("a")
    (a / ".git" / "hooks" / "post-commit").write_text("#!/bin/sh\necho mine > ran-before\n")
    out = homeport(a, "hooks", "install", "git")
    assert "post-commit" in out and "post-merge" in out
    assert homeport(a, "hooks", "install", "git").startswith("the sync hooks are already installed")
    homeport(a, "decisions", "add", "synced by the hook")
    git(a, "commit", "-q", "--allow-empty", "-m", "work")
    deadline = time.monotonic() + 90
    while not git(remote, "for-each-ref", "refs/homeport") and time.monotonic() < deadline:
        time.sleep(0.2)  # the hook's sync runs in the background; nothing to wait on but the remote
    assert git(remote, "for-each-ref", "refs/homeport"), (a / ".git" / "homeport-sync.log").read_text()
    assert (a / "ran-before").exists()  # the hook that was there still runs

    homeport(a, "hooks", "uninstall", "git")
    assert (a / ".git" / "hooks" / "post-commit").read_text() == "#!/bin/sh\necho mine > ran-before\n"
    assert not (a / ".git" / "hooks" / "post-merge").exists()


def test_the_block_is_added_once_and_removed_exactly():
    text = block("/opt/homeport/bin/homeport", "/repo/.git/homeport-sync.log")
    hook = add_block("#!/bin/bash\nmake lint\n", text, Path("post-commit"))
    assert add_block(hook, text, Path("post-commit")) == hook
    assert hook.count(BEGIN) == 1
    assert remove_block(hook).rstrip() == "#!/bin/bash\nmake lint"


def test_a_hook_that_is_no_shell_script_is_refused_naming_it():
    with pytest.raises(click.ClickException) as caught:
        add_block("#!/usr/bin/env python3\nprint(1)\n", block("homeport", "log"), Path(".git/hooks/post-merge"))
    assert "post-merge" in caught.value.message and "homeport" in caught.value.message


@pytest.mark.slow
def test_the_shell_command_syncs_and_lists_conflicts(clone, remote):
    a, _ = clone("a")
    homeport(a, "decisions", "add", "from the shell")
    assert "committed locally" in homeport(a, "sync", "--local")
    assert git(remote, "for-each-ref", "refs/homeport") == ""  # --local pushes nothing
    assert "pushed: refs/homeport/memory" in homeport(a, "sync")
    listed = homeport(a, "sync", "--conflicts", "--json")
    assert '"count": 0' in listed
    assert '"resolved": 0' in homeport(a, "sync", "--conflicts", "--resolve", "--json")
