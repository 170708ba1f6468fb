"""`homeport import-from KIND SOURCE`: bring the memory another server kept into this workspace."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.text import Text

from homeport.cli._output import confirm_line, item_table
from homeport.cli.memory import Result, ToolCall, allow_secrets_option, memory_tool

__all__ = ["import_from"]


@click.command("import-from")
@click.argument("kind", type=click.Choice(["memory-jsonl"]))
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("--dry-run", is_flag=True, help="Show what would be imported and skipped; change nothing.")
@allow_secrets_option
@memory_tool
def import_from(call: ToolCall, kind: str, source: str, dry_run: bool) -> None:
    """Import another memory server's data; running it again adds nothing.

    KIND memory-jsonl is the reference MCP memory server's memory.jsonl: entities of type
    decision become decisions, pattern/convention/practice/guideline/rule system patterns, any
    other type custom data in a category named after it; relations become links.

    \b
    Example: homeport import-from memory-jsonl ~/.local/share/mcp-memory/memory.jsonl --dry-run
    """
    path = call.cwd / Path(source).expanduser()  # relative to the shell's directory; ~ as the shell would
    result = call.tool("import_from", kind=kind, source=str(path), dry_run=dry_run)
    call.show(result, _render)


def _render(console: Console, r: Result) -> None:
    created = r["created"]
    nouns = {"decision": "decision(s)", "system_pattern": "system pattern(s)", "custom_data": "custom data item(s)"}
    made = ", ".join(f"{n} {nouns.get(name, 'link(s)')}" for name, n in created.items() if n) or "nothing new"
    verb = "would import" if r["dry_run"] else "imported"
    console.print(confirm_line(verb, made, f"from {r['source']}"))
    console.print(Text(f"updated {r['updated']}, unchanged {r['unchanged']}, skipped {len(r['skipped'])}", style="dim"))
    if r["skipped"]:
        table = item_table("line", "item", "why skipped")
        for s in r["skipped"]:
            table.add_row(str(s["line"]), Text(s["item"]), Text(s["reason"]))
        console.print(table)
