"""Calls for a workspace that another live instance owns go to that instance, unchanged.

    front end: resolution, guards, access (as for a local call)
      -> the registry names a live owner for the workspace's root (not this process)
      -> tools/call on the owner over Streamable HTTP, the root in X-Workspace-Id,
         the owner's token and the calling agent when it has one (`server.owner_token`);
         the owner resolves, guards and checks the agent's access again
      -> the owner's CallToolResult, returned as it came (errors included)

The registry is read again only when its file changes (a `stat` per call otherwise). An SDK
client to an owner is opened once per owner, workspace and agent, on the server's own event loop, and
shared by every call after it (no thread hop, no handshake per call). An owner that stops
answering fails that one call with `owner_unavailable`; its entry is pruned and the next call for
the workspace is served here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import weakref
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from pydantic_core import to_jsonable_python

from homeport.errors import OwnerUnavailableError, RegistryError, WorkspaceAccessDeniedError
from homeport.registry import InstanceRegistry, Owner, RegistryState, owner_for
from homeport.registry.liveness import UNIX_SCHEME

if TYPE_CHECKING:
    from homeport.server.catalog import ToolSpec

__all__ = ["Forwarder", "forwards"]

_Key = tuple[str, int, str, str | None]  # (endpoint, pid, workspace root, agent)
# (the client once connected, its keeper's stop, the keeper task)
_Entry = tuple["asyncio.Future[Any]", asyncio.Event, "asyncio.Task[None]"]

# Set on every forwarded call: the owner serves it and never forwards it again (one hop at most).
FORWARDED_HEADER = "x-homeport-forwarded-by"
FORWARD_CONNECT_SECONDS = 5.0
FORWARD_READ_SECONDS = 300.0  # a project-database query may take minutes


def forwards(spec: ToolSpec) -> bool:
    """Tools that act on a workspace go to its owner; the workspace tools describe this process's routing."""
    return spec.takes_workspace and spec.group != "workspace"


class Forwarder:
    def __init__(self, registry: InstanceRegistry, *, use_daemon: bool = True) -> None:
        self.registry = registry
        self.use_daemon = use_daemon  # False: the daemon (an owner at a unix: endpoint) is not forwarded to
        self._lock = threading.Lock()
        self._seen: tuple[int, int] | None = None  # (mtime_ns, size) of the registry file last read
        self._state = RegistryState()
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[_Key, _Entry]] = (
            weakref.WeakKeyDictionary()
        )

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
            if not self.use_daemon:
                owners = {r: o for r, o in state.owners.items() if not o.endpoint.startswith(UNIX_SCHEME)}
                state = RegistryState(owners, state.ports)
            with self._lock:
                self._state = state
                # Read after pruning: a prune rewrote the file, and that version is the one we hold.
                with contextlib.suppress(OSError):
                    st = os.stat(self.registry.path)
                    seen = (st.st_mtime_ns, st.st_size)
                self._seen = seen
        return self._state

    # -- the call

    async def forward(
        self, owned: str, owner: Owner, root: Path, tool: str, arguments: dict[str, Any], *, agent: str | None = None
    ) -> Any:
        """The owner's `CallToolResult` for `tool` on `root`, called as `agent`.

        Raises:
            WorkspaceAccessDeniedError: the owner requires agents (--auth) and the call names none.
            OwnerUnavailableError: the owner did not answer; its entry is pruned.
            RegistryError: the owner is live but refused the call at the protocol level (not a tool error).
        """
        _require_agent(owned, owner, tool, agent)
        key = (owner.endpoint, owner.pid, str(root), agent)
        try:
            client = await self._client(key, owner, root, agent)
            return await client.call_tool(tool, to_jsonable_python(arguments))
        except Exception as exc:
            self._drop(key)
            live = await anyio.to_thread.run_sync(self._still_live, owner)
            raise _failure(exc, live, owned, owner, tool) from exc

    def forward_blocking(
        self, owned: str, owner: Owner, root: Path, tool: str, arguments: dict[str, Any], *, agent: str | None = None
    ) -> Any:
        """`forward` for a process without an event loop (the shell): one connection, closed after the call.

        Raises:
            as `forward`.
        """
        _require_agent(owned, owner, tool, agent)
        payload = to_jsonable_python(arguments)

        async def once() -> Any:
            async with _connect(owner, root, agent) as client:
                return await client.call_tool(tool, payload)

        try:
            return anyio.run(once)
        except Exception as exc:
            raise _failure(exc, self._still_live(owner), owned, owner, tool) from exc

    def _still_live(self, owner: Owner) -> bool:
        """Asked after a failed call: True if the owner still proves itself (else its entries are pruned)."""
        self._seen = None
        try:
            state = self.registry.read()
        except RegistryError:
            return False
        return any(o.pid == owner.pid and o.endpoint == owner.endpoint for o in state.owners.values())

    async def _client(self, key: _Key, owner: Owner, root: Path, agent: str | None) -> Any:
        """The pooled client for `key` on the running loop, connected by a keeper task on first use.

        An SDK client must be entered and left in one task; the keeper task holds it open for the
        calls of every request task on this loop, which share it (one process has one loop; the
        pool is per loop all the same, so a runtime used from several loops stays correct).
        """
        loop = asyncio.get_running_loop()
        pool = self._pools.setdefault(loop, {})
        entry = pool.get(key)
        if entry is None:
            ready: asyncio.Future[Any] = loop.create_future()
            stop = asyncio.Event()
            keeper = loop.create_task(_keep(owner, root, agent, ready, stop), name=f"homeport-forward-{owner.pid}")
            entry = pool[key] = (ready, stop, keeper)  # the pool's reference keeps the keeper alive
        return await asyncio.shield(entry[0])

    def _drop(self, key: _Key) -> None:
        with contextlib.suppress(RuntimeError):
            pool = self._pools.get(asyncio.get_running_loop(), {})
            entry = pool.pop(key, None)
            if entry is not None:
                entry[1].set()

    def close(self) -> None:
        # The keepers end with their loop (cancelled at its shutdown); only stop those still running.
        for pool in list(self._pools.values()):
            for _ready, stop, _keeper in pool.values():
                with contextlib.suppress(RuntimeError):
                    stop.set()
        self._pools.clear()


def _require_agent(owned: str, owner: Owner, tool: str, agent: str | None) -> None:
    if owner.token_ref is not None and agent is None:
        raise WorkspaceAccessDeniedError(
            f"{tool}: {owned} is served by pid {owner.pid} at {owner.endpoint}, which requires an agent (--auth), "
            "and this call names none; start this server with --agent NAME (an agent of the owner's directory), "
            "or call the owner with the agent's token. Nothing was sent."
        )


def _failure(exc: Exception, live: bool, owned: str, owner: Owner, tool: str) -> RegistryError:
    """What a call that failed on its way to a live (or now pruned) owner raises."""
    from mcp.shared.exceptions import MCPError

    if live and isinstance(exc, MCPError):
        return RegistryError(
            f"{tool}: the owner of {owned} (pid {owner.pid} at {owner.endpoint}) refused the call: {exc}"
        )
    return OwnerUnavailableError(
        f"{tool}: the owner of {owned} (pid {owner.pid} at {owner.endpoint}) stopped answering "
        f"({type(exc).__name__}: {exc}); nothing is known of the call's outcome. Its registry entry was "
        "pruned if it is gone; call again and it is served by the next owner, or by this process."
    )


async def _keep(owner: Owner, root: Path, agent: str | None, ready: asyncio.Future[Any], stop: asyncio.Event) -> None:
    try:
        async with _connect(owner, root, agent) as client:
            ready.set_result(client)
            await stop.wait()
    except BaseException as exc:
        if not ready.done():
            ready.set_exception(exc if isinstance(exc, Exception) else OwnerUnavailableError("connection cancelled"))
        if not isinstance(exc, Exception):
            raise
    finally:
        if not ready.done():
            ready.set_exception(OwnerUnavailableError("connection closed"))


@contextlib.asynccontextmanager
async def _connect(owner: Owner, root: Path, agent: str | None) -> AsyncIterator[Any]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from homeport.server.owner_token import AGENT_HEADER

    headers = {"X-Workspace-Id": str(root), FORWARDED_HEADER: str(os.getpid()), **_token_header(owner)}
    if agent is not None:
        headers[AGENT_HEADER] = agent
    timeout = httpx2.Timeout(FORWARD_CONNECT_SECONDS, read=FORWARD_READ_SECONDS)
    url, transport = owner.endpoint + "/mcp", None
    if owner.endpoint.startswith(UNIX_SCHEME):
        # The daemon's socket: the URL names only the Host header it accepts (http://localhost).
        url, transport = "http://localhost/mcp", httpx2.AsyncHTTPTransport(uds=owner.endpoint[len(UNIX_SCHEME) :])
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout, transport=transport, trust_env=transport is None) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
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
