"""Branch-aware memory: make a branch's decisions and patterns visible on every branch.

Decisions and system patterns written on a branch other than the default branch are seen only where
that branch's work is (`homeport.store.branches`); merges are found by ancestry and patch-ids. What git
cannot show (a branch merged on a forge and deleted before this clone saw it, work carried over by
hand) is said here: `promote_branch`.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from homeport.core.catalog import CATALOG, WRITE_IDEMPOTENT
from homeport.core.pipeline import Call
from homeport.core.tools.memory import Json
from homeport.store import branches

__all__: list[str] = []

BranchArg = Annotated[str, Field(min_length=1, max_length=255, description="The branch name, e.g. feat/retry.")]


@CATALOG.tool(
    "memory",
    WRITE_IDEMPOTENT,
    "Show a branch's decisions and system patterns on every branch, as if merged: for a merge git cannot "
    "see (a forge merged and deleted it). Reads name such branches in hidden_why.",
)
def promote_branch(call: Call, branch: BranchArg) -> Json:
    return branches.promote(call.require_store(), branch)
