"""Calls for a workspace that another live instance owns go to that instance, unchanged.

    front end: resolution, guards, access (as for a local call)
      -> the registry names a live owner for the workspace's root (not this process)
      -> tools/call on the owner over Streamable HTTP, the root in X-Workspace-Id,
         the owner's token when it has one; the owner resolves and guards again
      -> the owner's CallToolResult, returned as it came (errors included)

The registry is read again only when its file changes (a `stat` per call otherwise). The SDK
clients to the owners live on one background event loop (an anyio blocking portal), so the
stdio and HTTP servers share one pool and a client is opened once per owner and workspace, not
per call. An owner that stops answering fails that one call with `owner_unavailable`; its entry
is pruned and the next call for the workspace is served here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import anyio.to_thread
from anyio.from_thread import BlockingPortal, start_blocking_portal
from pydantic_core import to_jsonable_python

from homeport.errors import OwnerUnavailableError, RegistryError
from homeport.registry import InstanceRegistry, Owner, RegistryState, owner_for
from homeport.server.catalog import ToolSpec

__all__ = ["Forwarder", "forwards"]

FORWARD_CONNECT_SECONDS = 5.0
FORWARD_READ_SECONDS = 300.0  # a project-database query may take minutes


def forwards(spec: ToolSpec) -> bool:
    """Tools that act on a workspace go to its owner; the workspace tools describe this process's routing."""
    return spec.takes_workspace and spec.group != "workspace"


class Forwarder:
    def __init__(self, registry: InstanceRegistry) -> None:
        self.registry = registry
        self._lock = threading.Lock()
        self._seen: tuple[int, int] | None = None  # (mtime_ns, size) of the registry file last read
        self._state = RegistryState()
        self._portal_cm: AbstractContextManager[BlockingPortal] | None = None
        self._portal: BlockingPortal | None = None
        self._clients: dict[tuple[str, int, str], tuple[AbstractContextManager[Any], Any]] = {}

    # -- who owns what

    def owner_of(self, root: Path) -> tuple[str, Owner] | None:
        """The live instance other than this process that owns `root`, or None. Blocking (reads the file)."""
        state = self._current()
        found = owner_for(state, str(root))
        if found is None or found[1].pid == os.getpid():
            return None
        return found

    def anyone_else(self) -> bool:
        """Cheap: does the registry (as last read) name any owner besides this process?"""
        state = self._current()
        return any(o.pid != os.getpid() for o in state.owners.values())

    def served_by(self, root: Path) -> dict[str, Any]:
        """Who serves calls for `root`: this process, or the owner (for where_am_i)."""
        try:
            found = self.owner_of(root)
        except RegistryError:
            found = None
        if found is None:
            return {"process": "this", "pid": os.getpid()}
        owned, owner = found
        return {"process": "owner", "pid": owner.pid, "endpoint": owner.endpoint, "owns": owned}

    def _current(self) -> RegistryState:
        try:
            st = os.stat(self.registry.path)
        except FileNotFoundError:
            return RegistryState()
        except OSError:
            return self._state
        seen = (st.st_mtime_ns, st.st_size)
        if seen != self._seen:
            state = self.registry.read()  # prunes the dead under the lock (and so may change the file)
            with self._lock:
                self._state = state
                # Read after pruning: a prune rewrote the file, and that version is the one we hold.
                with contextlib.suppress(OSError):
                    st = os.stat(self.registry.path)
                    seen = (st.st_mtime_ns, st.st_size)
                self._seen = seen
        return self._state

    # -- the call

    async def forward(self, owned: str, owner: Owner, root: Path, tool: str, arguments: dict[str, Any]) -> Any:
        """The owner's `CallToolResult` for `tool` on `root`.

        Raises:
            OwnerUnavailableError: the owner did not answer; its entry is pruned.
            RegistryError: the owner is live but refused the call at the protocol level (not a tool error).
        """
        from mcp.shared.exceptions import MCPError

        payload = to_jsonable_python(arguments)
        key = (owner.endpoint, owner.pid, str(root))
        try:
            with self._lock:
                pooled, entry = self._portal, self._clients.get(key)
            if pooled is not None and entry is not None:
                portal, client = pooled, entry[1]
            else:
                # The first call to this owner for this workspace connects (blocking): off the event loop.
                portal, client = await anyio.to_thread.run_sync(self._client, key, owner, root)
            # Awaited across loops without a worker thread: the call runs on the forwarding loop.
            return await asyncio.wrap_future(portal.start_task_soon(client.call_tool, tool, payload))
        except Exception as exc:
            live = await anyio.to_thread.run_sync(self._after_failure, key, owner)
            if live and isinstance(exc, MCPError):
                raise RegistryError(
                    f"{tool}: the owner of {owned} (pid {owner.pid} at {owner.endpoint}) refused the call: {exc}"
                ) from exc
            raise OwnerUnavailableError(
                f"{tool}: the owner of {owned} (pid {owner.pid} at {owner.endpoint}) stopped answering "
                f"({type(exc).__name__}: {exc}); nothing is known of the call's outcome. Its registry entry was "
                "pruned if it is gone; call again and it is served by the next owner, or by this process."
            ) from exc

    def _after_failure(self, key: tuple[str, int, str], owner: Owner) -> bool:
        """Close the failed client; True if the owner is still live (else its entries are pruned)."""
        self._drop(key)
        self._seen = None
        try:
            state = self.registry.read()
        except RegistryError:
            return False
        return any(o.pid == owner.pid and o.endpoint == owner.endpoint for o in state.owners.values())

    def _client(self, key: tuple[str, int, str], owner: Owner, root: Path) -> tuple[BlockingPortal, Any]:
        with self._lock:
            if self._portal is None:
                self._portal_cm = start_blocking_portal(name="homeport-forwarding")
                self._portal = self._portal_cm.__enter__()
            portal = self._portal
            if key not in self._clients:
                cm = portal.wrap_async_context_manager(_connect(owner, root))
                self._clients[key] = (cm, cm.__enter__())
            return portal, self._clients[key][1]

    def _drop(self, key: tuple[str, int, str]) -> None:
        with self._lock:
            entry = self._clients.pop(key, None)
        if entry is not None:
            with contextlib.suppress(Exception):
                entry[0].__exit__(None, None, None)

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
            portal_cm, self._portal_cm, self._portal = self._portal_cm, None, None
        for cm, _client in clients:
            with contextlib.suppress(Exception):
                cm.__exit__(None, None, None)
        if portal_cm is not None:
            portal_cm.__exit__(None, None, None)


@contextlib.asynccontextmanager
async def _connect(owner: Owner, root: Path) -> AsyncIterator[Any]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"X-Workspace-Id": str(root), **_token_header(owner)}
    timeout = httpx2.Timeout(FORWARD_CONNECT_SECONDS, read=FORWARD_READ_SECONDS)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        Client(streamable_http_client(owner.endpoint + "/mcp", http_client=http)) as client,
    ):
        yield client


def _token_header(owner: Owner) -> dict[str, str]:
    if owner.token_ref is None:
        return {}
    try:
        token = Path(owner.token_ref).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise OwnerUnavailableError(
            f"the owner at {owner.endpoint} needs its token from {owner.token_ref}, which cannot be read "
            f"({exc.strerror})"
        ) from exc
    return {"Authorization": f"Bearer {token}"}
