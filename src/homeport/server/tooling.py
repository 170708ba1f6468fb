"""What every tool shares: the workspace parameter, annotations, and one way to run a call."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import InputRequiredResult, ToolAnnotations
from pydantic import Field

from homeport.errors import HomeportError
from homeport.server.request import call_inputs, fetch_roots, root_uris
from homeport.server.runtime import Runtime, tool_result
from homeport.workspace import Workspace

__all__ = [
    "DELETE",
    "READ",
    "WRITE",
    "WRITE_IDEMPOTENT",
    "Reply",
    "WorkspaceArg",
    "run_blocking",
    "run_in_workspace",
    "tool_error",
    "workspace_runner",
]

T = TypeVar("T")

WorkspaceArg = Annotated[
    str | None,
    Field(description="Project: absolute path, file:// URI or use_workspace handle. Omit when already set."),
]

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
WRITE_IDEMPOTENT = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
DELETE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)

# What a tool returns: its result, or (2026-07-28, roots needed) the question for the client's roots.
# The SDK leaves InputRequiredResult out of the output schema and passes it through unchanged.
Reply = dict[str, Any] | InputRequiredResult


def tool_error(exc: HomeportError) -> ToolError:
    return ToolError(f"{exc.message} [{exc.code}]")


async def run_in_workspace(
    runtime: Runtime,
    ctx: Context,
    workspace: str | None,
    *,
    write: bool,
    work: Callable[..., T],
    with_root: bool = False,
    create: bool | None = None,
) -> tuple[Workspace, T] | InputRequiredResult:
    """Resolve the call's workspace and run `work(store)` (or `work(store, root)`).

    The client's roots are fetched only when no higher source named the workspace; on 2026-07-28
    that returns the InputRequiredResult asking for them. Reads get None for a workspace without a
    store (nothing is created by reading); writes create the store on first use unless `create`
    says otherwise (export writes files, not the store).
    """
    inputs = call_inputs(ctx, workspace)
    if runtime.resolver.needs_roots(inputs):
        roots = await fetch_roots(ctx)
        if isinstance(roots, InputRequiredResult):
            return roots
        inputs = dataclasses.replace(inputs, roots=root_uris(roots))

    def resolve_and_work() -> tuple[Workspace, T]:
        resolved = runtime.resolve(inputs, write=write)
        store = runtime.store_for(resolved, write=write, create=create)
        return resolved, (work(store, resolved.root) if with_root else work(store))

    try:
        return await run_blocking(runtime, resolve_and_work)
    except HomeportError as exc:
        raise tool_error(exc) from exc


async def run_blocking(runtime: Runtime, fn: Callable[[], T]) -> T:
    """Run file-system and database work for a tool.

    Over HTTP on a worker thread, so a slow call never stalls other clients. Over stdio inline: the
    process has one client and its event loop nothing else to do, and the thread hop would cost more
    than most reads.
    """
    if runtime.settings.transport == "http":
        return await anyio.to_thread.run_sync(fn)
    return fn()


def workspace_runner(runtime: Runtime) -> Callable[..., Awaitable[Reply]]:
    """`await run(ctx, workspace, write, work, key=None, with_root=False)`: the result, with `workspace`.

    A dict result is returned as is (plus `workspace`); anything else is put under `key`.
    """

    async def run(
        ctx: Context,
        workspace: str | None,
        write: bool,
        work: Callable[..., Any],
        key: str | None = None,
        with_root: bool = False,
        create: bool | None = None,
    ) -> Reply:
        outcome = await run_in_workspace(
            runtime, ctx, workspace, write=write, work=work, with_root=with_root, create=create
        )
        if isinstance(outcome, InputRequiredResult):
            return outcome
        ws, result = outcome
        return tool_result(ws, result, key)

    return run
