"""The MCP composition root: request context, tool groups, the HTTP app.

Names load on first use (PEP 562): `homeport.server.settings` alone must not pull in the MCP
SDK, Starlette and the tool models, so that a CLI command loads only what it runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    try:
        module = _HOME[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
