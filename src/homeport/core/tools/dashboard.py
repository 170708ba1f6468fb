"""The dashboard's own reads, in the `dashboard` group: they run
through the pipeline like every tool (resolution, guards, the caller's access) and are never
listed to MCP clients, whose tool list costs context on every turn. A server still answers them,
so that a dashboard whose workspace another instance owns (the daemon) forwards them there.
Its corrections are the memory tools' (update_decision, update_progress, log_system_pattern, ...)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from homeport.core import citing
from homeport.core.catalog import CATALOG, DASHBOARD, READ
from homeport.core.pipeline import Call
from homeport.core.tools.memory import IdArg, Json, LimitArg
from homeport.store import browse, lifecycle

__all__: list[str] = []

ItemWithId = Literal["decision", "progress", "system_pattern", "custom_data"]


@CATALOG.tool(DASHBOARD, READ, "How many items of each type, and when the memory last changed.")
def memory_overview(call: Call) -> Json:
    return browse.memory_overview(call.store)


@CATALOG.tool(DASHBOARD, READ, "A page of decisions, newest first, with how many there are.")
def decision_page(
    call: Call, offset: Annotated[int, Field(ge=0, le=2**31)] = 0, limit: LimitArg = 50, tag: str | None = None
) -> Json:
    page = citing.annotate_one(call, "decision", browse.decision_page(call.store, offset=offset, limit=limit, tag=tag))
    hidden = lifecycle.hidden_of(call.store, "decision")
    for decision in page.get("decisions", ()):
        if ("decision", decision["id"]) in hidden:  # merged, archived, superseded or expired: still listed, marked
            decision["hidden"] = True
    return page


@CATALOG.tool(DASHBOARD, READ, "Every field of one item with an id.", key="item")
def get_item(call: Call, item_type: ItemWithId, item_id: IdArg) -> Any:
    item = citing.annotate(call, item_type, browse.get_item(call.store, item_type, item_id))
    state = lifecycle.state_for(call.store, item_type, item_id)
    if state is not None:  # archived, superseded, expiring or pinned: the page says so
        item["lifecycle"] = state
    return item


@CATALOG.tool(DASHBOARD, READ, "Who wrote each listed item and when: every recorded write, oldest first.", key="writes")
def get_item_writes(call: Call, item_type: ItemWithId, item_ids: Annotated[list[IdArg], Field(max_length=500)]) -> Any:
    return browse.item_writes(call.store, item_type, item_ids)
