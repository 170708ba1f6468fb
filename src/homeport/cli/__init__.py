"""The `homeport` command: one module per command group; it composes settings and never decides."""

from homeport.cli.main import cli, main

__all__ = ["cli", "main"]
