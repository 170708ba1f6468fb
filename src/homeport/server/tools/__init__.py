"""The tools, one module per group; importing this package declares them all in `CATALOG`, in order."""

from homeport.server.tools import database, files, knowledge, memory, workspace  # noqa: F401  (declarations)

__all__: list[str] = []
