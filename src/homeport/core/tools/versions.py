"""Correcting items and working with their versions: update a decision or a pattern, restore, purge.

Every write of an item keeps a version (`homeport.store.versions`); `get_item_history` (in
`knowledge`) reads them. A correction here is a write like the log_ tools: scanned for secrets, its
writer recorded, the earlier text kept.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from homeport.core import citing
from homeport.core.catalog import CATALOG, DELETE, WRITE_IDEMPOTENT, Scan
from homeport.core.citing import CitesArg
from homeport.core.pipeline import Call
from homeport.core.tools.knowledge import ItemType
from homeport.core.tools.memory import IdArg, Json, TagsArg
from homeport.store import browse, decisions, item_history, patterns
from homeport.store import citations as cited
from homeport.store.fields import LongText, Title
from homeport.store.fields import Name as NameArg

__all__: list[str] = []

ClearableText = Annotated[LongText | None, Field(description='Replaces the stored text; "" clears it; omit to keep.')]


@CATALOG.tool(
    "memory",
    WRITE_IDEMPOTENT,
    "Correct a decision in place: the fields given replace the stored ones, the others stay. The earlier text "
    "is kept as a version (get_item_history).",
    scan=Scan.ARGUMENTS,
)
def update_decision(
    call: Call,
    decision_id: IdArg,
    summary: Title | None = None,
    rationale: ClearableText = None,
    implementation_details: ClearableText = None,
    tags: TagsArg = None,
    cites: CitesArg = None,
) -> Json:
    return decisions.update_decision(
        call.require_store(),
        decision_id,
        summary=summary,
        rationale=rationale,
        implementation_details=implementation_details,
        tags=tags,
        citations=citing.anchors_for(call, cites),
    )


@CATALOG.tool(
    "memory",
    WRITE_IDEMPOTENT,
    "Correct a system pattern by id: a new name (unique, any case), description or tags; the others stay. "
    "The earlier text is kept as a version (get_item_history).",
    scan=Scan.ARGUMENTS,
)
def update_system_pattern(
    call: Call,
    pattern_id: IdArg,
    name: NameArg | None = None,
    description: LongText | None = None,
    tags: TagsArg = None,
    cites: CitesArg = None,
) -> Json:
    anchors = citing.anchors_for(call, cites)
    if anchors is None or (name, description, tags) != (None, None, None):
        written = patterns.update_system_pattern(
            call.require_store(), pattern_id, name=name, description=description, tags=tags
        )
    if anchors is None:
        return written
    cited.set_citations(call.require_store(), "system_pattern", pattern_id, anchors)
    return citing.annotate_one(call, "system_pattern", browse.get_item(call.store, "system_pattern", pattern_id))


@CATALOG.tool(
    "memory",
    WRITE_IDEMPOTENT,
    "Bring back an earlier version of an item (numbers from get_item_history) as its newest version; the "
    "versions in between stay. A deleted item comes back under its id (links are not restored).",
)
def restore_version(
    call: Call,
    item_type: ItemType,
    item_id: Annotated[IdArg, Field(description="The item's id (contexts: 1).")],
    version: Annotated[int, Field(ge=1, le=2**31 - 1, description="The version to bring back.")],
) -> Json:
    return item_history.restore_version(call.require_store(), item_type, item_id, version)


@CATALOG.tool(
    "memory",
    DELETE,
    "Remove every version of a deleted item, so nothing of its text is left. Refused while the item exists: "
    "delete it first. Deleting alone keeps the history.",
)
def purge_item(call: Call, item_type: ItemType, item_id: IdArg) -> Json:
    return item_history.purge_item(call.require_store(), item_type, item_id)
