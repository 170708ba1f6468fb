"""The `homeport` command: one module per command group; it composes settings and never decides.

`main`, the console script, first offers a memory command to the running daemon's command runner
(`homeport.cli._thin`, which imports neither click nor the server) and imports the CLI only to run
the command in this process.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

# Not `typing.TYPE_CHECKING`: importing typing costs the thin path more than the rest of its imports.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from homeport.cli.main import cli

__all__ = ["cli", "main"]


def main() -> None:
    """`homeport`: through the daemon when it answers (`_thin`), else here."""
    from homeport.cli._thin import run_through_daemon

    code = run_through_daemon(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    _command_line().main()


def _command_line() -> ModuleType:
    """The module `homeport.cli.main`. Importing it makes the package's `main` that module (Python sets
    a package's attribute to each submodule imported), so the name is given back to the function."""
    module = importlib.import_module("homeport.cli.main")
    globals()["main"] = _entry
    return module


def __getattr__(name: str) -> object:
    if name == "cli":
        return _command_line().cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_entry = main
