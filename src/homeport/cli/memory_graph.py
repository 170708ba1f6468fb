"""`homeport link | links | search | history | activity`: the memory across item types."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.text import Text

from homeport.cli._output import confirm_line, empty_line, inline_json, item_table, snippet, when
from homeport.cli.memory import Result, ToolCall, allow_secrets_option, memory_tool
from homeport.core.vocabulary import ITEM_TYPES, MAX_LINK_DEPTH, SEARCHABLE_TYPES

__all__ = ["activity", "history", "link", "links", "search"]

_ITEM_TYPE = click.Choice(ITEM_TYPES)
_SINCE_HELP = "ISO 8601 time, e.g. 2026-11-21T09:00:00Z."


@click.command()
@click.argument("source_type", type=_ITEM_TYPE)
@click.argument("source_id", type=int)
@click.argument("relationship")
@click.argument("target_type", type=_ITEM_TYPE)
@click.argument("target_id", type=int)
@click.option("--description", help="Why the two are linked.")
@allow_secrets_option
@memory_tool
def link(
    call: ToolCall,
    source_type: str,
    source_id: int,
    relationship: str,
    target_type: str,
    target_id: int,
    description: str | None,
) -> None:
    """Link two items with a relationship; contexts have id 1.

    \b
    Example: homeport link progress 4 implements decision 7
    """
    result = call.tool(
        "link_items",
        source_type=source_type,
        source_id=source_id,
        target_type=target_type,
        target_id=target_id,
        relationship=relationship,
        description=description,
    )
    call.show(
        result,
        lambda c, r: c.print(
            confirm_line(
                "linked" if r["created"] else "already linked",
                f"{r['source_type']} {r['source_id']} {r['relationship']} {r['target_type']} {r['target_id']}",
                f"(link {r['id']})",
            )
        ),
    )


@click.command()
@click.argument("item_type", metavar="TYPE", type=_ITEM_TYPE)
@click.argument("item_id", metavar="ID", type=int)
@click.option("--depth", default=1, show_default=True, type=click.IntRange(1, MAX_LINK_DEPTH), help="Hops to walk.")
@click.option("--relationship", help="Only links with this relationship.")
@click.option("--linked-type", type=_ITEM_TYPE, help="Only linked items of this type.")
@memory_tool
def links(
    call: ToolCall, item_type: str, item_id: int, depth: int, relationship: str | None, linked_type: str | None
) -> None:
    """Items linked to an item, both directions, nearest first.

    \b
    Example: homeport links decision 7 --depth 2
    """
    result = call.tool(
        "get_linked_items",
        item_type=item_type,
        item_id=item_id,
        relationship=relationship,
        linked_type=linked_type,
        depth=depth,
    )

    def render(console: Console, r: Result) -> None:
        if not r["items"]:
            return empty_line(console, f"items linked to {item_type} {item_id}")
        table = item_table("depth", "link", "item", "via")
        for item in r["items"]:
            arrow = f"{item['relationship']} ->" if item["direction"] == "outgoing" else f"<- {item['relationship']}"
            table.add_row(
                str(item["depth"]),
                Text(arrow),
                Text(f"{item['type']} {item['id']}", style="bold"),
                Text(f"{item['via']['type']} {item['via']['id']}", style="dim"),
            )
        console.print(table)

    call.show(result, render)


@click.command()
@click.argument("query")
@click.option(
    "--type",
    "types",
    multiple=True,
    type=click.Choice(SEARCHABLE_TYPES),
    help="Only this item type (repeatable).",
)
@click.option("--tag", "tags_any", multiple=True, metavar="TAG", help="Only items with this tag (repeatable).")
@click.option("--category", help="Only custom data of this category (ProjectGlossary: the glossary).")
@click.option("--since", help=f"Only items changed since then; {_SINCE_HELP}")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 200))
@click.option(
    "--mode",
    type=click.Choice(["auto", "words", "semantic"]),
    default="auto",
    show_default=True,
    help="words: full text only; semantic: by meaning only (the semantic extra); auto: both, fused, where the "
    "daemon (or another owner) serves the search, and words only, said on stderr, where this command would "
    "load the model itself.",
)
@click.option(
    "--in",
    "workspaces",
    multiple=True,
    metavar="PATH",
    help="Also search this project (repeatable; read-only, checked as --workspace is); each hit names its project.",
)
@memory_tool
def search(
    call: ToolCall,
    query: str,
    types: tuple[str, ...],
    tags_any: tuple[str, ...],
    category: str | None,
    since: str | None,
    limit: int,
    mode: str,
    workspaces: tuple[str, ...],
) -> None:
    """Search every item type, best first, by words and (with the semantic extra) by meaning.

    FTS5 syntax works in word search ("exact phrase", prefix*, OR); anything else is searched as
    plain words.

    \b
    Example: homeport search "wal OR journal" --type decision
    """
    result = call.tool(
        "search",
        here=_words_unless_asked,
        query=query,
        types=list(types) or None,
        tags_any=list(tags_any) or None,
        category=category,
        since=since,
        limit=limit,
        mode=mode,
        workspaces=[str(Path(w).absolute()) for w in workspaces] or None,
    )

    def render(console: Console, r: Result) -> None:
        if r.get("note"):
            # Plain text: as markup, rich would take `homeport[semantic]` of the install hint for a style tag.
            console.print(r["note"], style="dim", soft_wrap=True, markup=False, highlight=False)
        if r.get("embedded_now"):
            console.print(
                f"embedded {r['embedded_now']} item(s) first (a running `homeport daemon` embeds as you write)",
                style="dim",
            )
        if r.get("not_yet_embedded"):
            missed = "not searched by meaning" if r.get("mode_used") == "semantic" else "only found by words"
            console.print(f"{r['not_yet_embedded']} item(s) not embedded yet: {missed}", style="dim")
        if not r["results"]:
            return empty_line(console, f"matches for {query!r}")
        across = "workspaces" in r
        table = item_table(*(("project",) if across else ()), "type", "id", "match", "updated")
        for hit in r["results"]:
            where = (Path(hit["workspace"]).name or hit["workspace"],) if across else ()
            table.add_row(*where, hit["type"], str(hit["id"]), snippet(hit), when(hit["updated_at"]))
        console.print(table)

    call.show(result, render)


def _words_unless_asked(arguments: dict[str, Any], runtime: Any) -> dict[str, Any]:
    """auto, served in this process: by words, said on stderr. Search by meaning would load its model here
    (about 2 s and 300 MB) for one query and exit; the daemon keeps it loaded, and --mode semantic asks for it.
    Without the extra or a model, auto is words anyway, and says why itself."""
    if arguments.get("mode") != "auto" or runtime.semantic.unavailable() is not None:
        return arguments
    click.echo(
        "homeport: searched by words only: search by meaning runs in `homeport daemon`, which keeps its model "
        "loaded (`homeport daemon start`); `--mode semantic` loads it for this command",
        err=True,
    )
    return {**arguments, "mode": "words"}


@click.command()
@click.argument("item_type", metavar="TYPE", type=_ITEM_TYPE)
@click.argument("item_id", metavar="[ID]", type=int, required=False)
@click.option("--limit", default=10, show_default=True, type=click.IntRange(1, 1000))
@click.option("--version", type=int, help="Only this version.")
@click.option("--before", help=f"Only versions changed before then; {_SINCE_HELP}")
@click.option("--after", help=f"Only versions changed after then; {_SINCE_HELP}")
@memory_tool
def history(
    call: ToolCall,
    item_type: str,
    item_id: int | None,
    limit: int,
    version: int | None,
    before: str | None,
    after: str | None,
) -> None:
    """Every version of an item, newest first: its exact text then, who wrote it, when, with which tool.

    TYPE is decision, progress, system_pattern, custom_data (give the item's ID), product_context or
    active_context (no ID). A deleted item keeps its history until `homeport purge`; bring a version
    back with `homeport restore TYPE ID VERSION`.

    \b
    Example: homeport history decision 7 --limit 3
    """
    result = call.tool(
        "get_item_history",
        item_type=item_type,
        item_id=item_id,
        limit=limit,
        version=version,
        before=before,
        after=after,
    )

    def render(console: Console, r: Result) -> None:
        if not r["versions"]:
            what = f"the {item_type.replace('_', ' ')}" if item_id is None else f"{item_type} {item_id}"
            return empty_line(console, f"versions of {what}")
        table = item_table("v", "changed", "written by", "content")
        for v in r["versions"]:
            text = (
                Text("deleted", style="red")
                if v.get("deleted")
                else Text(inline_json(v.get("content", v.get("fields"))))
            )
            table.add_row(str(v["version"]), when(v["changed_at"]), _writer(v["written_by"]), text)
        console.print(table)

    call.show(result, render)


def _writer(writer: dict[str, Any] | None) -> Text:
    """`ada`, then (dim) `claude-code 2.0` and `update_active_context` under it; "not recorded" for
    versions from before writers were recorded."""
    if writer is None:
        return Text("not recorded", style="dim")
    client = " ".join(x for x in (writer["client"], writer["client_version"]) if x)
    detail = "\n".join(x for x in (client, writer["tool"]) if x)
    return Text(writer["principal"]) + (Text("\n" + detail, style="dim") if detail else Text())


@click.command()
@click.option("--hours", type=click.FloatRange(min=0, min_open=True), help="Changes in the last HOURS (default 24).")
@click.option("--since", help=f"Changes since then; {_SINCE_HELP}")
@click.option("--limit", default=5, show_default=True, type=click.IntRange(1, 100), help="Items per type.")
@memory_tool
def activity(call: ToolCall, hours: float | None, since: str | None, limit: int) -> None:
    """What changed recently, across every item type: where to pick up work.

    \b
    Example: homeport activity --hours 8
    """
    result = call.tool("get_recent_activity", hours_ago=hours, since=since, limit_per_type=limit)

    def render(console: Console, r: Result) -> None:
        console.print(Text(f"changes since {when(r['since'])} UTC", style="dim"))
        rows = [(t, str(i["id"]), title(i), i["updated_at"]) for key, t, title in _ACTIVITY for i in r[key]]
        rows += [(c["item_type"], f"v{c['version']}", "", c["changed_at"]) for c in r["context_changes"]]
        if not rows:
            return empty_line(console, "changes")
        table = item_table("type", "id", "item", "updated")
        for item_type, item_id, title, stamp in sorted(rows, key=lambda row: row[3], reverse=True):
            table.add_row(item_type, item_id, Text(title), when(stamp))
        console.print(table)
        more = {k: n for k, n in r["counts"].items() if n > len(r[k])}
        if more:
            console.print(
                Text("more: " + ", ".join(f"{k} {n}" for k, n in more.items()) + "; raise --limit", style="dim")
            )

    call.show(result, render)


_ACTIVITY = (
    ("decisions", "decision", lambda i: i["summary"]),
    ("progress", "progress", lambda i: f"[{i['status']}] {i['description']}"),
    ("system_patterns", "system_pattern", lambda i: i["name"]),
    ("custom_data", "custom_data", lambda i: f"{i['category']} / {i['key']}"),
)
