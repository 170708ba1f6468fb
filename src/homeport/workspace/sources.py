"""The places a workspace can come from, in the order they are tried (docs/architecture.md)."""

from __future__ import annotations

import enum

__all__ = ["EXPLICIT_SOURCES", "Source"]


class Source(enum.StrEnum):
    """Where the winning candidate came from; the value is what every tool result reports."""

    ARGUMENT = "argument"
    HEADER = "header"
    QUERY = "query"
    SESSION = "session"
    CONFIG = "config"
    ROOTS = "roots"
    CLIENT_ENV = "client_env"
    CWD = "cwd"


# Sources a caller chose on purpose; `--require-explicit-workspace` accepts only these for writes.
EXPLICIT_SOURCES = frozenset({Source.ARGUMENT, Source.HEADER, Source.QUERY, Source.SESSION, Source.CONFIG})
