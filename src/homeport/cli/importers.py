"""`homeport import-from KIND SOURCE`: bring the memory another server kept into this workspace."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.text import Text

from homeport.cli._output import confirm_line, item_table
from homeport.cli.memory import Result, ToolCall, allow_secrets_option, memory_tool

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

__all__ = ["import_from"]

# Sources with fewer rows than this import in well under a second: no bar.
PROGRESS_FROM_ROWS = 500
_NOUNS = {
    "product_context": "product context",
    "active_context": "active context",
    "decision": "decision(s)",
    "progress": "progress entry(ies)",
    "system_pattern": "system pattern(s)",
    "custom_data": "custom data item(s)",
    "link": "link(s)",
}


@click.command("import-from")
@click.argument("kind", type=click.Choice(["memory-jsonl", "conport", "markdown", "basic-memory"]))
@click.argument("source", type=click.Path())
@click.option("--dry-run", is_flag=True, help="Show what would be imported and skipped; change nothing.")
@allow_secrets_option
@memory_tool
def import_from(call: ToolCall, kind: str, source: str, dry_run: bool) -> None:
    """Import another memory server's data or the project's agent instructions; running it again adds nothing.

    KIND memory-jsonl is the reference MCP memory server's memory.jsonl: entities of type
    decision become decisions, pattern/convention/practice/guideline/rule system patterns, any
    other type custom data in a category named after it; relations become links.

    KIND conport is a ConPort context_portal/context.db (or the directory ConPort ran in): its
    contexts with their history, decisions, progress tree, system patterns, custom data and links.

    KIND markdown is CLAUDE.md, AGENTS.md, .cursorrules or .github/copilot-instructions.md (or a
    directory to find them in): one item per heading section, rules as system patterns and the
    rest as custom data ProjectInstructions, each with its source file:line. Run it again after
    editing the file: changed sections are updated.

    KIND basic-memory is a basic-memory project directory: notes of type decision (or in
    decisions/) become decisions, [decision] observations decisions, [pattern] and [convention]
    observations system patterns, other notes custom data by folder (key: the permalink);
    relations become links.

    \b
    Example: homeport import-from memory-jsonl ~/.local/share/mcp-memory/memory.jsonl --dry-run
    Example: homeport import-from conport ~/code/shop
    Example: homeport import-from markdown .
    Example: homeport import-from basic-memory ~/basic-memory --dry-run
    """
    path = call.cwd / Path(source).expanduser()  # relative to the shell's directory; ~ as the shell would
    with _progress_bar() as call.progress:
        result = call.tool("import_from", kind=kind, source=str(path), dry_run=dry_run)
    call.show(result, _render)


@contextmanager
def _progress_bar() -> Iterator[ProgressReporter]:
    reporter = ProgressReporter()
    try:
        yield reporter
    finally:
        reporter.close()


class ProgressReporter:
    """A rich progress bar on stderr, started only once a source turns out to be large."""

    def __init__(self) -> None:
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __call__(self, done: int, total: int) -> None:
        if self._bar is None:
            if total < PROGRESS_FROM_ROWS:
                return
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(
                TextColumn("importing"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task("import", total=total)
        assert self._task is not None
        self._bar.update(self._task, completed=done)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def _render(console: Console, r: Result) -> None:
    made = ", ".join(_made(name, n) for name, n in r["created"].items() if n) or "nothing new"
    verb = "would import" if r["dry_run"] else "imported"
    console.print(confirm_line(verb, made, f"from {r['source']}"))
    counts = f"updated {r['updated']}, unchanged {r['unchanged']}, skipped {len(r['skipped'])}"
    if "moved" in r:
        counts = f"updated {r['updated']}, moved {r['moved']}, unchanged {r['unchanged']}, skipped {len(r['skipped'])}"
    console.print(Text(counts, style="dim"))
    if r["skipped"]:
        table = item_table("where", "item", "why skipped")
        for s in r["skipped"]:
            table.add_row(str(s.get("where", s.get("line"))), Text(s["item"]), Text(s["reason"]))
        console.print(table)
    if r.get("stale"):
        console.print(Text("no longer in the file, left in place (delete them if they should go):", style="dim"))
        table = item_table("was at", "item", "type")
        for s in r["stale"]:
            table.add_row(s["source"], Text(s["name"]), s["type"])
        console.print(table)


def _made(item_type: str, count: int) -> str:
    noun = _NOUNS.get(item_type, item_type)
    return noun if item_type.endswith("_context") else f"{count} {noun}"  # a context is one document
