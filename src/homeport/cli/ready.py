"""`homeport ready`: the progress entries that can be worked on now (beads' `bd ready`)."""

from __future__ import annotations

import click
from rich.console import Console
from rich.text import Text

from homeport.cli._output import empty_line, item_table
from homeport.cli.memory import Result, ToolCall, memory_tool

__all__ = ["ready"]


@click.command()
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 1000))
@memory_tool
def ready(call: ToolCall, limit: int) -> None:
    """Open progress entries (status not DONE) with no open blocker, each with why it is ready.

    Block one entry on another with `homeport link progress A blocks progress B` (or B blocked_by A);
    a link that would close a cycle is refused. Progress has no priority field: entries are ordered
    by status (IN_PROGRESS, TODO, others, BLOCKED), then oldest first.

    \b
    Example: homeport ready
    """
    result = call.tool("get_ready_work", limit=limit)

    def render(console: Console, r: Result) -> None:
        if not r["items"]:
            empty_line(console, "progress entries ready to work on")
        else:
            table = item_table("id", "status", "description", "ready because")
            for item in r["items"]:
                table.add_row(
                    str(item["id"]),
                    item["status"],
                    Text(item["description"], style="bold"),
                    Text(item["ready_because"], style="dim"),
                )
            console.print(table)
        for entry in r["blocked"]:
            blockers = ", ".join(f"progress {b['id']} ({b['status']})" for b in entry["blocked_by"])
            console.print(Text(f"progress {entry['id']} waits on {blockers}", style="dim"), soft_wrap=True)

    call.show(result, render)
