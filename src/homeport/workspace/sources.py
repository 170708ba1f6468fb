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

    @property
    def said(self) -> str:
        """The source as a message names it: what the person or agent reading it set or sent."""
        return _SAID[self]


_SAID = {
    Source.ARGUMENT: "the workspace argument",
    Source.HEADER: "the X-Workspace-Id header",
    Source.QUERY: "?project_path= on the URL",
    Source.SESSION: "the session's use_workspace",
    Source.CONFIG: "--workspace/HOMEPORT_WORKSPACE",
    Source.ROOTS: "the client's roots",
    Source.CLIENT_ENV: "the client's environment (CLAUDE_PROJECT_DIR or WORKSPACE_FOLDER_PATHS)",
    Source.CWD: "the current directory",
}


# Sources a caller chose on purpose; `--require-explicit-workspace` accepts only these for writes.
EXPLICIT_SOURCES = frozenset({Source.ARGUMENT, Source.HEADER, Source.QUERY, Source.SESSION, Source.CONFIG})
