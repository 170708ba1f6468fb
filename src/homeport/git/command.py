"""The git program, run so that a hostile repository cannot make it start anything else.

Why the git command and not a library: the questions are ancestry and patch-ids, git's own
definitions (`merge-base --is-ancestor`, `cherry`, `patch-id --stable`), asked only when the
repository's refs change (`topology` keeps every answer, which never changes for given commits);
pygit2 would add a compiled dependency for the same answers and dulwich has no patch-id. git reads
the repository's config, and some settings there run programs: each of those is overridden on the
command line (which wins over every config file), the system and global config are not read, the
environment is reset (no GIT_DIR, GIT_EXTERNAL_DIFF, pager or editor of the caller), no protocol is
allowed (a partial clone's lazy fetch would run `core.sshCommand`), and only plumbing that reads
commits is run: nothing touches the index or the work tree, so no fsmonitor, filter or hook runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["SAFE_CONFIG", "GitError", "git"]

# Every setting a read of commits could consult that runs a program, or reaches the network.
SAFE_CONFIG = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.editor=false",
    "core.sshCommand=false",
    "core.askPass=false",
    "core.gitProxy=false",
    "core.alternateRefsCommand=false",
    "credential.helper=",
    "diff.external=",
    "gpg.program=false",
    "log.showSignature=false",
    "protocol.allow=never",
    "uploadpack.packObjectsHook=false",
)
_ENV = {
    "LC_ALL": "C",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
}
_TIMEOUT_S = 20.0


class GitError(Exception):
    """git could not answer (not installed, a broken repository, a timeout)."""


def git(
    repository: Path, *args: str, input_text: str | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run `git ARGS` in the work tree `repository` with the settings above; the completed process.

    Raises:
        GitError: git is not installed, timed out, or (with `check`) exited non-zero.
    """
    program = shutil.which("git")
    if program is None:
        raise GitError("the git command is not installed")
    command = [program, "--no-pager", "-C", str(repository)]
    for setting in SAFE_CONFIG:
        command += ["-c", setting]
    try:
        done = subprocess.run(
            [*command, *args],
            input=input_text,
            capture_output=True,
            text=True,
            env=_ENV,
            timeout=_TIMEOUT_S,
            check=False,
            stdin=None if input_text is not None else subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {args[0]} failed: {exc}") from exc
    if check and done.returncode != 0:
        raise GitError(f"git {args[0]} exited {done.returncode}: {done.stderr.strip()[:300]}")
    return done
