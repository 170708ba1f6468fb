"""Whether a reader sees an item written on another branch: the rules of docs/explanation/branches.md.

An item made on a branch other than the default branch has an `Origin`: the branch (None when
HEAD was detached), the commit HEAD was at, and whether that commit was already on the default
branch when it was written (`fresh`: the branch had no commit of its own yet, so its commit says
nothing about the branch; the branch's later commits are its work). A reader stands at a `View`.
`hidden_because` answers None (seen) or why not, asking `Facts` only the fixed questions about
commits; everything else is in the arguments, so the rules are a table test's to check.

Seen, in this order: promoted by hand; the reader is not in a git work tree; the item's branch is
the reader's default branch or the reader's own branch; its work (the commit, or for a fresh item
the branch's tip) is on the default branch by ancestry, or is on the reader's HEAD by ancestry (a
branch that merged it, a branch of the branch), or is on the default branch as other commits with
the same patches (a rebase or squash merge). Otherwise hidden: `unknown_commit` when this clone
does not have the commit (a shallow clone, a branch never fetched), else `unmerged`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["Facts", "Origin", "View", "hidden_because"]


class Facts(Protocol):
    def has_commit(self, commit: str) -> bool: ...

    def is_ancestor(self, ancestor: str, descendant: str) -> bool: ...

    def patches_on(self, commit: str, into: str) -> bool: ...


@dataclass(frozen=True)
class Origin:
    branch: str | None
    commit: str | None
    fresh: bool
    promoted: bool = False


@dataclass(frozen=True)
class View:
    """Where the reader stands: HEAD's branch and commit, the default branch and its tip, branch tips."""

    branch: str | None
    commit: str | None
    default_branch: str | None
    default_tip: str | None
    tips: tuple[tuple[str, str | None], ...] = ()  # (branch, its tip or None) for each branch items name

    def tip(self, branch: str | None) -> str | None:
        return None if branch is None else dict(self.tips).get(branch)


def hidden_because(origin: Origin, view: View | None, facts: Facts) -> str | None:
    """None when a reader at `view` sees the item, else the reason (`unmerged`, `unknown_commit`)."""
    if origin.promoted or view is None:
        return None
    if origin.branch is not None and origin.branch in (view.default_branch, view.branch):
        return None
    work = _work(origin, view)
    if work is None:
        return "unmerged"
    if not facts.has_commit(work):
        return "unknown_commit"
    default_tip = view.default_tip
    if default_tip is not None and facts.is_ancestor(work, default_tip):
        return None
    if view.commit is not None and facts.is_ancestor(work, view.commit):
        return None
    if default_tip is not None and facts.patches_on(work, default_tip):
        return None
    tip = view.tip(origin.branch)
    if (
        not origin.fresh
        and default_tip is not None
        and tip is not None
        and tip != work
        and facts.has_commit(tip)
        and facts.is_ancestor(work, tip)
        and facts.patches_on(tip, default_tip)
    ):
        return None  # the branch went on after the item and was squashed or rebased whole
    return "unmerged"


def _work(origin: Origin, view: View) -> str | None:
    """The commit that stands for the item's work: its own, or for a fresh item its branch's later tip."""
    if not origin.fresh:
        return origin.commit
    tip = view.tip(origin.branch)
    if tip is None or tip == origin.commit:
        return None  # the branch is gone, or has no commit of its own yet
    return tip
