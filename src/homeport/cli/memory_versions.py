"""`homeport restore | purge`: bring an item's earlier version back, or remove a deleted item's history."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
from rich.console import Console

from homeport.cli._output import confirm_line, inline_json
from homeport.cli.memory import Result, ToolCall, memory_tool
from homeport.core.vocabulary import ITEM_TYPES

if TYPE_CHECKING:
    from homeport.workspace import Workspace

__all__ = ["purge", "restore"]

_ITEM_TYPE = click.Choice(ITEM_TYPES)


@click.command()
@click.argument("item_type", metavar="TYPE", type=_ITEM_TYPE)
@click.argument("item_id", metavar="ID", type=int)
@click.argument("version", type=click.IntRange(min=1))
@memory_tool
def restore(call: ToolCall, item_type: str, item_id: int, version: int) -> None:
    """Bring back VERSION of an item as its newest version; the versions in between stay.

    Version numbers come from `homeport history TYPE ID`. A deleted item comes back under its
    own ID (its links do not). For a context, ID is 1.

    \b
    Example: homeport restore decision 7 2
    """
    result = call.tool("restore_version", item_type=item_type, item_id=item_id, version=version)

    def render(console: Console, r: Result) -> None:
        what = f"{r['item_type']} {r['item_id']}"
        detail = f"version {r['restored_version']} is now version {r['version']}"
        console.print(confirm_line("restored", what, detail))
        shown = r["item"].get("content", r["item"])
        console.print(inline_json({k: v for k, v in shown.items() if k != "workspace"}), style="dim", soft_wrap=True)

    call.show(result, render)


@click.command()
@click.argument("item_type", metavar="TYPE", type=_ITEM_TYPE)
@click.argument("item_id", metavar="ID", type=int)
@click.option("--yes", "-y", is_flag=True, help="Purge without asking.")
@memory_tool
def purge(call: ToolCall, item_type: str, item_id: int, yes: bool) -> None:
    """Remove every version of a deleted item, so nothing of its text is left in the memory.

    Deleting an item keeps its history (`homeport history TYPE ID`); purging is the only way to
    erase it, and cannot be undone. An item that still exists is refused: delete it first.

    \b
    Example: homeport purge decision 7 --yes
    """

    def confirm(workspace: Workspace) -> None:
        if not yes:
            click.confirm(
                f"Erase every version of {item_type} {item_id} in {workspace.root}? This cannot be undone.",
                abort=True,
                err=True,
            )

    result = call.tool("purge_item", item_type=item_type, item_id=item_id, confirm=confirm)
    call.show(
        result,
        lambda c, r: c.print(
            confirm_line("purged", f"{item_type} {item_id}", f"{r['purged']['versions']} version(s) removed")
        ),
    )
