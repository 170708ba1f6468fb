"""The one call path, free of any transport: tool declarations, the pipeline, the runtime.

MCP (homeport.server), the shell (homeport.cli) and the dashboard (homeport.ui) are adapters over
this package: each turns its own request into a tool name and arguments and hands them to
`core.pipeline`. Nothing here imports `mcp`, Starlette, uvicorn or an adapter
(tests/test_architecture.py). Names load on first use (PEP 562), so that `homeport.core.settings`
alone stays cheap for the shell.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from homeport._lazy import lazy_names

if TYPE_CHECKING:
    from homeport.core.runtime import Runtime, build_runtime
    from homeport.core.settings import ServeSettings

__all__ = ["Runtime", "ServeSettings", "build_runtime"]

_HOME = {
    "Runtime": "homeport.core.runtime",
    "build_runtime": "homeport.core.runtime",
    "ServeSettings": "homeport.core.settings",
}


__getattr__, __dir__ = lazy_names(__name__, _HOME, __all__)
