"""The declared tools as MCP tools: one binding for all of them.

Each `ToolSpec` becomes an SDK `Tool` whose input schema is the spec's parameters (plus the
`workspace` argument where the tool resolves one) with `additionalProperties: false`, and whose
body hands the call to the pipeline. Arguments a tool does not have are refused before anything
runs (`StrictTool.run`): a misnamed workspace argument must never fall through to a default
workspace. Every `HomeportError` becomes an `isError` result here, in one place: its text is the
message and `[code]`, its structured content `{"error": {"code", "message"}}`.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterable
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from homeport.core.catalog import ToolSpec, arguments_error
from homeport.core.pipeline import CallPipeline, unknown_arguments_error
from homeport.core.runtime import Runtime
from homeport.errors import HomeportError, InternalError
from homeport.server.request import McpRequest

__all__ = ["Reply", "StrictTool", "WorkspaceArg", "build_tools", "error_result"]

logger = logging.getLogger("homeport")

WorkspaceArg = Annotated[
    str | None,
    Field(description="Project: absolute path, file:// URI or use_workspace handle. Omit when already set."),
]
# What a tool returns: its result, or (2026-07-28, roots needed) the question for the client's roots.
# The SDK leaves InputRequiredResult out of the output schema and passes it through unchanged.
Reply = dict[str, Any] | InputRequiredResult


class StrictTool(Tool):
    """An SDK tool that refuses arguments it does not declare instead of dropping them."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        accepted = list(self.parameters.get("properties", {}))
        unknown = [name for name in arguments if name not in accepted]
        if unknown:
            return error_result(unknown_arguments_error(self.name, unknown, accepted))
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            # The SDK's own argument check (types, ranges, size caps): the same error, with its code, as
            # the pipeline's check gives, instead of pydantic's text with the rejected value echoed.
            if isinstance(exc.__cause__, ValidationError):
                return error_result(arguments_error(self.name, exc.__cause__))
            raise


def error_result(exc: HomeportError) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=f"{exc.message} [{exc.code}]")],
        structured_content={"error": {"code": exc.code, "message": exc.message}},
        is_error=True,
    )


def build_tools(specs: Iterable[ToolSpec], runtime: Runtime) -> list[Tool]:
    pipeline = CallPipeline(runtime)
    return [_bind(spec, pipeline, runtime) for spec in specs]


def _bind(spec: ToolSpec, pipeline: CallPipeline, runtime: Runtime) -> Tool:
    async def entry(ctx: Context, **arguments: Any) -> Any:
        runtime.counts.calls += 1
        try:
            return await pipeline.call(spec, arguments, McpRequest(ctx, runtime))
        except HomeportError as exc:
            runtime.counts.errors += 1
            return error_result(exc)
        except Exception as exc:  # a bug: the agent gets a code and a pointer, the log gets the traceback
            runtime.counts.errors += 1
            logger.exception("tool %s failed unexpectedly", spec.name)
            return error_result(
                InternalError(
                    f"{spec.name} failed on an unexpected {type(exc).__name__}; the server's log has the details "
                    "(please report it)"
                )
            )

    params = [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
    params += [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in spec.parameters]
    if spec.takes_workspace and "workspace" not in {p.name for p in spec.parameters}:
        params.append(
            inspect.Parameter("workspace", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=WorkspaceArg)
        )
    entry.__signature__ = inspect.Signature(params, return_annotation=Reply)  # type: ignore[attr-defined]
    entry.__annotations__ = {p.name: p.annotation for p in params} | {"return": Reply}
    entry.__name__ = entry.__qualname__ = spec.name
    hints = spec.hints
    tool = StrictTool.from_function(
        entry,
        name=spec.name,
        description=spec.description,
        annotations=ToolAnnotations(
            read_only_hint=hints.read_only,
            destructive_hint=hints.destructive,
            idempotent_hint=hints.idempotent,
            open_world_hint=False,
        ),
    )
    tool.parameters["additionalProperties"] = False
    return tool
