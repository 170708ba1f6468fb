"""`homeport hooks install git`: sync the memory after every commit, merge and pull of this clone.

Adds a marked block to the repository's `post-commit` and `post-merge` hooks (in the directory git
runs hooks from: `core.hooksPath` when set, else `.git/hooks`) that starts

    /abs/path/to/homeport sync

in the background, its output appended to `homeport-sync.log` in the git directory: a commit never
waits for the network, and a failed sync (offline, a secret in an item) never fails the commit.
A hook that exists already is kept: the block goes at its end (a shell script), or the install is
refused naming the file (anything else). `homeport hooks uninstall git` removes exactly the block.
"""

from __future__ import annotations

import shlex
import stat
import subprocess
from pathlib import Path

import click

__all__ = ["HOOK_NAMES", "add_block", "install_git_hooks", "remove_block", "uninstall_git_hooks"]

HOOK_NAMES = ("post-commit", "post-merge")
BEGIN = "# >>> homeport sync (homeport hooks uninstall git removes this block)"
END = "# <<< homeport sync"


def block(executable: str, log: str) -> str:
    command = f"{shlex.quote(executable)} sync"
    return f"{BEGIN}\n( {command} </dev/null >>{shlex.quote(log)} 2>&1 & )\n{END}\n"


def add_block(existing: str | None, text: str, path: Path) -> str:
    """The hook with our block (replacing an earlier one of ours).

    Raises:
        click.ClickException: the hook exists and is not a shell script we can append to.
    """
    if existing is None or not existing.strip():
        return "#!/bin/sh\n" + text
    if existing.splitlines()[0] == BEGIN:  # pragma: no cover - our block always follows a shebang
        existing = "#!/bin/sh\n" + existing
    first = existing.splitlines()[0]
    if not (
        first.startswith("#!") and first.rstrip().endswith(("/sh", "/bash", " sh", " bash", "/dash", " zsh", "/zsh"))
    ):
        raise click.ClickException(
            f"{path} exists and is not a shell script ({first[:60]!r}); add this line to it yourself:\n"
            + text.splitlines()[1]
        )
    kept = remove_block(existing).rstrip("\n")
    return kept + "\n" + text if kept == first else kept + "\n\n" + text


def remove_block(existing: str) -> str:
    lines, out, inside = existing.splitlines(keepends=True), [], False
    for line in lines:
        if line.rstrip("\n") == BEGIN:
            inside = True
        elif inside and line.rstrip("\n") == END:
            inside = False
        elif not inside:
            out.append(line)
    return "".join(out)


def _hooks_dir(cwd: Path) -> tuple[Path, Path]:
    """(the directory git runs this clone's hooks from, the git directory)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--path-format=absolute", "--git-path", "hooks", "--git-common-dir"],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:
        raise click.ClickException("git is not installed; the sync hooks are git hooks") from None
    if done.returncode != 0:
        raise click.ClickException(f"{cwd} is not in a git repository; run this inside the clone to sync")
    hooks, git_dir = done.stdout.splitlines()[:2]
    return Path(hooks), Path(git_dir)


def install_git_hooks(executable: str, cwd: Path, dry_run: bool) -> list[Path]:
    hooks, git_dir = _hooks_dir(cwd)
    text = block(executable, str(git_dir / "homeport-sync.log"))
    written = []
    for name in HOOK_NAMES:
        path = hooks / name
        existing = path.read_text(encoding="utf-8") if path.exists() else None
        updated = add_block(existing, text, path)
        if updated == existing:
            continue
        written.append(path)
        if dry_run:
            continue
        hooks.mkdir(parents=True, exist_ok=True)
        path.write_text(updated, encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return written


def uninstall_git_hooks(cwd: Path, dry_run: bool) -> list[Path]:
    hooks, _ = _hooks_dir(cwd)
    removed = []
    for name in HOOK_NAMES:
        path = hooks / name
        if not path.exists():
            continue
        existing = path.read_text(encoding="utf-8")
        kept = remove_block(existing)
        if kept == existing:
            continue
        removed.append(path)
        if dry_run:
            continue
        if kept.strip() in ("", "#!/bin/sh"):
            path.unlink()
        else:
            path.write_text(kept.rstrip("\n") + "\n", encoding="utf-8")
    return removed
