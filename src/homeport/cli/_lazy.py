"""A command group that imports a command's module on first use (click's lazy subcommands pattern).

Each command's module brings what it runs (the MCP SDK, SQLAlchemy, the tool models...); a
group that imported them all would make `homeport --version` pay for every command. The
group keeps each command's one-line help itself, so `homeport --help` and shell completion
list every command without importing one.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, NamedTuple

import click
from click.shell_completion import CompletionItem

__all__ = ["HelpfulGroup", "LazyCommand", "LazyGroup"]


class LazyCommand(NamedTuple):
    """Where a command lives (`"module:attribute"`) and its one line for `--help`."""

    target: str
    short_help: str


class HelpfulGroup(click.Group):
    """A group that answers a mistyped command with the nearest of its own, or else with all of them.

    click's own answer is "No such command 'x'." (with a suggestion only among the commands it has
    already imported); `homeport decision list` deserves "Did you mean 'decisions'?", and
    `homeport decisions log` the three commands there are. Every group of the CLI is one
    (tests/cli/test_cli_errors.py walks the tree).
    """

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0]
        if not ctx.resilient_parsing and not name.startswith("-") and not self._has(ctx, name):
            ctx.fail(self.no_such_command(ctx, name))
        return super().resolve_command(ctx, args)

    def _has(self, ctx: click.Context, name: str) -> bool:
        names = self.list_commands(ctx)
        normalize = ctx.token_normalize_func
        return name in names or (normalize is not None and normalize(name) in names)

    def no_such_command(self, ctx: click.Context, name: str) -> str:
        import difflib  # only on this error's path

        names = [n for n in self.list_commands(ctx) if not getattr(self.commands.get(n), "hidden", False)]
        near = difflib.get_close_matches(name, names)
        if near:
            return f"No such command {name!r}. Did you mean {' or '.join(repr(n) for n in near)}?"
        return (
            f"No such command {name!r}. The commands of {ctx.command_path} are {', '.join(names)}; "
            f"`{ctx.command_path} --help` says what each does."
        )


class LazyGroup(HelpfulGroup):
    """A `click.Group` whose `lazy_commands` are imported when they are run or asked for help."""

    def __init__(self, *args: Any, lazy_commands: Mapping[str, LazyCommand] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands or cmd_name not in self.lazy_commands:
            return super().get_command(ctx, cmd_name)
        return self.load(cmd_name)

    def load(self, cmd_name: str) -> click.Command:
        """Import the command `cmd_name` and check that it is one, under that name.

        Raises:
            TypeError: the table names something that is not a click command of that name.
        """
        module_name, _, attribute = self.lazy_commands[cmd_name].target.partition(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command) or command.name != cmd_name:
            raise TypeError(f"{module_name}:{attribute} is not the click command {cmd_name!r}")
        return command

    def help_line(self, ctx: click.Context, cmd_name: str, limit: int = 45) -> str | None:
        """A command's line in `--help`: from the table when lazy, else from the command; None when hidden."""
        if cmd_name in self.lazy_commands and cmd_name not in self.commands:
            return self.lazy_commands[cmd_name].short_help
        command = super().get_command(ctx, cmd_name)
        return None if command is None or command.hidden else command.get_short_help_str(limit)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = [(n, h) for n in names if (h := self.help_line(ctx, n, limit)) is not None]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        items = [
            CompletionItem(n, help=h)
            for n in self.list_commands(ctx)
            if n.startswith(incomplete) and (h := self.help_line(ctx, n)) is not None
        ]
        # The options of the group itself, as click.Command completes them.
        items.extend(click.Command.shell_complete(self, ctx, incomplete))
        return items
