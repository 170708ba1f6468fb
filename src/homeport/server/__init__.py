"""The MCP composition root: request context, tool groups, the HTTP app."""

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
