"""`get_context`: one call for what an agent needs before a task."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from homeport.core import citing
from homeport.core.catalog import CATALOG, READ
from homeport.core.pipeline import Call
from homeport.store import task_context

__all__: list[str] = []


@CATALOG.tool(
    "memory",
    READ,
    "Start here before a task: the product context, the active context and the decisions, system "
    "patterns, progress and glossary terms most relevant to `task` (full-text ranking), packed to fit "
    "budget_tokens (estimated as UTF-8 bytes / 4). Each entry has its type and id: fetch more with "
    "get_decisions, get_linked_items or search.",
)
def get_context(
    call: Call,
    task: Annotated[str, Field(description="What you are about to do, in a sentence.", min_length=1)],
    budget_tokens: Annotated[
        int,
        Field(
            ge=task_context.MIN_BUDGET,
            le=task_context.MAX_BUDGET,
            description="The most tokens the answer's texts may take together.",
        ),
    ] = 2000,
) -> dict[str, Any]:
    out = task_context.task_context(call.store, task, budget_tokens=budget_tokens)
    out["items"] = citing.annotate_hits(call, out["items"])  # stale ones last, labelled
    return out
