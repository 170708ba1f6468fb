"""Calls for a workspace that another live instance owns go to that instance, unchanged.

    front end: resolution, guards, access (as for a local call)
      -> the registry names a live owner for the workspace's root (not this process)
      -> tools/call on the owner over Streamable HTTP, the root in X-Workspace-Id,
         the owner's token when it has one; the owner resolves and guards again
      -> the owner's CallToolResult, returned as it came (errors included)

The registry is read again only when its file changes (a `stat` per call otherwise). An SDK
client to an owner is opened once per owner and workspace, on the server's own event loop, and
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
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from pydantic_core import to_jsonable_python

from homeport.errors import OwnerUnavailableError, RegistryError
from homeport.registry import InstanceRegistry, Owner, RegistryState, owner_for
from homeport.registry.liveness import UNIX_SCHEME

if TYPE_CHECKING:
    from homeport.server.catalog import ToolSpec

__all__ = ["ClientPool", "Forwarder", "connect_mcp", "forwards"]

_Key = tuple[str, ...]  # (endpoint, pid, workspace root) for owners; what names one connection
_Opener = Callable[[], contextlib.AbstractAsyncContextManager[Any]]
# (the client once connected, its keeper's stop, the keeper task)
_Entry = tuple["asyncio.Future[Any]", asyncio.Event, "asyncio.Task[None]"]

# Set on every forwarded call: the owner serves it and never forwards it again (one hop at most).
FORWARDED_HEADER = "x-homeport-forwarded-by"
FORWARD_CONNECT_SECONDS = 5.0
FORWARD_READ_SECONDS = 300.0  # a project-database query may take minutes


def forwards(spec: ToolSpec) -> bool:
    """Tools that act on a workspace go to its owner; the workspace tools describe this process's routing."""
    return spec.takes_workspace and spec.group != "workspace"


class ClientPool:
    """SDK clients to other servers, one per key, opened once and shared by every call after it.

    An SDK client must be entered and left in one task; a keeper task holds each open for the
    calls of every request task on its loop, which share it (one process has one loop; the pool
    is per loop all the same, so a runtime used from several loops stays correct).
    """

    def __init__(self) -> None:
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[_Key, _Entry]] = (
            weakref.WeakKeyDictionary()
        )

    async def client(self, key: _Key, opener: _Opener, name: str) -> Any:
        """The pooled client for `key` on the running loop, connected with `opener` on first use."""
        loop = asyncio.get_running_loop()
        pool = self._pools.setdefault(loop, {})
        entry = pool.get(key)
        if entry is None:
            ready: asyncio.Future[Any] = loop.create_future()
            stop = asyncio.Event()
            keeper = loop.create_task(_keep(opener, ready, stop), name=name)
            entry = pool[key] = (ready, stop, keeper)  # the pool's reference keeps the keeper alive
        return await asyncio.shield(entry[0])

    def drop(self, key: _Key) -> None:
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


class Forwarder:
    def __init__(self, registry: InstanceRegistry, *, use_daemon: bool = True) -> None:
        self.registry = registry
        self.use_daemon = use_daemon  # False: the daemon (an owner at a unix: endpoint) is not forwarded to
        self._lock = threading.Lock()
        self._seen: tuple[int, int] | None = None  # (mtime_ns, size) of the registry file last read
        self._state = RegistryState()
        self._clients = ClientPool()

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

    async def forward(self, owned: str, owner: Owner, root: Path, tool: str, arguments: dict[str, Any]) -> Any:
        """The owner's `CallToolResult` for `tool` on `root`.

        Raises:
            OwnerUnavailableError: the owner did not answer; its entry is pruned.
            RegistryError: the owner is live but refused the call at the protocol level (not a tool error).
        """
        from mcp.shared.exceptions import MCPError

        payload = to_jsonable_python(arguments)
        key = (owner.endpoint, str(owner.pid), str(root))
        try:
            client = await self._clients.client(
                key, lambda: _connect(owner, root), name=f"homeport-forward-{owner.pid}"
            )
            return await client.call_tool(tool, payload)
        except Exception as exc:
            self._clients.drop(key)
            live = await anyio.to_thread.run_sync(self._still_live, owner)
            if live and isinstance(exc, MCPError):
                raise RegistryError(
                    f"{tool}: the owner of {owned} (pid {owner.pid} at {owner.endpoint}) refused the call: {exc}"
                ) from exc
            raise OwnerUnavailableError(
                f"{tool}: the owner of {owned} (pid {owner.pid} at {owner.endpoint}) stopped answering "
                f"({type(exc).__name__}: {exc}); nothing is known of the call's outcome. Its registry entry was "
                "pruned if it is gone; call again and it is served by the next owner, or by this process."
            ) from exc

    def _still_live(self, owner: Owner) -> bool:
        """Asked after a failed call: True if the owner still proves itself (else its entries are pruned)."""
        self._seen = None
        try:
            state = self.registry.read()
        except RegistryError:
            return False
        return any(o.pid == owner.pid and o.endpoint == owner.endpoint for o in state.owners.values())

    def close(self) -> None:
        self._clients.close()


async def _keep(opener: _Opener, ready: asyncio.Future[Any], stop: asyncio.Event) -> None:
    try:
        async with opener() as client:
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


def _connect(owner: Owner, root: Path) -> contextlib.AbstractAsyncContextManager[Any]:
    headers = {"X-Workspace-Id": str(root), FORWARDED_HEADER: str(os.getpid()), **_token_header(owner)}
    if owner.endpoint.startswith(UNIX_SCHEME):
        # The daemon's socket: the URL names only the Host header it accepts (http://localhost).
        return connect_mcp("http://localhost/mcp", headers, uds=owner.endpoint[len(UNIX_SCHEME) :])
    return connect_mcp(owner.endpoint + "/mcp", headers)


@contextlib.asynccontextmanager
async def connect_mcp(
    url: str, headers: dict[str, str], *, uds: str | None = None, on_response: Callable[[Any], Any] | None = None
) -> AsyncIterator[Any]:
    """An SDK client to the MCP endpoint `url`, sending `headers` on every request (a unix socket with `uds`);
    `on_response` (async) sees every HTTP response, whose status the SDK does not report."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    timeout = httpx2.Timeout(FORWARD_CONNECT_SECONDS, read=FORWARD_READ_SECONDS)
    transport = httpx2.AsyncHTTPTransport(uds=uds) if uds is not None else None
    async with (
        httpx2.AsyncClient(
            headers=headers,
            timeout=timeout,
            transport=transport,
            trust_env=transport is None,
            event_hooks={"response": [on_response]} if on_response is not None else None,
        ) as http,
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
