"""Questions about commits whose answers never change, asked of git once and kept.

Whether commit A is an ancestor of commit B, whether a commit exists here, whether the patches of
a branch up to a commit are on another commit's history (a rebase, or a squash): for given commit
ids the answer is fixed, so `Facts` keeps every answer for the life of the process (bounded), and a
reader pays for git only the first time a pair of commits is asked about. Refs, which do change, are
read by `homeport.git.refs`, never here.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from homeport.git.command import GitError, git

__all__ = ["Facts", "facts_for"]

_MAX_ANSWERS = 20_000


class Facts:
    """One repository's fixed facts about its commits (any of its work trees may ask)."""

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir  # git runs in the shared git directory: no work tree, nothing of it read
        self._answers: OrderedDict[tuple[str, ...], bool] = OrderedDict()
        self._lock = threading.Lock()

    def has_commit(self, commit: str) -> bool:
        return self._memo(("has", commit), lambda: self._run_ok("cat-file", "-e", f"{commit}^{{commit}}"))

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """Whether `ancestor` is reachable from `descendant` (a commit is its own ancestor)."""
        if ancestor == descendant:
            return True
        return self._memo(
            ("anc", ancestor, descendant),
            lambda: self._run_ok("merge-base", "--is-ancestor", ancestor, descendant),
        )

    def prefetch(self, commits: set[str], descendants: set[str]) -> None:
        """Ask at once which `commits` exist and which are ancestors of each of `descendants`, so that the
        answers `has_commit` and `is_ancestor` give next come from memory: two git processes per
        descendant at most, instead of one per pair (the first read after a branch moved)."""
        with self._lock:
            unknown = sorted(c for c in commits if ("has", c) not in self._answers)
        if unknown:
            out = self._out("cat-file", "--batch-check", input_text="".join(f"{c}^{{commit}}\n" for c in unknown))
            missing = {
                line.split()[0].removesuffix("^{commit}") for line in out.splitlines() if line.endswith(" missing")
            }
            if out:
                self._store({("has", c): c not in missing for c in unknown})
        present = sorted(c for c in commits if self._answers.get(("has", c)))
        for descendant in sorted(descendants):
            asked = [c for c in present if c != descendant and ("anc", c, descendant) not in self._answers]
            if not asked:
                continue
            # The commits reachable from any asked one but not from `descendant`: an asked commit is an
            # ancestor exactly when it is not among them.
            done = self._run("rev-list", *asked, "--not", descendant)
            if done is None:
                continue
            outside = set(done.splitlines())
            self._store({("anc", c, descendant): c not in outside for c in asked})

    def patches_on(self, commit: str, into: str) -> bool:
        """Whether the work of `commit` since it forked from `into` is on `into` as other commits.

        Rebased or cherry-picked: every commit of `into..commit` has one with the same patch-id on
        `into` (`git cherry`). Squashed: one commit of `into`'s history since the fork has the patch-id
        of the whole diff from the fork to `commit`.
        """
        return self._memo(("patch", commit, into), lambda: self._rebased(commit, into) or self._squashed(commit, into))

    def _rebased(self, commit: str, into: str) -> bool:
        lines = self._out("cherry", into, commit).splitlines()
        return bool(lines) and all(line.startswith("-") for line in lines)

    def _squashed(self, commit: str, into: str) -> bool:
        base = self._out("merge-base", into, commit).strip()
        if not base:
            return False
        whole = self._patch_ids(self._out("diff-tree", "-p", "-r", "--no-ext-diff", "--no-textconv", base, commit))
        if not whole:
            return False
        since = self._out("rev-list", "--no-merges", f"{base}..{into}")
        if not since.strip():
            return False
        diffs = self._out("diff-tree", "--stdin", "-p", "-r", "--no-ext-diff", "--no-textconv", input_text=since)
        return bool(whole & self._patch_ids(diffs))

    def _patch_ids(self, diff: str) -> set[str]:
        if not diff.strip():
            return set()
        out = self._out("patch-id", "--stable", input_text=diff)
        return {line.split()[0] for line in out.splitlines() if line.strip()}

    def _memo(self, key: tuple[str, ...], compute: Callable[[], bool]) -> bool:
        with self._lock:
            if key in self._answers:
                self._answers.move_to_end(key)
                return self._answers[key]
        answer = bool(compute())
        with self._lock:
            self._answers[key] = answer
            while len(self._answers) > _MAX_ANSWERS:
                self._answers.popitem(last=False)
        return answer

    def _store(self, answers: dict[tuple[str, ...], bool]) -> None:
        with self._lock:
            self._answers.update(answers)
            while len(self._answers) > _MAX_ANSWERS:
                self._answers.popitem(last=False)

    def _run(self, *args: str) -> str | None:
        try:
            done = git(self.git_dir, *args, check=False)
        except GitError:
            return None
        return done.stdout if done.returncode == 0 else None

    def _run_ok(self, *args: str) -> bool:
        try:
            return git(self.git_dir, *args, check=False).returncode == 0
        except GitError:
            return False

    def _out(self, *args: str, input_text: str | None = None) -> str:
        try:
            done = git(self.git_dir, *args, input_text=input_text, check=False)
        except GitError:
            return ""
        return done.stdout if done.returncode == 0 else ""


_facts: OrderedDict[Path, Facts] = OrderedDict()
_facts_lock = threading.Lock()


def facts_for(common_dir: Path) -> Facts:
    """The facts of the repository whose shared git directory is `common_dir`."""
    with _facts_lock:
        facts = _facts.get(common_dir)
        if facts is None:
            facts = _facts[common_dir] = Facts(common_dir)
            while len(_facts) > 64:
                _facts.popitem(last=False)
        else:
            _facts.move_to_end(common_dir)
        return facts
