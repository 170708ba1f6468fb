"""Workspace tools: pick a workspace for later calls, and ask where a call lands and why."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from homeport.core.catalog import CATALOG, READ, SESSION, Needs
from homeport.core.pipeline import Call
from homeport.core.tools.sync import sync_report
from homeport.errors import HomeportError
from homeport.store import store_path_for
from homeport.workspace import Workspace
from homeport.workspace.project import project_key

__all__ = ["use_workspace", "where_am_i"]


@CATALOG.tool(
    "workspace",
    SESSION,
    "Choose the project for later calls. Returns a handle to pass as `workspace`; on clients with "
    "sessions (2025-era) it also becomes this session's default.",
    needs=Needs.WORKSPACE,
)
def use_workspace(
    call: Call, workspace: Annotated[str, Field(description="The project's absolute path or file:// URI.")]
) -> dict[str, Any]:
    ws = call.workspace
    assert ws is not None
    if ws.logical_key is not None:  # the handle and the session default name the key, not its store's directory
        return {
            "handle": call.runtime.handles.mint(call.request.principal, Path(ws.logical_key)),
            "key": ws.logical_key,
            "bound_to_session": call.request.bind_session(ws.logical_key),
        }
    handle = call.runtime.handles.mint(call.request.principal, ws.root, ws.client_roots)
    return {
        "handle": handle,
        "root": str(ws.root),
        "store": _store_report(call, ws)["store"],
        "bound_to_session": call.request.bind_session(str(ws.root)),
    }


@CATALOG.tool(
    "workspace",
    READ,
    "Say which workspace a call would use, from which source and why, what every source saw, the "
    "store path, transport and protocol version. Call this first when unsure where memory goes.",
    needs=Needs.WORKSPACE,
    report_unresolved=True,
)
def where_am_i(call: Call) -> dict[str, Any]:
    runtime, inputs = call.runtime, call.inputs
    assert inputs is not None
    remote = runtime.settings.transport == "http"
    report: dict[str, Any] = {
        "transport": runtime.settings.transport,
        **call.request.describe(),
        "principal": call.request.principal,
        "declared_roots": list(inputs.roots) if inputs.roots is not None else None,
        "roots_note": inputs.roots_note or None,
        # An HTTP caller is told nothing of the server's own directory or environment.
        "sources": [s.describe() for s in runtime.resolver.observe(inputs) if not (remote and s.hidden_remotely)],
        "allowed_roots": [str(p) for p in runtime.resolver.settings.guard.allow_roots],
    }
    if call.workspace is None:
        assert call.error is not None
        return {**report, "workspace": None, "error": f"{call.error.message} [{call.error.code}]"}
    ws = call.workspace
    if ws.logical_key is not None:
        return {
            **report,
            "workspace": ws.describe(),
            "source": ws.source.value,
            "why": ws.reason,
            "project_key": ws.logical_key,
            "project_key_source": "logical",
            **_store_report(call, ws),
            "served_by": _this_process(),
        }
    # This process, or the live instance that owns the workspace and answers its other tools.
    served_by = runtime.forwarder.served_by(ws.root) if runtime.forwarder else _this_process()
    return {
        **report,
        "workspace": ws.describe(),
        "root": str(ws.root),
        "source": ws.source.value,
        "why": ws.reason,
        **_store_report(call, ws),
        # Only the process that serves the workspace opens its store: an owner's is the owner's alone.
        **(sync_report(call, ws) if served_by.get("process") == "this" else {}),
        "served_by": served_by,
        **_identity(call, ws),
    }


def _store_report(call: Call, ws: Workspace) -> dict[str, Any]:
    """Where the workspace's memory is kept: its SQLite file, or its key in the shared PostgreSQL store
    (the URL without its password), and whether it holds memory yet."""
    postgres = call.runtime.stores.postgres
    if postgres is None:
        path = store_path_for(ws.root)
        return {"store_kind": "sqlite", "store": str(path), "store_exists": path.exists()}
    from homeport.store.postgres import shown_url

    report: dict[str, Any] = {"store_kind": "postgresql", "store": f"{shown_url(postgres.url)} (workspace {ws.key})"}
    try:
        report["store_exists"] = call.runtime.store_for(ws, write=False) is not None
    except HomeportError as exc:  # unreachable, or a copy still filling it: say so, the rest still answers
        report["store_exists"] = None
        report["store_error"] = f"{exc.message} [{exc.code}]"
    return report


def _identity(call: Call, ws: Workspace) -> dict[str, Any]:
    """The project's key, where it came from, the team server its memory calls go to, and (`trust`) one
    its config names that waits for this user's trust."""
    try:
        found = project_key(ws.root).describe()
    except HomeportError as exc:
        found = {"project_key": None, "project_key_source": "error", "project_key_detail": exc.message}
    team = call.runtime.team
    if team is None:
        return found
    try:
        route = team.route(ws.root)
        waiting = team.waiting(ws.root)
    except HomeportError as exc:
        return {**found, "team": {"error": f"{exc.message} [{exc.code}]"}, "trust": None}
    # A team server the repository names that this user has not trusted: what waits, and the command.
    trust = waiting.describe() if waiting is not None else {"status": "trusted"} if route is not None else None
    return {**found, "team": route.describe() if route is not None else None, "trust": trust}


def _this_process() -> dict[str, Any]:
    return {"process": "this", "pid": os.getpid()}
