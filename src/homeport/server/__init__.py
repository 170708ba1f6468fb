"""The MCP composition root: request context, tool groups, the HTTP app."""

from homeport.server.app import build_http_app, build_server
from homeport.server.runtime import Runtime, build_runtime
from homeport.server.settings import ServeSettings

__all__ = ["Runtime", "ServeSettings", "build_http_app", "build_runtime", "build_server"]
