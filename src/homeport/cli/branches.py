"""`homeport promote BRANCH`, and the line every list prints when it left out other branches' items."""

from __future__ import annotations

import click
from rich.console import Console

from homeport.cli._output import confirm_line
from homeport.cli.memory import Result, ToolCall, memory_tool

__all__ = ["promote"]


@click.command()
@click.argument("branch")
@memory_tool
def promote(call: ToolCall, branch: str) -> None:
    """Show BRANCH's decisions and system patterns on every branch, as if it were merged.

    Decisions and patterns written on a branch other than the default branch are seen only where
    that branch's commits are, until it is merged into the default branch. Homeport finds merges
    itself (ancestry, and patch-ids for squash and rebase merges); promote what git cannot show,
    such as a branch a forge merged and deleted before this clone fetched it. Lists name hidden
    branches at their end.

    \b
    Example: homeport promote feat/retry
    """
    result = call.tool("promote_branch", branch=branch)

    def render(console: Console, r: Result) -> None:
        detail = f"{r['decisions']} decision(s), {r['system_patterns']} pattern(s) now seen on every branch"
        console.print(confirm_line("promoted", f"branch {r['branch']}", detail))

    call.show(result, render)
