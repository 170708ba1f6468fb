"""Citations to code: confirm an item's after a re-check, and check every item's at once (`homeport verify`).

Items are cited with `cites` on their write tools and checked on every read (`homeport.core.citing`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from homeport.core import citing
from homeport.core.catalog import CATALOG, READ, WRITE_IDEMPOTENT, Scan
from homeport.core.pipeline import Call
from homeport.core.tools.memory import IdArg, Json

__all__: list[str] = []

CitedType = Literal["decision", "progress", "system_pattern", "custom_data"]


@CATALOG.tool(
    "memory",
    WRITE_IDEMPOTENT,
    "Record that you re-checked an item against the code its citations point to: moved citations are "
    "anchored at their new place (accept_changes=true also anchors changed ones at the lines they cover now). "
    "Returns the citations with their status. A citation that is missing cannot be confirmed: update the item "
    "with new cites.",
    scan=Scan.CONTENT,  # a re-anchored citation quotes the file as it is now
)
def confirm_citations(
    call: Call,
    item_type: CitedType,
    item_id: IdArg,
    accept_changes: Annotated[
        bool, Field(description="Also anchor changed citations where they are now (you checked the item still holds).")
    ] = False,
) -> Json:
    return citing.confirm(call, item_type, item_id, accept_changes=accept_changes)


@CATALOG.tool(
    "memory",
    READ,
    "Check every item's citations against the code now: the items whose citations are not fresh, counts by "
    "status, and `failing` (any changed or missing). Fix an item with its update tool, or confirm_citations.",
)
def verify_citations(
    call: Call,
    include_fresh: Annotated[bool, Field(description="List items whose citations are all fresh too.")] = False,
) -> Json:
    return citing.verify(call, include_fresh=include_fresh)
