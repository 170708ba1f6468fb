"""Tidying the memory as a reviewable, reversible change: propose, amend, apply, revert; item lifecycles.

A proposal is found without a language model (`homeport.store.tidy_proposals`) and stored as a
changeset that nothing acts on until it is applied (`homeport.store.tidy`). Nothing is deleted:
merged, superseded and archived items leave search, get_context and the default lists, and stay
readable and in their history; revert puts back exactly what apply replaced.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from homeport.core import citing
from homeport.core.catalog import CATALOG, READ, WRITE, WRITE_IDEMPOTENT, Scan
from homeport.core.pipeline import Call
from homeport.core.tools.memory import IdArg, Json
from homeport.store import lifecycle, tidy
from homeport.store.fields import LongText
from homeport.store.loop_calls import may_wait

__all__: list[str] = []

TidyType = Literal["decision", "progress", "system_pattern", "custom_data"]
Kind = Literal["duplicate", "contradiction", "superseded", "stale"]
ChangesetId = Annotated[int, Field(ge=1, le=2**31 - 1, description="The changeset's id (from propose_cleanup).")]
EntryIds = Annotated[list[Annotated[int, Field(ge=1)]], Field(description="Entry ids of the changeset.")]
Operation = dict[str, Any]
ForceArg = Annotated[bool, Field(description="Go past the guard (pinned items, over 5% of the items).")]


@CATALOG.tool(
    "memory",
    WRITE,
    "Propose a cleanup of the memory: near-duplicates (merge), contradictions (for you to decide), items "
    "linked superseded_by (supersede), progress untouched for stale_days and items citing changed or missing "
    "code (archive). Each entry has a reason and evidence. Nothing changes until apply_changeset; review "
    "and amend_changeset first.",
)
def propose_cleanup(
    call: Call,
    scope: Annotated[TidyType | None, Field(description="One item type; omit for all.")] = None,
    kinds: Annotated[list[Kind] | None, Field(description="What to look for; omit for all four.")] = None,
    stale_days: Annotated[int, Field(ge=1, le=3650, description="Days untouched that make progress stale.")] = 90,
) -> Json:
    may_wait("a proposal reads every item")  # seconds on a large memory: off the event loop
    store = call.require_store()
    cited: list[dict[str, Any]] = []
    if kinds is None or "stale" in kinds:
        # citations are checked against the project's files here, where the work tree is known
        cited = [i for i in citing.verify(call)["items"] if i["citation_status"] in ("changed", "missing")]
    return tidy.propose_cleanup(store, scope=scope, kinds=kinds, stale_days=stale_days, stale_citations=cited)


@CATALOG.tool(
    "memory",
    READ,
    "Read one changeset with its entries (changeset_id), or list changesets newest first with who applied them.",
)
def get_changesets(
    call: Call,
    changeset_id: Annotated[
        int | None, Field(ge=1, le=2**31 - 1, description="One changeset, entries included.")
    ] = None,
    status: Literal["proposed", "applied", "reverted"] | None = None,
    limit: Annotated[int, Field(ge=1, le=200)] = 20,
) -> Json:
    if changeset_id is not None:
        return tidy.get_changeset(call.store, changeset_id)
    return {"changesets": tidy.list_changesets(call.store, status=status, limit=limit)}


@CATALOG.tool(
    "memory",
    WRITE_IDEMPOTENT,
    "Amend a proposed changeset: accept or reject entries by id, or add operations as a new entry "
    '(e.g. {"op": "supersede", "item": "decision:3", "by": "decision:9"}; ops: merge item into, supersede item '
    "by, archive item, relink link_id from to, retag item tags).",
    scan=Scan.ARGUMENTS,
)
def amend_changeset(
    call: Call,
    changeset_id: ChangesetId,
    accept: EntryIds | None = None,
    reject: EntryIds | None = None,
    add: Annotated[list[Operation] | None, Field(description="Operations to add as one entry.")] = None,
    reason: Annotated[LongText | None, Field(description="Why the added operations (shown in review).")] = None,
) -> Json:
    return tidy.amend_changeset(
        call.require_store(), changeset_id, accept=accept or (), reject=reject or (), add=add or (), reason=reason
    )


@CATALOG.tool(
    "memory",
    WRITE_IDEMPOTENT,
    "Apply a proposed changeset's accepted entries, all or nothing. Refused if any item changed since the "
    "proposal, or (without force) if it touches a pinned item or over 5% of the items. revert_changeset undoes it.",
)
def apply_changeset(call: Call, changeset_id: ChangesetId, force: ForceArg = False) -> Json:
    return tidy.apply_changeset(call.require_store(), changeset_id, force=force)


@CATALOG.tool(
    "memory",
    WRITE_IDEMPOTENT,
    "Revert an applied changeset: the exact earlier states, tags and links come back. Refused if its items "
    "changed since (revert later changesets first) unless force.",
)
def revert_changeset(
    call: Call,
    changeset_id: ChangesetId,
    force: Annotated[bool, Field(description="Put the earlier states back even if the items changed since.")] = False,
) -> Json:
    return tidy.revert_changeset(call.require_store(), changeset_id, force=force)


@CATALOG.tool(
    "memory",
    WRITE_IDEMPOTENT,
    "Set when an item stops being current (valid_until; expired items leave the default reads, which count "
    'them as hidden_expired) or pin it so no changeset touches it. "" clears valid_until.',
)
def set_item_lifecycle(
    call: Call,
    item_type: TidyType,
    item_id: IdArg,
    valid_until: Annotated[str | None, Field(max_length=64, description='ISO 8601 time; "" clears it.')] = None,
    pinned: bool | None = None,
) -> Json:
    return lifecycle.set_item_lifecycle(
        call.require_store(), item_type, item_id, valid_until=valid_until, pinned=pinned
    )
