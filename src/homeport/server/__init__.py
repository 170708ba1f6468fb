"""The MCP composition root: request context, tool groups, the HTTP app.

Names load on first use (PEP 562): `homeport.server.settings` alone must not pull in the MCP
SDK, Starlette and the tool models, so that a CLI command loads only what it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from homeport._lazy import lazy_names

if TYPE_CHECKING:
    from homeport.server.app import TOOL_GROUPS, build_http_app, build_server, parse_tool_groups
    from homeport.server.runtime import Runtime, build_runtime
    from homeport.server.settings import ServeSettings

__all__ = [
    "TOOL_GROUPS",
    "Runtime",
    "ServeSettings",
    "build_http_app",
    "build_runtime",
    "build_server",
    "parse_tool_groups",
]

_HOME = {
    "TOOL_GROUPS": "homeport.server.app",
    "build_http_app": "homeport.server.app",
    "build_server": "homeport.server.app",
    "parse_tool_groups": "homeport.server.app",
    "Runtime": "homeport.server.runtime",
    "build_runtime": "homeport.server.runtime",
    "ServeSettings": "homeport.server.settings",
}


__getattr__, __dir__ = lazy_names(__name__, _HOME, __all__)
