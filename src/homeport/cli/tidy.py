"""`homeport tidy`: propose a cleanup of the memory, review and amend it, apply it, revert it."""

from __future__ import annotations

import json
from typing import Any

import click
from rich.console import Console

from homeport.cli._lazy import HelpfulGroup
from homeport.cli._output import confirm_line
from homeport.cli.memory import Result, ToolCall, memory_tool

__all__ = ["tidy"]

_TYPES = click.Choice(["decision", "progress", "system_pattern", "custom_data"])
_KINDS = click.Choice(["duplicate", "contradiction", "superseded", "stale"])


@click.group(cls=HelpfulGroup)
def tidy() -> None:
    """Tidy the memory as a change you review, apply and revert exactly.

    `propose` finds near-duplicates, contradictions, superseded and stale items and stores them as a
    changeset; nothing changes until `apply`. Review it with `show`, accept or reject entries or add
    operations with `amend`, undo it with `revert`. Nothing is deleted: merged and archived items
    leave search and get_context, and stay readable and in their history.

    \b
    Example:
      homeport tidy propose
      homeport tidy amend 3 --reject 2
      homeport tidy apply 3
      homeport tidy revert 3
    """


@tidy.command()
@click.option("--scope", type=_TYPES, help="Only this item type (default: every type).")
@click.option("--kind", "kinds", type=_KINDS, multiple=True, help="Only this kind of entry; repeat for several.")
@click.option(
    "--stale-days",
    type=click.IntRange(1, 3650),
    default=90,
    show_default=True,
    help="Progress untouched this many days is stale.",
)
@memory_tool
def propose(call: ToolCall, scope: str | None, kinds: tuple[str, ...], stale_days: int) -> None:
    """Propose a cleanup: each entry with why it was proposed, its evidence and its operations.

    Nothing changes until `homeport tidy apply`.

    \b
    Example: homeport tidy propose --kind duplicate --kind superseded
    """
    result = call.tool("propose_cleanup", scope=scope, kinds=list(kinds) or None, stale_days=stale_days)
    call.show(result, _render_changeset)


@tidy.command()
@click.argument("changeset_id", type=click.IntRange(min=1))
@memory_tool
def show(call: ToolCall, changeset_id: int) -> None:
    """Show one changeset, entry by entry, as a diff to review.

    \b
    Example: homeport tidy show 3
    """
    call.show(call.tool("get_changesets", changeset_id=changeset_id), _render_changeset)


@tidy.command(name="list")
@click.option("--status", type=click.Choice(["proposed", "applied", "reverted"]))
@click.option("--limit", type=click.IntRange(1, 200), default=20, show_default=True)
@memory_tool
def list_(call: ToolCall, status: str | None, limit: int) -> None:
    """List changesets, newest first, with who applied or reverted them.

    \b
    Example: homeport tidy list --status applied
    """

    def render(console: Console, r: Result) -> None:
        if not r["changesets"]:
            console.print("no changesets yet: homeport tidy propose")
        for cs in r["changesets"]:
            who = cs["applied_by"] or cs["created_by"] or "-"
            when = cs["reverted_at"] or cs["applied_at"] or cs["created_at"]
            counts = cs["counts"]
            console.print(
                f"#{cs['id']}  {cs['status']:<9} {when}  {who}  "
                f"{counts['accepted']}/{counts['entries']} entries accepted, {counts['items']} items"
            )

    call.show(call.tool("get_changesets", status=status, limit=limit), render)


@tidy.command()
@click.argument("changeset_id", type=click.IntRange(min=1))
@click.option("--accept", multiple=True, type=click.IntRange(min=1), help="Accept this entry; repeat for several.")
@click.option("--reject", multiple=True, type=click.IntRange(min=1), help="Reject this entry; repeat for several.")
@click.option("--archive", "archive", multiple=True, metavar="TYPE:ID", help="Add: archive this item.")
@click.option(
    "--supersede", nargs=2, multiple=True, metavar="OLD NEW", help="Add: OLD (TYPE:ID) is superseded by NEW (TYPE:ID)."
)
@click.option("--merge", nargs=2, multiple=True, metavar="ITEM INTO", help="Add: merge ITEM into INTO (TYPE:ID).")
@click.option("--add", "add_json", help='Add operations as JSON, e.g. \'[{"op": "archive", "item": "decision:3"}]\'.')
@click.option("--reason", help="Why the added operations (shown in review).")
@memory_tool
def amend(
    call: ToolCall,
    changeset_id: int,
    accept: tuple[int, ...],
    reject: tuple[int, ...],
    archive: tuple[str, ...],
    supersede: tuple[tuple[str, str], ...],
    merge: tuple[tuple[str, str], ...],
    add_json: str | None,
    reason: str | None,
) -> None:
    """Accept or reject entries of a proposed changeset, or add operations of your own.

    Items are TYPE:ID (decision:3). A contradiction has no operation until you add the one you decide on.

    \b
    Example: homeport tidy amend 3 --reject 2 --supersede decision:4 decision:9
    """
    add: list[dict[str, Any]] = [{"op": "archive", "item": a} for a in archive]
    add += [{"op": "supersede", "item": old, "by": new} for old, new in supersede]
    add += [{"op": "merge", "item": item, "into": into} for item, into in merge]
    if add_json:
        try:
            parsed = json.loads(add_json)
        except ValueError as exc:
            raise click.BadParameter(f"not JSON: {exc}", param_hint="--add") from None
        add += parsed if isinstance(parsed, list) else [parsed]
    if not (accept or reject or add):
        raise click.UsageError("nothing to amend; pass --accept, --reject, --archive, --supersede, --merge or --add")
    result = call.tool(
        "amend_changeset",
        changeset_id=changeset_id,
        accept=list(accept) or None,
        reject=list(reject) or None,
        add=add or None,
        reason=reason,
    )
    call.show(result, _render_changeset)


@tidy.command()
@click.argument("changeset_id", type=click.IntRange(min=1))
@click.option("--force", is_flag=True, help="Apply even if it touches a pinned item or over 5% of the items.")
@memory_tool
def apply(call: ToolCall, changeset_id: int, force: bool) -> None:
    """Apply the accepted entries, all or nothing; refused if an item changed since the proposal.

    \b
    Example: homeport tidy apply 3
    """
    result = call.tool("apply_changeset", changeset_id=changeset_id, force=force)
    call.show(
        result,
        lambda c, r: c.print(
            confirm_line(
                "applied",
                f"changeset {r['id']}",
                f"{r['counts']['operations']} operation(s); undo with: homeport tidy revert {r['id']}",
            )
        ),
    )


@tidy.command()
@click.argument("changeset_id", type=click.IntRange(min=1))
@click.option("--force", is_flag=True, help="Put the earlier states back even if the items changed since.")
@memory_tool
def revert(call: ToolCall, changeset_id: int, force: bool) -> None:
    """Put back exactly what an applied changeset replaced (states, tags, links).

    \b
    Example: homeport tidy revert 3
    """
    result = call.tool("revert_changeset", changeset_id=changeset_id, force=force)
    call.show(result, lambda c, r: c.print(confirm_line("reverted", f"changeset {r['id']}", "")))


@click.command()
@click.argument("item", metavar="TYPE:ID")
@click.option("--valid-until", help='ISO 8601 time after which the item leaves default reads ("" clears it).')
@click.option("--pin/--unpin", default=None, help="Pinned items are left alone by tidy changesets.")
@memory_tool
def lifecycle(call: ToolCall, item: str, valid_until: str | None, pin: bool | None) -> None:
    """Set when an item expires (it leaves the default reads then), or pin it (tidy leaves it alone).

    \b
    Example: homeport tidy lifecycle decision:3 --valid-until 2027-01-01 --pin
    """
    item_type, _, number = item.partition(":")
    if not number.isdigit():
        raise click.BadParameter(f"{item!r} is not TYPE:ID, e.g. decision:3", param_hint="TYPE:ID")
    result = call.tool(
        "set_item_lifecycle", item_type=item_type, item_id=int(number), valid_until=valid_until, pinned=pin
    )
    call.show(result, lambda c, r: c.print(confirm_line("set", f"{item_type} {number}", json.dumps(r["state"]))))


tidy.add_command(lifecycle)


def _render_changeset(console: Console, r: Result) -> None:
    counts = r["counts"]
    console.print(
        f"changeset #{r['id']} ({r['status']}): {counts['entries']} entries, {counts['accepted']} accepted, "
        f"{counts['operations']} operation(s) on {counts['items']} item(s)"
    )
    for entry in r.get("entries", []):
        mark = "+" if entry["accepted"] and entry["operations"] else ("?" if not entry["operations"] else "-")
        console.print(f"\n{mark} [{entry['id']}] {entry['kind']}: {entry['reason']}", soft_wrap=True)
        for item in entry["items"]:
            title = f"  {item['title']}" if item.get("title") else ""
            console.print(f"    {item['type']} {item['id']}{title}", style="dim", soft_wrap=True)
        for op in entry["operations"]:
            console.print(f"    {_describe(op)}", style="green" if entry["accepted"] else "red")
        evidence = {k: v for k, v in entry["evidence"].items() if k != "texts"}
        if evidence:
            console.print(f"    evidence: {json.dumps(evidence, ensure_ascii=False)}", style="dim", soft_wrap=True)
    if r["status"] == "proposed" and r.get("entries"):
        console.print(f"\napply: homeport tidy apply {r['id']}   amend: homeport tidy amend {r['id']} --reject N")


def _describe(op: dict[str, Any]) -> str:
    def ref(x: Any) -> str:
        return f"{x['type']}:{x['id']}" if isinstance(x, dict) else str(x)

    kind = op["op"]
    if kind == "merge":
        return f"merge {ref(op['item'])} into {ref(op['into'])}"
    if kind == "supersede":
        return f"supersede {ref(op['item'])} by {ref(op['by'])}"
    if kind == "relink":
        return f"relink link {op['link_id']} from {ref(op['from'])} to {ref(op['to'])}"
    if kind == "retag":
        return f"retag {ref(op['item'])} as {', '.join(op['tags'])}"
    return f"{kind} {ref(op['item'])}"
