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
from dataclasses import dataclass
from pathlib import Path

from homeport.git.command import GitError, git

__all__ = ["Facts", "facts_for"]

_MAX_ANSWERS = 20_000


@dataclass
class _Progress:
    """What of a branch's work the default branch had when last asked (at `into`)."""

    into: str
    whole: set[str]  # the patch-id of the whole diff from the fork to the work (a squash has it)
    unmatched: set[str]  # the patch-ids of the branch's own commits not yet seen on the default branch
    had_own: bool  # the branch had commits of its own (else "all matched" proves nothing)
    squashed: bool = False  # a commit with `whole`'s patch-id was seen


class Facts:
    """One repository's fixed facts about its commits (any of its work trees may ask)."""

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir  # git runs in the shared git directory: no work tree, nothing of it read
        self._answers: OrderedDict[tuple[str, ...], bool] = OrderedDict()
        self._patch_of: dict[str, str | None] = {}  # commit: its patch-id
        self._ranges: dict[tuple[str, str], list[str]] = {}  # (old, new): new's commits after old
        self._progress: dict[str, _Progress] = {}  # a branch commit: what of it the default branch has
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
        `into` (what `git cherry` says). Squashed: one commit of `into`'s history since the fork has the
        patch-id of the whole diff from the fork to `commit`. Patch-ids are kept per commit (they never
        change), and when the default branch only moved forward since the last question about
        `commit`, only its new commits are read: a pull costs a few git processes, not a few per branch.
        """
        return self._memo(("patch", commit, into), lambda: self._patches_on(commit, into))

    def _patches_on(self, commit: str, into: str) -> bool:
        known = self._progress.get(commit)
        if known is not None and known.into != into and self.is_ancestor(known.into, into):
            since = self._since(known.into, into)
        else:
            base = self._line("merge-base", into, commit)
            if not base:
                return False
            own = self._lines("rev-list", "--no-merges", f"{into}..{commit}")
            own_ids = {i for i in self._commit_patch_ids(own).values() if i is not None}
            whole = self._patch_ids(self._out("diff-tree", "-p", "-r", "--no-ext-diff", "--no-textconv", base, commit))
            known = _Progress(into=into, whole=whole, unmatched=own_ids, had_own=bool(own_ids))
            since = self._since(base, into)
        found = {i for i in self._commit_patch_ids(since).values() if i is not None}
        known.unmatched -= found
        known.squashed = known.squashed or bool(known.whole & found)
        known.into = into
        with self._lock:
            self._progress[commit] = known
            while len(self._progress) > 2_000:
                self._progress.pop(next(iter(self._progress)))
        return known.squashed or (known.had_own and not known.unmatched)

    def _since(self, old: str, new: str) -> list[str]:
        """The commits (no merges) of `new`'s history after `old`, kept per pair: every branch asks the same."""
        key = (old, new)
        with self._lock:
            found = self._ranges.get(key)
        if found is None:
            found = self._lines("rev-list", "--no-merges", f"{old}..{new}")
            with self._lock:
                self._ranges[key] = found
                while len(self._ranges) > 256:
                    self._ranges.pop(next(iter(self._ranges)))
        return found

    def _commit_patch_ids(self, commits: list[str]) -> dict[str, str | None]:
        """Each commit's patch-id (None: an empty or merge diff), computed once per commit, in one batch."""
        with self._lock:
            unknown = [c for c in commits if c not in self._patch_of]
        if unknown:
            diffs = self._out(
                "diff-tree",
                "--stdin",
                "--root",
                "-p",
                "-r",
                "--no-ext-diff",
                "--no-textconv",
                input_text="\n".join(unknown) + "\n",
            )
            ids: dict[str, str | None] = dict.fromkeys(unknown)
            if diffs.strip():
                for line in self._out("patch-id", "--stable", input_text=diffs).splitlines():
                    parts = line.split()
                    if len(parts) == 2 and parts[1] in ids:
                        ids[parts[1]] = parts[0]
            with self._lock:
                self._patch_of.update(ids)
                while len(self._patch_of) > _MAX_ANSWERS:
                    self._patch_of.pop(next(iter(self._patch_of)))
        with self._lock:
            return {c: self._patch_of.get(c) for c in commits}

    def _patch_ids(self, diff: str) -> set[str]:
        if not diff.strip():
            return set()
        out = self._out("patch-id", "--stable", input_text=diff)
        return {line.split()[0] for line in out.splitlines() if line.strip()}

    def _line(self, *args: str) -> str:
        return self._out(*args).strip()

    def _lines(self, *args: str) -> list[str]:
        return [line for line in self._out(*args).splitlines() if line.strip()]

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
