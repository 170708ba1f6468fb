"""`homeport`: the command group."""

from __future__ import annotations

import click

from homeport import __version__
from homeport.cli.access import directory, tokens
from homeport.cli.doctor import doctor
from homeport.cli.hooks import hooks
from homeport.cli.importers import import_from
from homeport.cli.memory_data import context, data, glossary
from homeport.cli.memory_graph import activity, history, link, links, search
from homeport.cli.memory_items import decisions, patterns, progress
from homeport.cli.memory_transfer import batch, export, import_, schema
from homeport.cli.ownership import status
from homeport.cli.serve import serve
from homeport.cli.where import where

__all__ = ["cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="homeport")
def cli() -> None:
    """Homeport: project memory for AI coding agents, one workspace per project.

    Start it from your MCP client with `homeport serve` (stdio), or run one server for many
    projects with `homeport serve --http`. `homeport where` shows which workspace a call from
    here would use, and why.
    """


cli.add_command(serve)
cli.add_command(where)
cli.add_command(status)
cli.add_command(decisions)
cli.add_command(progress)
cli.add_command(patterns)
cli.add_command(data)
cli.add_command(glossary)
cli.add_command(context)
cli.add_command(link)
cli.add_command(links)
cli.add_command(search)
cli.add_command(history)
cli.add_command(activity)
cli.add_command(export)
cli.add_command(import_)
cli.add_command(import_from)
cli.add_command(batch)
cli.add_command(schema)
cli.add_command(directory)
cli.add_command(tokens)
cli.add_command(hooks)
cli.add_command(doctor)


def main() -> None:
    cli(prog_name="homeport")
