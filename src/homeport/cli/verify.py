"""`homeport verify`: check every memory item's citations to code; exit non-zero when any is stale (for CI)."""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from homeport.cli.memory import Result, ToolCall, memory_tool

__all__ = ["CITE_OPTION", "citation_line", "confirm", "verify"]


class CiteParam(click.ParamType):  # type: ignore[type-arg]  # generic only in newer click stubs
    """`PATH:40-58` (lines) or `PATH#Retry.schedule` (a symbol), as a citation for a tool's `cites`."""

    name = "PATH:LINES|PATH#SYMBOL"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> dict[str, str]:
        if isinstance(value, dict):
            return value
        text = str(value)
        path, hashed, symbol = text.partition("#")
        if hashed and path and symbol:
            return {"path": path, "symbol": symbol}
        path, colon, lines = text.rpartition(":")
        if colon and path and lines:
            return {"path": path, "lines": lines}
        self.fail(f"{text!r} is neither PATH:LINES (src/app.py:40-58) nor PATH#SYMBOL (src/app.py#Retry.schedule)")


CITE_OPTION = click.option(
    "--cite",
    "cites",
    multiple=True,
    type=CiteParam(),
    help="Code the item is about: PATH:40-58 or PATH#Symbol, relative to the project root (repeatable).",
)

CITED_TYPES = ["decision", "progress", "system_pattern", "custom_data"]
# Exit codes: 0 every citation fresh, moved or unverifiable; 1 some citation changed or missing.
STALE_EXIT = 1


@click.command()
@click.option("--all", "include_fresh", is_flag=True, help="List items whose citations are all fresh too.")
@memory_tool
def verify(call: ToolCall, include_fresh: bool) -> None:
    """Check the citations of every item against the code now.

    Lists the items whose citations are not fresh: moved (the new place is shown), changed,
    missing or unverifiable. Exits 1 when any citation is changed or missing, so a CI step fails
    when memory no longer matches the code; moved and unverifiable citations are reported but pass.
    Fix an item with its update command and new cites, or re-anchor it with confirm_citations.

    \b
    Example: homeport verify --json
    """
    result = call.tool("verify_citations", include_fresh=include_fresh)
    call.show(result, _render)
    if result["failing"]:
        raise SystemExit(STALE_EXIT)


def _render(console: Console, r: Result) -> None:
    counts = ", ".join(f"{n} {status}" for status, n in r["counts"].items() if n)
    console.print(f"{r['items_checked']} cited item(s), {r['citations_checked']} citation(s): {counts or 'none'}")
    if not r["items"]:
        return
    table = Table(show_edge=False, pad_edge=False)
    for column in ("item", "status", "citation", "now"):
        table.add_column(column, overflow="fold")
    for item in r["items"]:
        for i, cite in enumerate(item["citations"]):
            where = f"{cite['path']}:{cite['lines']}" + (f" ({cite['symbol']})" if cite.get("symbol") else "")
            now = cite.get("now")
            table.add_row(
                f"{item['type']} {item['id']}: {item['title'][:60]}" if i == 0 else "",
                cite["status"],
                where,
                f"{now['path']}:{now['lines']}" if now else cite.get("reason", ""),
            )
    console.print(table)


def citation_line(item: Result) -> Text:
    """`\ncites: changed payments/retry.py:8-13`: an item's citation status under its text in a list."""
    stale = item["citation_status"] in ("changed", "missing")
    worst = next((c for c in item.get("citations", []) if c["status"] == item["citation_status"]), None)
    where = f" {worst['path']}:{worst['lines']}" if worst and item["citation_status"] != "fresh" else ""
    return Text(f"\ncites: {item['citation_status']}{where}", style="red" if stale else "dim")


@click.command()
@click.argument("item_type", metavar="TYPE", type=click.Choice(CITED_TYPES))
@click.argument("item_id", metavar="ID", type=int)
@click.option(
    "--accept-changes", is_flag=True, help="Also anchor changed citations where they are now (the item still holds)."
)
@memory_tool
def confirm(call: ToolCall, item_type: str, item_id: int, accept_changes: bool) -> None:
    """Record that you re-checked an item against the code it cites.

    Moved citations are anchored at their new place; with --accept-changes, changed ones at the
    lines they cover now. A missing citation cannot be confirmed: update the item with new --cite.

    \b
    Example: homeport confirm decision 7 --accept-changes
    """
    result = call.tool("confirm_citations", item_type=item_type, item_id=item_id, accept_changes=accept_changes)

    def render(console: Console, r: Result) -> None:
        console.print(
            f"confirmed {r['item_type']} {r['item_id']}: {r['reanchored']} re-anchored, now {r['citation_status']}"
        )
        for reason in r.get("not_reanchored", []):
            console.print(f"  not re-anchored: {reason}", style="dim")

    call.show(result, render)
