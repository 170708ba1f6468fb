"""`homeport`: the command group.

Commands are imported when they run, so `homeport --version` loads click and nothing of the
server. To add a command: write it in its own module under `homeport.cli` and add one row to
`COMMANDS` below (name, `"module:attribute"`, the one line `homeport --help` shows).
`tests/test_cli_lazy.py` checks that every row imports the command it names.
"""

from __future__ import annotations

import click

from homeport import __version__
from homeport.cli._lazy import LazyCommand, LazyGroup

__all__ = ["COMMANDS", "cli", "main"]

COMMANDS: dict[str, LazyCommand] = {
    "serve": LazyCommand("homeport.cli.serve:serve", "Run the MCP server (stdio, or --http)."),
    "ui": LazyCommand("homeport.cli.dashboard:ui", "Open the dashboard of this project's memory in a browser."),
    "where": LazyCommand("homeport.cli.where:where", "Show the workspace a call from here would use, and why."),
    "status": LazyCommand("homeport.cli.ownership:status", "List the running Homeport instances and what they own."),
    "daemon": LazyCommand("homeport.cli.daemon:daemon", "Run one background Homeport per user on a unix socket."),
    "decisions": LazyCommand("homeport.cli.memory_items:decisions", "Decisions: what was decided, why, and how."),
    "progress": LazyCommand("homeport.cli.memory_items:progress", "Progress: tasks with a status, nested by parent."),
    "patterns": LazyCommand("homeport.cli.memory_items:patterns", "System patterns: reusable ways the project works."),
    "data": LazyCommand("homeport.cli.memory_data:data", "Custom data: any JSON value under a category and key."),
    "glossary": LazyCommand("homeport.cli.memory_data:glossary", "The project glossary: terms and definitions."),
    "context": LazyCommand(
        "homeport.cli.memory_data:context", "Product and active context; --task for a task's context."
    ),
    "link": LazyCommand("homeport.cli.memory_graph:link", "Link two items with a relationship."),
    "links": LazyCommand("homeport.cli.memory_graph:links", "Items linked to an item, nearest first."),
    "search": LazyCommand("homeport.cli.memory_graph:search", "Search every item type, by words and meaning."),
    "ready": LazyCommand("homeport.cli.ready:ready", "Progress entries with no open blocker: what to work on now."),
    "history": LazyCommand("homeport.cli.memory_graph:history", "Every version of an item: who wrote what, when."),
    "restore": LazyCommand("homeport.cli.memory_versions:restore", "Bring back an earlier version of an item."),
    "purge": LazyCommand("homeport.cli.memory_versions:purge", "Erase every version of a deleted item."),
    "promote": LazyCommand("homeport.cli.branches:promote", "Show a branch's decisions on every branch."),
    "tidy": LazyCommand("homeport.cli.tidy:tidy", "Propose, apply and revert a cleanup of the memory."),
    "verify": LazyCommand("homeport.cli.verify:verify", "Check items' citations to code; exit 1 when any is stale."),
    "confirm": LazyCommand("homeport.cli.verify:confirm", "Record a re-check of an item's citations; re-anchor them."),
    "activity": LazyCommand("homeport.cli.memory_graph:activity", "What changed recently, across every item type."),
    "export": LazyCommand("homeport.cli.memory_transfer:export", "Write the memory as files, one per item type."),
    "import": LazyCommand("homeport.cli.memory_transfer:import_", "Read an export back into the memory."),
    "sync": LazyCommand("homeport.cli.sync:sync", "Share the memory through the project's git remote."),
    "import-from": LazyCommand("homeport.cli.importers:import_from", "Import another memory server's data."),
    "batch": LazyCommand("homeport.cli.memory_transfer:batch", "Write many items of one type from a JSON list."),
    "schema": LazyCommand("homeport.cli.memory_transfer:schema", "The memory's item types, fields and tools."),
    "directory": LazyCommand("homeport.cli.access:directory", "Organizations, teams and agents for file areas."),
    "tokens": LazyCommand("homeport.cli.access:tokens", "Bearer tokens for `homeport serve --http --auth`."),
    "access": LazyCommand("homeport.cli.access_rules:access", "Explain who may use which workspace and tool."),
    "hooks": LazyCommand("homeport.cli.hooks:hooks", "Start an agent's session with the project's context."),
    "copy": LazyCommand("homeport.cli.copy:copy", "Copy one workspace's memory between SQLite and PostgreSQL."),
    "migrate": LazyCommand("homeport.cli.migrate:migrate", "Bring a store's schema to this version's revision."),
    "models": LazyCommand("homeport.cli.models:models", "The embedding model of search by meaning."),
    "setup": LazyCommand("homeport.cli.setup:setup", "Add Homeport to an MCP client's config for a project."),
    "doctor": LazyCommand("homeport.cli.doctor:doctor", "Check the install, workspace, store and client configs."),
    "trust": LazyCommand("homeport.cli.trust:trust", "Let this project's config send data off this machine."),
}


@click.group(
    cls=LazyGroup,
    lazy_commands=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="homeport")
def cli() -> None:
    """Homeport: project memory for AI coding agents, one workspace per project.

    Start it from your MCP client with `homeport serve` (stdio), or run one server for many
    projects with `homeport serve --http`. `homeport where` shows which workspace a call from
    here would use, and why. Shell completion: `eval "$(_HOMEPORT_COMPLETE=bash_source homeport)"`.
    """


def main() -> None:
    cli(prog_name="homeport")
