"""Syncing the memory through the project's git repository (`homeport.sync`): the `sync` tool.

The same call as `homeport sync`: export the memory to a hidden ref, fetch the remote's, merge field by
field, apply, push. It needs the workspace's directory (its repository), so a logical workspace is
refused (`Call.root`), and it leaves the event loop like every call that touches the project's files.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from homeport.core.catalog import CATALOG, DASHBOARD, READ, WRITE_IDEMPOTENT
from homeport.core.pipeline import Call
from homeport.errors import HomeportError
from homeport.sync import DEFAULT_REF, open_conflicts, resolve_conflicts, sync_memory

__all__ = ["sync_report"]


@CATALOG.tool(
    "memory",
    WRITE_IDEMPOTENT,
    "Share the memory through the project's git remote, with no server: export it to a hidden ref "
    f"({DEFAULT_REF}, never the work tree), fetch the remote's, merge field by field (the newer edit wins, "
    "the other is kept in the item's history and reported under conflicts) and push. Items holding a "
    "secret block it, named.",
    name="sync",
)
def sync_tool(
    call: Call,
    remote: Annotated[str, Field(description="The git remote (a name or URL); empty: commit locally only.")] = "origin",
    ref: Annotated[str, Field(description="The ref that holds the memory.")] = DEFAULT_REF,
) -> dict[str, Any]:
    return sync_memory(call.require_store(), call.root, remote=remote, ref=ref)


@CATALOG.tool(
    DASHBOARD,
    READ,
    "Concurrent edits a git sync settled that nobody has looked at: the item, the field, the value that lost.",
    name="sync_conflicts",
)
def sync_conflicts_tool(call: Call, limit: Annotated[int, Field(ge=1, le=1000)] = 50) -> dict[str, Any]:
    return open_conflicts(call.store, limit=limit)


@CATALOG.tool(
    DASHBOARD,
    WRITE_IDEMPOTENT,
    "Mark the concurrent edits git syncs settled as looked at: they leave the lists; the values stay in history.",
    name="resolve_sync_conflicts",
)
def resolve_sync_conflicts_tool(call: Call) -> dict[str, Any]:
    return resolve_conflicts(call.require_store())


def sync_report(call: Call, workspace: Any) -> dict[str, Any]:
    """where_am_i's line on synced memory: concurrent edits a sync settled that nobody has looked at."""
    try:
        store = call.runtime.store_for(workspace, write=False)
        conflicts = open_conflicts(store, limit=5)
    except HomeportError:
        return {}
    if not conflicts["count"]:
        return {}
    return {
        "sync_conflicts": conflicts["count"],
        "sync_conflicts_note": "concurrent edits a git sync settled (the newer won; the other is in the "
        "item's history): look at them with homeport sync --conflicts",
    }
