"""The MCP and HTTP binding: the SDK server, request context, stdio, the HTTP app.

Names load on first use (PEP 562): `homeport.core.settings` alone must not pull in the MCP
SDK, Starlette and the tool models, so that a CLI command loads only what it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from homeport._lazy import lazy_names

if TYPE_CHECKING:
    from homeport.server.app import TOOL_GROUPS, build_http_app, build_server, parse_tool_groups

__all__ = [
    "TOOL_GROUPS",
    "build_http_app",
    "build_server",
    "parse_tool_groups",
]

_HOME = {
    "TOOL_GROUPS": "homeport.server.app",
    "build_http_app": "homeport.server.app",
    "build_server": "homeport.server.app",
    "parse_tool_groups": "homeport.server.app",
}


__getattr__, __dir__ = lazy_names(__name__, _HOME, __all__)
