"""`homeport context --task ... --budget N`: a task's context as Markdown, for people and session hooks.

It calls `get_context` through the same pipeline and resolver as the MCP tool (so a hook and the
server agree on the project) and prints the packed entries as Markdown, plain text with no
styling, ready to be injected into an agent's session; `--json` prints what the tool returns.
"""

from __future__ import annotations

import json
from typing import Any

import click

from homeport.cli.memory import ToolCall

__all__ = ["render_markdown", "show_task_context"]


def show_task_context(call: ToolCall, task: str, budget: int) -> None:
    """Run get_context for `task` within `budget` tokens and print it."""
    result = call.tool("get_context", task=task, budget_tokens=budget)
    if call.as_json:
        click.echo(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        click.echo(render_markdown(result), nl=False)


def render_markdown(result: dict[str, Any]) -> str:
    """The packed context as Markdown: contexts, then items, each headed by its type and id."""
    where = result.get("workspace", {})
    lines = [f"# Project memory for: {result['task']}", ""]
    if "team" in where:
        lines += [
            f"Project {where.get('key')} on the team server {where['team']} (Homeport; fetch more by type and id).",
            "",
        ]
    elif where:
        lines += [f"Workspace {where['root']} (Homeport; fetch more by type and id).", ""]
    for kind in ("product", "active"):
        entry = result.get(f"{kind}_context")
        if entry:
            clipped = ", clipped" if entry.get("clipped") else ""
            lines += [f"## {kind.capitalize()} context (version {entry['version']}{clipped})", "", entry["text"], ""]
    items = result["items"]
    if items:
        heading = "Relevant items" if items[0]["why"] == "match" else "Recent items (nothing matched the task)"
        lines += [f"## {heading}", ""]
        # Continuation lines indented, so an item of several lines stays one list item.
        lines += [f"- {item['type']} {item['id']}: " + item["text"].replace("\n", "\n  ") for item in items]
        lines.append("")
    if result["omitted"]:
        lines += [
            f"{result['omitted']} more matching item(s) did not fit in {result['budget_tokens']} tokens; "
            "search for them.",
            "",
        ]
    if len(lines) <= 4:
        lines += ["No memory recorded yet for this project.", ""]
    return "\n".join(lines)
