"""The git side of a sync: objects, the memory ref, fetch and push, through the `git` command.

Why the command and not pygit2 or dulwich: fetch and push must reach whatever remote the team already
uses, with the credentials, SSH configuration and transports the user's git has; libgit2 needs its own
credential callbacks and knows no credential helpers, and dulwich implements only part of them. The
objects are written by one `git fast-import` per commit (every changed file, the tree and the commit in
one process, no temporary files) and read by one `git cat-file --batch`, so a sync of 10,000 items costs
a handful of processes. Nothing here uses the work tree or the index: the memory never appears in
`git status`, a checkout or a merge of code.

Every command runs with `--git-dir` named (a hook's environment cannot point it elsewhere) and with the
repository's configuration that runs programs neutralised: no fsmonitor, no hooks (ours included: a sync
run from a post-commit hook must not start another), no `ext::` transport, and the upload and receive
programs of a local remote named on the command line rather than taken from `remote.<name>.uploadpack`.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from homeport.errors import SyncError

__all__ = ["PushResult", "Repository", "find_repository"]

_SAFE_CONFIG = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "protocol.ext.allow=never",
)
_COMMITTER = b"Homeport <homeport@localhost>"
ZERO = "0" * 40


@dataclass(frozen=True)
class PushResult:
    ok: bool
    non_fast_forward: bool = False
    message: str = ""


def find_repository(root: Path) -> Repository:
    """The repository of a workspace root.

    Raises:
        SyncError: the root is not inside a git repository, or git is not installed.
    """
    try:
        done = subprocess.run(
            ["git", *_SAFE_CONFIG, "-C", str(root), "rev-parse", "--path-format=absolute", "--git-common-dir"],
            capture_output=True,
            check=False,
        )
    except FileNotFoundError:
        raise SyncError("git is not installed; homeport sync needs the git command") from None
    if done.returncode != 0:
        raise SyncError(
            f"{root} is not in a git repository ({_first_line(done.stderr)}); homeport sync keeps the memory "
            "in the project's own repository: run it inside a clone"
        )
    return Repository(Path(done.stdout.decode().strip()).resolve())


class Repository:
    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir

    def run(self, *args: str, input: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        done = subprocess.run(
            ["git", *_SAFE_CONFIG, f"--git-dir={self.git_dir}", *args], input=input, capture_output=True, check=False
        )
        if check and done.returncode != 0:
            raise SyncError(f"git {args[0]} failed: {_first_line(done.stderr) or done.returncode}")
        return done

    def resolve(self, ref: str) -> str | None:
        done = self.run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        return done.stdout.decode().strip() or None if done.returncode == 0 else None

    def tree_of(self, commit: str | None) -> dict[str, str]:
        """{path: blob id} of every file of a commit (empty for None)."""
        if commit is None:
            return {}
        out = self.run("ls-tree", "-r", "-z", "--full-tree", commit).stdout
        files: dict[str, str] = {}
        for entry in out.split(b"\0"):
            if entry:
                meta, path = entry.split(b"\t", 1)
                files[path.decode()] = meta.split()[2].decode()
        return files

    def changed_paths(self, a: str | None, b: str) -> list[str]:
        """Paths whose file differs between two commits (every path of `b` when `a` is None)."""
        if a is None:
            return sorted(self.tree_of(b))
        out = self.run("diff-tree", "-r", "-z", "--no-renames", "--name-only", a, b).stdout
        return sorted(p.decode() for p in out.split(b"\0") if p)

    def read_blobs(self, ids: Iterable[str]) -> dict[str, bytes]:
        wanted = sorted(set(ids))
        if not wanted:
            return {}
        out = self.run("cat-file", "--batch", input="".join(f"{i}\n" for i in wanted).encode()).stdout
        blobs: dict[str, bytes] = {}
        pos = 0
        for blob_id in wanted:
            end = out.index(b"\n", pos)
            header = out[pos:end].split()
            if len(header) != 3:
                raise SyncError(f"git cat-file: object {blob_id} is missing")
            size = int(header[2])
            blobs[blob_id] = out[end + 1 : end + 1 + size]
            pos = end + 1 + size + 1
        return blobs

    def merge_bases(self, a: str, b: str) -> list[str]:
        done = self.run("merge-base", "--all", a, b, check=False)
        return done.stdout.decode().split()

    def is_ancestor(self, a: str, b: str) -> bool:
        return self.run("merge-base", "--is-ancestor", a, b, check=False).returncode == 0

    def commit(
        self, ref: str, files: Mapping[str, bytes], message: str, parents: Sequence[str], *, expected: str | None
    ) -> str:
        """Commit `files` (path -> content) over the first parent's tree to `ref`; returns the commit.

        `expected` is the ref's current value as the caller read it under the sync's lock (None: no ref yet).
        """
        stamp = f"{int(time.time())} +0000".encode()
        msg = message.encode()
        parts = [b"feature done\n", f"commit {ref}\n".encode(), b"mark :1\n"]
        parts.append(b"committer " + _COMMITTER + b" " + stamp + b"\n")
        parts.append(b"data %d\n%s\n" % (len(msg), msg))
        if parents:
            parts.append(f"from {parents[0]}\n".encode())
            parts.extend(f"merge {p}\n".encode() for p in parents[1:])
        for path in sorted(files):
            body = files[path]
            parts.append(f"M 100644 inline {path}\n".encode())
            parts.append(b"data %d\n" % len(body))
            parts.append(body)
            parts.append(b"\n")
        parts.append(b"get-mark :1\ndone\n")
        # fast-import moves the ref only forward (no --force: it fails otherwise), and the sync's lock keeps
        # other syncs of this repository out, so the ref is still `expected` when it writes.
        out = self.run("fast-import", "--quiet", "--done", input=b"".join(parts)).stdout
        return out.decode().split()[-1]

    def update_ref(self, ref: str, new: str, expected: str | None) -> None:
        self.run("update-ref", "-m", "homeport sync", ref, new, expected or ZERO)

    def fetch(self, remote: str, source: str, tracking: str) -> str | None:
        """Fetch `source` of `remote` into `tracking`; returns the commit, or None when the remote lacks it.

        Raises:
            SyncError: the remote could not be reached.
        """
        done = self.run(
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "--no-recurse-submodules",
            "--upload-pack=git-upload-pack",
            remote,
            f"+{source}:{tracking}",
            check=False,
        )
        if done.returncode != 0:
            err = done.stderr.decode(errors="replace")
            if "couldn't find remote ref" in err:
                self.run("update-ref", "-d", tracking, check=False)
                return None
            raise SyncError(f"git fetch {remote} failed: {_first_line(done.stderr)}")
        return self.resolve(tracking)

    def push(self, remote: str, local: str, destination: str) -> PushResult:
        done = self.run(
            "push",
            "--porcelain",
            "--quiet",
            "--no-verify",
            "--receive-pack=git-receive-pack",
            remote,
            f"{local}:{destination}",
            check=False,
        )
        if done.returncode == 0:
            return PushResult(True)
        text = (done.stdout + done.stderr).decode(errors="replace")
        non_ff = any(w in text for w in ("non-fast-forward", "fetch first", "[rejected]", "stale info"))
        if "[remote rejected]" in text:
            non_ff = False
        return PushResult(False, non_ff, _reason(text))


def _first_line(data: bytes) -> str:
    for line in data.decode(errors="replace").splitlines():
        if line.strip():
            return line.strip()
    return ""


def _reason(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("!") or "rejected" in line or line.startswith(("fatal:", "error:")):
            return line.strip()
    return text.strip().splitlines()[-1] if text.strip() else "push failed"
