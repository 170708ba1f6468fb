"""The declared tools as MCP tools: one binding for all of them.

Each `ToolSpec` becomes an SDK `Tool` whose input schema is the spec's parameters (plus the
`workspace` argument where the tool resolves one) with `additionalProperties: false`, and whose
body hands the client's arguments, as sent, to the pipeline (`StrictTool.run`): its first step
validates them against the same schema for every adapter, and refuses arguments a tool does not
have before anything runs (a misnamed workspace argument must never fall through to a default
workspace). Every `HomeportError` becomes an `isError` result here, in one place: its text is the
message and `[code]`, its structured content `{"error": {"code", "message"}}`.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import Field

from homeport.core.catalog import ToolSpec
from homeport.core.pipeline import CallPipeline
from homeport.core.runtime import Runtime
from homeport.errors import HomeportError, InternalError, InvalidArgumentError
from homeport.server.request import McpRequest

__all__ = ["MAX_ARGUMENT_DEPTH", "Reply", "StrictTool", "build_tools", "error_result", "too_deep_error"]

logger = logging.getLogger("homeport")
# What a tool returns: its result, or (2026-07-28, roots needed) the question for the client's roots.
# The SDK leaves InputRequiredResult out of the output schema and passes it through unchanged.
Reply = dict[str, Any] | InputRequiredResult


class StrictTool(Tool):
    """An SDK tool whose arguments the pipeline validates, as it does the shell's and the dashboard's.

    The SDK would validate them first with a model of its own and drop arguments a tool does not
    declare; the pipeline refuses those, and one validation per call is enough.
    """

    call: Callable[[Any, dict[str, Any]], Awaitable[Any]] | None = Field(default=None, exclude=True)

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        assert self.call is not None, "a StrictTool is made by build_tools"
        too_deep = _too_deep(arguments)
        if too_deep is not None:
            return error_result(too_deep_error(self.name, *too_deep))
        result = await self.call(context, arguments)
        return self.fn_metadata.convert_result(result) if convert_result else result


# How deeply a tool's argument may nest lists and objects. Memory holds documents, not deep trees, and
# the SDK cannot serialize a result much deeper than 250 levels: a call nested 300 levels that reached a
# tool over 2026-07-28 HTTP (parsed by Python's json, which allows about 1,000) wrote its value and then
# failed as "Error executing tool". stdio and 2025-era HTTP refuse about 200 levels as a parse error.
MAX_ARGUMENT_DEPTH = 64


def _too_deep(arguments: dict[str, Any]) -> tuple[str, int] | None:
    """The first argument nesting lists or objects deeper than MAX_ARGUMENT_DEPTH, and how deep (no
    recursion: the value may be nested about 1,000 levels), or None."""
    for name, value in arguments.items():
        deepest = 0
        stack: list[tuple[Any, int]] = [(value, 0)]
        while stack:
            item, depth = stack.pop()
            if isinstance(item, dict):
                children: Iterable[Any] = item.values()
            elif isinstance(item, list):
                children = item
            else:
                continue
            deepest = max(deepest, depth + 1)
            stack.extend((child, depth + 1) for child in children)
        if deepest > MAX_ARGUMENT_DEPTH:
            return name, deepest
    return None


def too_deep_error(tool: str, argument: str, depth: int) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"{tool}: `{argument}` nests lists or objects {depth} levels deep; the limit is {MAX_ARGUMENT_DEPTH} "
        "levels. Nothing was done: flatten the value, or store the deep part as a JSON string"
    )


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
    async def call(ctx: Context, arguments: dict[str, Any]) -> Any:
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

    def entry(ctx: Context, **arguments: Any) -> Any:  # its signature is the input schema; `call` runs
        raise AssertionError("StrictTool.run calls the pipeline")

    params = [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
    params += [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in spec.arguments]
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
    assert isinstance(tool, StrictTool)
    tool.call = call
    return tool
