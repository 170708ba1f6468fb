"""How the memory commands print for a terminal: compact tables, trees and one-line confirmations.

Every cell goes through `Text`, never markup, so a decision that says "[bold]" prints as written.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = [
    "STATUS_STYLES",
    "confirm_line",
    "empty_line",
    "hidden_line",
    "inline_json",
    "item_table",
    "snippet",
    "status",
    "tags",
    "when",
    "workspace_line",
]

STATUS_STYLES = {"TODO": "cyan", "IN_PROGRESS": "yellow", "DONE": "green", "BLOCKED": "red"}


def workspace_line(workspace: Mapping[str, str]) -> Text:
    """The first line of every memory command: which workspace, and the source that named it; for a team
    project, the team server and the project's key its memory was read or written under."""
    if "team" in workspace:
        return Text(f"team server {workspace['team']}, project {workspace.get('key', '-')}", style="dim")
    return Text(f"workspace {workspace['root']} (from {_said(workspace['source'])})", style="dim")


def _said(source: str) -> str:
    """A result's source in the words a person reading it set or sent (`cwd`: the current directory)."""
    from homeport.workspace.sources import Source

    try:
        return Source(source).said
    except ValueError:
        return source  # a newer owner or team server's source: as it came


def item_table(*columns: str) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    for name in columns:
        table.add_column(
            name,
            justify="right" if name in ("id", "v", "score") else "left",
            no_wrap=name in ("id", "v", "updated", "changed", "status", "type"),
        )
    return table


def confirm_line(verb: str, what: str, detail: str = "") -> Text:
    """`logged decision 7  Use SQLite WAL`: what a write did, in one line."""
    line = Text.assemble((verb, "green"), " ", (what, "bold"))
    if detail:
        line.append(f"  {detail}")
    return line


def empty_line(console: Console, what: str) -> None:
    console.print(Text(f"no {what}", style="dim"))


def when(stamp: str | None) -> str:
    """`2026-11-21T09:00:00.123456Z` -> `2026-11-21 09:00`: minutes are enough in a table."""
    return stamp[:16].replace("T", " ") if stamp else "-"


def tags(values: Iterable[str]) -> Text:
    return Text(", ".join(values), style="magenta")


def status(value: str) -> Text:
    return Text(value, style=STATUS_STYLES.get(value.upper(), "bold"))


def inline_json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def snippet(hit: Mapping[str, Any]) -> Text:
    """A search hit's snippet with its `matches` (spans of the snippet) shown as highlights."""
    text, out, last = hit["snippet"], Text(), 0
    for start, end in hit.get("matches") or ():
        out.append(text[last:start])
        out.append(text[start:end], style="bold yellow")
        last = end
    out.append(text[last:])
    return out


def hidden_line(result: dict[str, Any]) -> str:
    """`3 hidden, written on other branches: feat/retry (2), ...; homeport promote BRANCH shows them`."""
    named: dict[str, int] = {}
    for why in result.get("hidden_why") or ():
        name = why.get("branch") or "a detached HEAD"
        named[name] = named.get(name, 0) + int(why.get("count") or 0)
    branches = ", ".join(f"{name} ({count})" for name, count in named.items())
    total = result.get("hidden_on_other_branches")
    return (
        f"{total} hidden, written on branches not merged here: {branches}. "
        "`homeport promote BRANCH` shows a branch's items everywhere."
    )
