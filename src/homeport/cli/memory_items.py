"""`homeport decisions | progress | patterns`: the memory items that have ids."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from rich.text import Text
from rich.tree import Tree

from homeport.cli._lazy import HelpfulGroup
from homeport.cli._output import confirm_line, empty_line, item_table, status, tags, when
from homeport.cli.memory import Result, ToolCall, allow_secrets_option, memory_tool
from homeport.cli.verify import CITE_OPTION, citation_line
from homeport.core.vocabulary import COMMON_STATUSES

__all__ = ["decisions", "patterns", "progress"]

_TAG = click.option(
    "--tag", "tags_any", multiple=True, metavar="TAG", help="Only items with this tag (repeatable: any of them)."
)
_ALL_TAGS = click.option(
    "--all-tags", "tags_all", multiple=True, metavar="TAG", help="Only items with every one of these tags (repeatable)."
)
_STATUSES = ", ".join(COMMON_STATUSES)


# -- decisions ---------------------------------------------------------------------------------


@click.group(cls=HelpfulGroup)
def decisions() -> None:
    """Decisions: what was decided, why, and how it is carried out."""


@decisions.command("add")
@click.argument("summary")
@click.option("--rationale", help="Why it was decided.")
@click.option("--details", help="How it is carried out (implementation details).")
@click.option("--tag", "tags_", multiple=True, metavar="TAG", help="A tag (repeatable).")
@CITE_OPTION
@allow_secrets_option
@memory_tool
def decisions_add(
    call: ToolCall,
    summary: str,
    rationale: str | None,
    details: str | None,
    tags_: tuple[str, ...],
    cites: tuple[dict[str, str], ...],
) -> None:
    """Record a decision.

    \b
    Example: homeport decisions add "Use SQLite WAL" --rationale "readers never block" --tag db
             homeport decisions add "Retries back off" --cite payments/retry.py:40-58
    """
    result = call.tool(
        "log_decision",
        summary=summary,
        rationale=rationale,
        implementation_details=details,
        tags=list(tags_) or None,
        cites=list(cites) or None,
    )
    call.show(result, lambda c, r: c.print(confirm_line("logged", f"decision {r['id']}", r["summary"])))


@decisions.command("list")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 1000))
@_TAG
@_ALL_TAGS
@memory_tool
def decisions_list(call: ToolCall, limit: int, tags_any: tuple[str, ...], tags_all: tuple[str, ...]) -> None:
    """List decisions, newest first.

    \b
    Example: homeport decisions list --tag db --limit 5
    """
    result = call.tool("get_decisions", limit=limit, tags_any=list(tags_any) or None, tags_all=list(tags_all) or None)
    call.show(result, _decision_table)


@decisions.command("update")
@click.argument("decision_id", metavar="ID", type=int)
@click.option("--summary", help="New summary (one line: what was decided).")
@click.option("--rationale", help='New rationale; "" clears it.')
@click.option("--details", help='New implementation details; "" clears them.')
@click.option("--tag", "tags_", multiple=True, metavar="TAG", help="Replace the tags with these (repeatable).")
@click.option("--no-tags", is_flag=True, help="Remove every tag.")
@CITE_OPTION
@click.option("--no-cites", is_flag=True, help="Remove every citation.")
@allow_secrets_option
@memory_tool
def decisions_update(
    call: ToolCall,
    decision_id: int,
    summary: str | None,
    rationale: str | None,
    details: str | None,
    tags_: tuple[str, ...],
    no_tags: bool,
    cites: tuple[dict[str, str], ...],
    no_cites: bool,
) -> None:
    """Correct a decision: the fields given replace the stored ones, the others stay.

    The earlier text is kept as a version: `homeport history decision ID` shows it,
    `homeport restore decision ID VERSION` brings it back.

    \b
    Example: homeport decisions update 7 --summary "Use SQLite WAL" --rationale ""
    """
    new_tags = [] if no_tags else list(tags_) or None
    result = call.tool(
        "update_decision",
        decision_id=decision_id,
        summary=summary,
        rationale=rationale,
        implementation_details=details,
        tags=new_tags,
        cites=[] if no_cites else list(cites) or None,
    )
    call.show(result, lambda c, r: c.print(confirm_line("updated", f"decision {r['id']}", r["summary"])))


@decisions.command("delete")
@click.argument("decision_id", metavar="ID", type=int)
@memory_tool
def decisions_delete(call: ToolCall, decision_id: int) -> None:
    """Delete a decision with its tags and links.

    \b
    Example: homeport decisions delete 7
    """
    result = call.tool("delete_decision", decision_id=decision_id)
    call.show(
        result,
        lambda c, r: c.print(
            confirm_line("deleted", f"decision {r['deleted']['id']}", _with_links(r["deleted"]["summary"], r))
        ),
    )


def _decision_table(console: Console, result: Result) -> None:
    rows = result["decisions"]
    if not rows:
        return empty_line(console, "decisions")
    table = item_table("id", "summary", "tags", "updated")
    for d in rows:
        summary = Text(d["summary"])
        if d.get("rationale"):
            summary.append(f"\n{d['rationale']}", style="dim")
        if d.get("citation_status"):
            summary.append(citation_line(d))
        table.add_row(str(d["id"]), summary, tags(d["tags"]), when(d["updated_at"]))
    console.print(table)


# -- progress ----------------------------------------------------------------------------------


@click.group(
    cls=HelpfulGroup,
    help=f"Progress: tasks with a status, nested by parent.\n\nCommon statuses: {_STATUSES}; any text works.",
)
def progress() -> None:
    pass


@progress.command("add")
@click.argument("status_", metavar="STATUS")
@click.argument("description")
@click.option("--parent", "parent_id", type=int, metavar="ID", help="Nest it under this entry.")
@CITE_OPTION
@allow_secrets_option
@memory_tool
def progress_add(
    call: ToolCall, status_: str, description: str, parent_id: int | None, cites: tuple[dict[str, str], ...]
) -> None:
    """Record a progress entry.

    \b
    Example: homeport progress add TODO "Write the export" --parent 3
    """
    result = call.tool(
        "log_progress", status=status_, description=description, parent_id=parent_id, cites=list(cites) or None
    )
    call.show(result, lambda c, r: c.print(confirm_line("logged", f"progress {r['id']}", _entry_line(r))))


@progress.command("update")
@click.argument("progress_id", metavar="ID", type=int)
@click.option("--status", "status_", help=f"New status ({_STATUSES}, or any text).")
@click.option("--description", help="New description.")
@click.option("--parent", "parent_id", type=int, metavar="ID", help="Move it under this entry.")
@allow_secrets_option
@memory_tool
def progress_update(
    call: ToolCall, progress_id: int, status_: str | None, description: str | None, parent_id: int | None
) -> None:
    """Change the status, description or parent of an entry.

    \b
    Example: homeport progress update 4 --status DONE
    """
    result = call.tool(
        "update_progress", progress_id=progress_id, status=status_, description=description, parent_id=parent_id
    )
    call.show(result, lambda c, r: c.print(confirm_line("updated", f"progress {r['id']}", _entry_line(r))))


@progress.command("list")
@click.option("--status", "status_", help="Only entries with this status.")
@click.option("--parent", "parent_id", type=int, metavar="ID", help="Only the direct children of this entry.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 1000))
@memory_tool
def progress_list(call: ToolCall, status_: str | None, parent_id: int | None, limit: int) -> None:
    """List progress entries, newest first.

    \b
    Example: homeport progress list --status IN_PROGRESS
    """
    result = call.tool("get_progress", status=status_, parent_id=parent_id, limit=limit)

    def render(console: Console, r: Result) -> None:
        if not r["progress"]:
            return empty_line(console, "progress entries")
        table = item_table("id", "status", "description", "parent", "updated")
        for p in r["progress"]:
            parent = "" if p["parent_id"] is None else str(p["parent_id"])
            table.add_row(str(p["id"]), status(p["status"]), Text(p["description"]), parent, when(p["updated_at"]))
        console.print(table)

    call.show(result, render)


@progress.command("tree")
@click.argument("root_id", metavar="[ID]", type=int, required=False)
@click.option("--status", "status_", help="Only entries with this status, and the entries above them.")
@memory_tool
def progress_tree(call: ToolCall, root_id: int | None, status_: str | None) -> None:
    """Show progress as a tree: all of it, or the subtree of ID.

    \b
    Example: homeport progress tree 3 --status TODO
    """
    result = call.tool("get_progress", status=status_, parent_id=root_id, tree=True)

    def render(console: Console, r: Result) -> None:
        if not r["progress"]:
            return empty_line(console, "progress entries")
        tree = Tree("progress", hide_root=True, guide_style="dim")
        pending: list[tuple[Tree, dict[str, Any]]] = [(tree, node) for node in r["progress"]]
        while pending:
            branch, node = pending.pop(0)
            label = Text.assemble(status(node["status"]), " ", node["description"], (f"  #{node['id']}", "dim"))
            child = branch.add(label)
            pending[:0] = [(child, c) for c in node["children"]]
        console.print(tree)

    call.show(result, render)


@progress.command("delete")
@click.argument("progress_id", metavar="ID", type=int)
@click.option("--cascade", is_flag=True, help="Also delete every entry below it.")
@memory_tool
def progress_delete(call: ToolCall, progress_id: int, cascade: bool) -> None:
    """Delete an entry with its links (and its subtree, with --cascade).

    An entry that has children is refused without --cascade.

    \b
    Example: homeport progress delete 3 --cascade
    """
    result = call.tool("delete_progress", progress_id=progress_id, cascade=cascade)
    ids = ", ".join(str(p["id"]) for p in result["deleted"])
    call.show(
        result,
        lambda c, r: c.print(
            confirm_line("deleted", f"progress {ids}", _with_links(r["deleted"][0]["description"], r))
        ),
    )


def _entry_line(entry: Result) -> str:
    parent = f" (under {entry['parent_id']})" if entry.get("parent_id") is not None else ""
    return f"[{entry['status']}] {entry['description']}{parent}"


# -- system patterns ---------------------------------------------------------------------------


@click.group(cls=HelpfulGroup)
def patterns() -> None:
    """System patterns: named, reusable ways the project does things."""


@patterns.command("add")
@click.argument("name")
@click.argument("description")
@click.option("--tag", "tags_", multiple=True, metavar="TAG", help="A tag (repeatable).")
@CITE_OPTION
@allow_secrets_option
@memory_tool
def patterns_add(
    call: ToolCall, name: str, description: str, tags_: tuple[str, ...], cites: tuple[dict[str, str], ...]
) -> None:
    """Record a pattern; an existing NAME (any case) is updated.

    \b
    Example: homeport patterns add "Repository" "One module per table, no ORM sessions" --tag db
    """
    result = call.tool(
        "log_system_pattern", name=name, description=description, tags=list(tags_) or None, cites=list(cites) or None
    )
    call.show(
        result,
        lambda c, r: c.print(confirm_line("updated" if r["updated"] else "logged", f"pattern {r['id']}", r["name"])),
    )


@patterns.command("list")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 1000))
@_TAG
@_ALL_TAGS
@memory_tool
def patterns_list(call: ToolCall, limit: int, tags_any: tuple[str, ...], tags_all: tuple[str, ...]) -> None:
    """List patterns by name.

    \b
    Example: homeport patterns list --tag db
    """
    result = call.tool(
        "get_system_patterns", tags_any=list(tags_any) or None, tags_all=list(tags_all) or None, limit=limit
    )

    def render(console: Console, r: Result) -> None:
        if not r["system_patterns"]:
            return empty_line(console, "system patterns")
        table = item_table("id", "name", "description", "tags")
        for p in r["system_patterns"]:
            table.add_row(str(p["id"]), Text(p["name"], style="bold"), Text(p["description"]), tags(p["tags"]))
        console.print(table)

    call.show(result, render)


@patterns.command("update")
@click.argument("pattern_id", metavar="ID", type=int)
@click.option("--name", help="New name (unique, any case).")
@click.option("--description", help="New description.")
@click.option("--tag", "tags_", multiple=True, metavar="TAG", help="Replace the tags with these (repeatable).")
@click.option("--no-tags", is_flag=True, help="Remove every tag.")
@allow_secrets_option
@memory_tool
def patterns_update(
    call: ToolCall,
    pattern_id: int,
    name: str | None,
    description: str | None,
    tags_: tuple[str, ...],
    no_tags: bool,
) -> None:
    """Correct a pattern by id (a new name too); the fields not given stay.

    The earlier text is kept as a version: `homeport history system_pattern ID` shows it.

    \b
    Example: homeport patterns update 2 --name "Repository per aggregate"
    """
    new_tags = [] if no_tags else list(tags_) or None
    result = call.tool(
        "update_system_pattern", pattern_id=pattern_id, name=name, description=description, tags=new_tags
    )
    call.show(result, lambda c, r: c.print(confirm_line("updated", f"pattern {r['id']}", r["name"])))


@patterns.command("delete")
@click.argument("pattern_id", metavar="ID", type=int)
@memory_tool
def patterns_delete(call: ToolCall, pattern_id: int) -> None:
    """Delete a pattern with its tags and links.

    \b
    Example: homeport patterns delete 2
    """
    result = call.tool("delete_system_pattern", pattern_id=pattern_id)
    call.show(
        result,
        lambda c, r: c.print(
            confirm_line("deleted", f"pattern {r['deleted']['id']}", _with_links(r["deleted"]["name"], r))
        ),
    )


def _with_links(what: str, result: Result) -> str:
    n = result["links_removed"]
    return f"{what} ({n} link{'s' if n != 1 else ''} removed)" if n else what
