"""`homeport export | import | batch | schema`: the memory in bulk, and its shape."""

from __future__ import annotations

import sys
from typing import IO, Any, Literal

import click
from rich.console import Console
from rich.text import Text

from homeport.cli._output import confirm_line, item_table
from homeport.cli.memory import Result, ToolCall, allow_secrets_option, memory_tool, parse_json
from homeport.core.vocabulary import BATCH_TYPES, DEFAULT_EXPORT_DIR
from homeport.workspace import Workspace

__all__ = ["batch", "export", "import_", "schema"]

_DIR_HELP = "relative to the current directory; it must lie inside the workspace."


@click.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "markdown"]),
    default="json",
    show_default=True,
    help="json round-trips exactly; markdown reads well and imports back.",
)
@click.option("--output", metavar="DIR", help=f"Where to write (default {DEFAULT_EXPORT_DIR}); {_DIR_HELP}")
@memory_tool
def export(call: ToolCall, fmt: Literal["json", "markdown"], output: str | None) -> None:
    """Write the memory as files, one per item type.

    \b
    Example: homeport export --format markdown --output docs/memory
    """
    result = call.tool("export", format=fmt, output_dir=_from_cwd(call, output))

    def render(console: Console, r: Result) -> None:
        total = sum(n for name, n in r["counts"].items() if name not in _HISTORY)
        console.print(confirm_line("exported", f"{total} item(s)", f"as {r['format']} to {r['output_dir']}"))
        console.print(Text(_counts(r["counts"]), style="dim"))

    call.show(result, render)


@click.command("import")
@click.option(
    "--input",
    "input_dir",
    metavar="DIR",
    help=f"The export to read (default {DEFAULT_EXPORT_DIR}); {_DIR_HELP}",
)
@click.option(
    "--mode",
    type=click.Choice(["merge", "replace"]),
    default="merge",
    show_default=True,
    help="merge keeps the memory and overwrites items with the same id; replace empties it first.",
)
@click.option("--yes", "-y", is_flag=True, help="Replace without asking.")
@allow_secrets_option
@click.option("--dry-run", is_flag=True, help="Check the export and show what would change; write nothing.")
@click.option("--allow-empty", is_flag=True, help="Let --mode replace with an export of no items erase the memory.")
@memory_tool
def import_(
    call: ToolCall,
    input_dir: str | None,
    mode: Literal["merge", "replace"],
    yes: bool,
    dry_run: bool,
    allow_empty: bool,
) -> None:
    """Read an export back into the memory, in one transaction.

    Every item is checked first; one invalid item (named with its file, line and field) imports nothing.

    \b
    Example: homeport import --input docs/memory --mode replace --yes
    """
    source = _from_cwd(call, input_dir)

    def confirm(workspace: Workspace) -> None:
        if mode == "replace" and not yes and not dry_run:
            shown = source or DEFAULT_EXPORT_DIR
            question = f"Replace the whole memory of {workspace.root} with the export in {shown}?"
            try:
                why = "" if click.confirm(question, err=True) else "the answer was no"
            except click.Abort:  # end of input (no terminal, nothing piped in) or Ctrl-C
                click.echo(err=True)  # end the question's line
                why = "no answer" if sys.stdin.isatty() else "no answer: standard input is not a terminal"
            if why:
                # Not click's bare "Aborted!": a script that met the question learns the way through it.
                raise click.ClickException(
                    f"nothing was replaced ({why}); run it again with --yes to replace without asking"
                )

    extra: dict[str, Any] = {"dry_run": True} if dry_run else {}
    if allow_empty:
        extra["allow_empty"] = True
    result = call.tool("import", input_dir=source, mode=mode, confirm=confirm, **extra)

    def render(console: Console, r: Result) -> None:
        total = sum(n for name, n in r["counts"].items() if name not in _HISTORY)
        verb = "would import" if r.get("dry_run") else "imported"
        console.print(confirm_line(verb, f"{total} item(s)", f"from {r['input_dir']} ({r['mode']})"))
        console.print(Text(_counts(r["counts"]), style="dim"))
        for section, change in r.get("changes", {}).items():
            parts = [f"{what} {_ids(ids)}" for what, ids in change.items() if ids]
            if parts:
                console.print(Text(f"{section}: " + "; ".join(parts)))
        if r.get("dry_run"):
            console.print(Text("dry run: nothing was written", style="bold"))

    call.show(result, render)


@click.command()
@click.argument("item_type", metavar="TYPE", type=click.Choice(list(BATCH_TYPES)))
@click.argument("items_file", metavar="FILE", type=click.File("r", encoding="utf-8"))
@allow_secrets_option
@memory_tool
def batch(call: ToolCall, item_type: str, items_file: IO[str]) -> None:
    """Write up to 500 items of one TYPE from a JSON list, all or none.

    FILE holds a JSON list of objects with the item type's fields (see `homeport schema`); `-` reads stdin.

    \b
    Example: homeport batch decision decisions.json
    """
    items = parse_json(items_file.read(), what=f"FILE {items_file.name}", expect=list)
    result = call.tool("batch_log_items", item_type=item_type, items=items)
    call.show(
        result,
        lambda c, r: c.print(
            confirm_line(
                "logged", f"{r['count']} {item_type} item(s)", "ids " + ", ".join(str(i["id"]) for i in r["items"])
            )
        ),
    )


@click.command()
@memory_tool
def schema(call: ToolCall) -> None:
    """The memory's item types, their fields and the tools that write them.

    \b
    Example: homeport schema --json
    """
    # Through the pipeline as get_memory_schema, like every other command: the caller's tool allowlist
    # applies here too.
    result = call.tool("get_memory_schema")

    def render(console: Console, r: Result) -> None:
        table = item_table("type", "fields", "written by")
        for name, spec in r["item_types"].items():
            table.add_row(name, Text(", ".join(spec["fields"])), Text(", ".join(spec["write"]), style="dim"))
        console.print(table)

    call.show(result, render)


def _from_cwd(call: ToolCall, given: str | None) -> str | None:
    # The MCP tools take paths relative to the workspace root; a person means the current directory.
    return None if given is None else str(call.cwd / given)


def _ids(ids: list[int]) -> str:
    shown = ", ".join(map(str, ids[:20]))
    return f"{shown} and {len(ids) - 20} more" if len(ids) > 20 else shown


# The rows an export carries beside the items (format version 2): counted apart, not as items.
_HISTORY = ("item_versions", "item_writers", "changesets", "item_states", "item_branches", "item_citations")


def _counts(counts: dict[str, int]) -> str:
    items = ", ".join(f"{name} {n}" for name, n in counts.items() if name not in _HISTORY)
    history = ", ".join(f"{name} {n}" for name, n in counts.items() if name in _HISTORY and n)
    return items + (f"; with {history}" if history else "")
