"""`homeport data | glossary | context`: custom data, the glossary, and the two context documents."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.console import Console
from rich.json import JSON
from rich.text import Text

from homeport.cli._lazy import HelpfulGroup
from homeport.cli._output import confirm_line, empty_line, inline_json, item_table, when
from homeport.cli.memory import Result, ToolCall, allow_secrets_option, json_or_text, memory_tool, parse_json
from homeport.cli.task_context import show_task_context
from homeport.core.vocabulary import GLOSSARY_CATEGORY, MAX_TASK_BUDGET, MIN_TASK_BUDGET, ContextKind
from homeport.errors import ItemNotFoundError

__all__ = ["context", "data", "glossary"]

GLOSSARY = GLOSSARY_CATEGORY


# -- custom data -------------------------------------------------------------------------------


@click.group(cls=HelpfulGroup)
def data() -> None:
    """Custom data: any JSON value under a category and a key."""


@data.command("set")
@click.argument("category")
@click.argument("key")
@click.argument("value")
@allow_secrets_option
@memory_tool
def data_set(call: ToolCall, category: str, key: str, value: str) -> None:
    """Store VALUE under CATEGORY and KEY, replacing what was there.

    VALUE is read as JSON when it parses (42, true, [1, 2], '{"a": 1}'), else as text.

    \b
    Example: homeport data set limits max_upload '{"mb": 50}'
    """
    result = call.tool("log_custom_data", category=category, key=key, value=json_or_text(value))
    call.show(
        result, lambda c, r: c.print(confirm_line("set", f"{r['category']} / {r['key']}", inline_json(r["value"])))
    )


@data.command("get")
@click.argument("category", required=False)
@click.argument("key", required=False)
@memory_tool
def data_get(call: ToolCall, category: str | None, key: str | None) -> None:
    """Show custom data: everything, one CATEGORY, or one CATEGORY and KEY.

    \b
    Example: homeport data get limits
    """
    result = call.tool("get_custom_data", category=category, key=key)
    if key is not None and not result["items"]:
        # One key asked for is a lookup, not a listing: a missing one fails like `data delete` does.
        raise ItemNotFoundError(
            f"no custom data under category {category!r} and key {key!r}; list them with get_custom_data"
        )

    def render(console: Console, r: Result) -> None:
        if not r["items"]:
            return empty_line(console, "custom data")
        table = item_table("category", "key", "value", "updated")
        for item in r["items"]:
            table.add_row(
                Text(item["category"]),
                Text(item["key"], style="bold"),
                Text(inline_json(item["value"])),
                when(item["updated_at"]),
            )
        console.print(table)

    call.show(result, render)


@data.command("delete")
@click.argument("category")
@click.argument("key")
@memory_tool
def data_delete(call: ToolCall, category: str, key: str) -> None:
    """Delete the value under CATEGORY and KEY, with its links.

    \b
    Example: homeport data delete limits max_upload
    """
    result = call.tool("delete_custom_data", category=category, key=key)
    call.show(
        result, lambda c, r: c.print(confirm_line("deleted", f"{r['deleted']['category']} / {r['deleted']['key']}"))
    )


# -- glossary ----------------------------------------------------------------------------------


@click.group(
    cls=HelpfulGroup,
    help=f"The project glossary: custom data in the category {GLOSSARY}.\n\n"
    f"Search it with: homeport search WORDS --category {GLOSSARY}",
)
def glossary() -> None:
    pass


@glossary.command("set")
@click.argument("term")
@click.argument("definition")
@allow_secrets_option
@memory_tool
def glossary_set(call: ToolCall, term: str, definition: str) -> None:
    """Define TERM (replacing an earlier definition).

    \b
    Example: homeport glossary set workspace "The project directory a call is routed to"
    """
    result = call.tool("log_custom_data", category=GLOSSARY, key=term, value=definition)
    call.show(result, lambda c, r: c.print(confirm_line("defined", r["key"], inline_json(r["value"]))))


@glossary.command("list")
@memory_tool
def glossary_list(call: ToolCall) -> None:
    """List every term with its definition.

    \b
    Example: homeport glossary list
    """
    result = call.tool("get_custom_data", category=GLOSSARY)

    def render(console: Console, r: Result) -> None:
        if not r["items"]:
            return empty_line(console, "glossary terms")
        table = item_table("term", "definition")
        for item in r["items"]:
            table.add_row(Text(item["key"], style="bold"), Text(inline_json(item["value"])))
        console.print(table)

    call.show(result, render)


@glossary.command("delete")
@click.argument("term")
@memory_tool
def glossary_delete(call: ToolCall, term: str) -> None:
    """Delete TERM from the glossary.

    \b
    Example: homeport glossary delete workspace
    """
    result = call.tool("delete_custom_data", category=GLOSSARY, key=term)
    call.show(result, lambda c, r: c.print(confirm_line("deleted", r["deleted"]["key"])))


# -- product and active context ----------------------------------------------------------------

_KIND = click.argument("kind", type=click.Choice(["product", "active"]))


class _JsonObject(click.ParamType):  # type: ignore[type-arg]  # generic only in newer click stubs
    """A JSON object typed on the command line, or `-` to read it from standard input."""

    name = "JSON"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, dict):
            return value
        text = sys.stdin.read() if value == "-" else value
        try:
            return parse_json(text, what="JSON", expect=dict)
        except click.BadParameter as exc:
            self.fail(exc.message, param, ctx)


@click.group(cls=HelpfulGroup, invoke_without_command=True)
@click.option("--task", metavar="TEXT", help="Print the context for this task (what get_context returns), as Markdown.")
@click.option(
    "--budget",
    default=2000,
    show_default=True,
    type=click.IntRange(MIN_TASK_BUDGET, MAX_TASK_BUDGET),
    help="With --task: the most tokens the answer may take (estimated as UTF-8 bytes / 4).",
)
@memory_tool
def context(call: ToolCall, task: str | None, budget: int) -> None:
    """Product and active context: JSON documents, versioned; with --task, a task's whole context.

    The product context holds goals, features and architecture; the active context the current
    focus, recent changes and open questions. Every change keeps a version (see `homeport history`).

    \b
    Example: homeport context --task "add rate limiting to the upload API" --budget 1500
    """
    ctx = click.get_current_context()
    if ctx.invoked_subcommand is not None:
        if task is not None:
            raise click.UsageError("--task prints a task's context; use it without a subcommand")
        return
    if task is None:
        click.echo(ctx.get_help())
        return
    show_task_context(call, task, budget)


@context.command("show")
@_KIND
@memory_tool
def context_show(call: ToolCall, kind: ContextKind) -> None:
    """Show the product or active context.

    \b
    Example: homeport context show active
    """
    result = call.tool(f"get_{kind}_context")
    call.show(result, _render_context(kind))


@context.command("set")
@_KIND
@click.argument("content", metavar="JSON", type=_JsonObject())
@allow_secrets_option
@click.option("--allow-empty", is_flag=True, help="Allow {} to erase a non-empty document.")
@memory_tool
def context_set(call: ToolCall, kind: ContextKind, content: dict[str, Any], allow_empty: bool) -> None:
    """Replace the whole document with JSON (an object; `-` reads it from stdin).

    \b
    Example: homeport context set active '{"focus": "search", "open": ["ranking"]}'
    """
    extra: dict[str, Any] = {"allow_empty": True} if allow_empty else {}
    result = call.tool(f"update_{kind}_context", content=content, **extra)
    call.show(result, _render_context(kind))


@context.command("patch")
@_KIND
@click.argument("patch", metavar="JSON", type=_JsonObject())
@allow_secrets_option
@memory_tool
def context_patch(call: ToolCall, kind: ContextKind, patch: dict[str, Any]) -> None:
    """Merge the keys of JSON into the document; a key set to "__DELETE__" is removed.

    \b
    Example: homeport context patch active '{"focus": "export", "open": "__DELETE__"}'
    """
    result = call.tool(f"update_{kind}_context", patch=patch)
    call.show(result, _render_context(kind))


def _render_context(kind: str) -> Any:
    def render(console: Console, r: Result) -> None:
        if not r["version"]:
            return empty_line(console, f"{kind} context yet")
        console.print(Text(f"{kind} context, version {r['version']}, {when(r['updated_at'])}", style="bold"))
        console.print(JSON.from_data(r["content"], sort_keys=True))

    return render
