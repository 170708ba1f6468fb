"""`homeport`: the command group."""

from __future__ import annotations

import click

from homeport import __version__
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


def main() -> None:
    cli(prog_name="homeport")
