"""`homeport sync`: share the memory through the project's git remote, with no server."""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.text import Text

from homeport.cli._output import confirm_line
from homeport.cli.memory import Result, ToolCall, memory_tool

__all__ = ["sync"]

DEFAULT_REF = "refs/homeport/memory"  # homeport.sync.DEFAULT_REF, named here so --help loads nothing of it


@click.command()
@click.option("--remote", default="origin", show_default=True, help="The git remote to share with (a name or URL).")
@click.option("--ref", default=DEFAULT_REF, show_default=True, help="The ref that holds the memory.")
@click.option("--local", "local_only", is_flag=True, help="Commit the memory to the ref; fetch and push nothing.")
@click.option(
    "--conflicts", "show_conflicts", is_flag=True, help="List the concurrent edits syncs settled; sync nothing."
)
@click.option(
    "--resolve", is_flag=True, help="With --conflicts: mark them as looked at (their values stay in history)."
)
@memory_tool
def sync(call: ToolCall, remote: str, ref: str, local_only: bool, show_conflicts: bool, resolve: bool) -> None:
    """Share the memory through git: export it to a hidden ref, fetch, merge, push.

    The memory is kept as one JSON file per item on REF (never in the work tree, the index or
    `git status`). Two people who both edited one field keep the newer edit; the other stays in the
    item's history and is listed as a conflict. An item holding a secret stops the sync, named.
    A team runs these three in each clone: share now, sync after every commit and pull, and see the
    concurrent edits that were settled.

    \b
    Example: homeport sync
             homeport hooks install git
             homeport sync --conflicts
    """
    if resolve:
        if not show_conflicts:
            raise click.UsageError("--resolve goes with --conflicts: homeport sync --conflicts --resolve")
        done = call.tool("resolve_sync_conflicts")
        call.show(done, lambda console, r: console.print(confirm_line("resolved", f"{r['resolved']} conflict(s)")))
        return
    if show_conflicts:
        result = call.tool("sync_conflicts")

        def render_conflicts(console: Console, r: Result) -> None:
            console.print(confirm_line("conflicts", f"{r['count']} concurrent edit(s)", "settled by syncs"))
            for c in r["items"]:
                lost = json.dumps(c["lost_value"], ensure_ascii=False)
                lost = lost if len(lost) <= 80 else lost[:77] + "..."
                console.print(Text(f"{c['item_type']} {c['item_id']} {c['field']}: kept the newer value; lost {lost}"))

        call.show(result, render_conflicts)
        return
    result = call.tool("sync", remote="" if local_only else remote, ref=ref)

    def render(console: Console, r: Result) -> None:
        what = "pushed" if r["pushed"] else "up to date" if r["remote"] else "committed locally"
        console.print(
            confirm_line("synced", f"{r['exported']} file(s) out, {r['received']} in", f"{what}: {r['remote_ref']}")
        )
        if r.get("fallback"):
            console.print(
                Text(f"the remote refused {r['ref']} ({r['fallback']}); used the branch instead", style="dim")
            )
        for c in r["conflicts"]:
            console.print(Text(f"conflict: {c['item_type']} {c['item_id']} {c['field']}: the newer edit was kept"))
        if r.get("open_conflicts"):
            console.print(
                Text(f"{r['open_conflicts']} conflict(s) to look at: homeport sync --conflicts", style="bold")
            )
        for s in r["skipped"]:
            console.print(Text(f"skipped: {s}", style="dim"))

    call.show(result, render)
