"""Calls for a workspace that another live instance owns go to that instance, unchanged.

    front end: resolution, guards, access (as for a local call)
      -> the registry names a live owner for the workspace's root (not this process): one that
         proved it holds the secret it registered with (`registry.liveness`)
      -> on each new connection, the owner proves it again before anything is sent (`mesh.owner_http`)
      -> tools/call on the owner over Streamable HTTP (one stateless request,
         `mesh.owner_client`), the root in X-Workspace-Id,
         the owner's token and the calling agent when it has one (`server.owner_token`);
         the owner resolves, guards and checks the agent's access again
      -> the owner's CallToolResult, returned as it came (errors included)

The registry is read again only when its file changes (a `stat` per call otherwise). An HTTP
client to an owner is opened once per owner, workspace and agent, on the server's own event loop,
and shared by every call after it (kept-alive connections, no thread hop, no handshake). An owner that stops
answering fails that one call with `owner_unavailable`, and one that answers without proving it is
the owner (an impostor on a dead owner's port) with `owner_unproven`, nothing of the call sent; either
way its entry is pruned and the next call for the workspace is served here.

A state directory that another user could change is not read at all (`UntrustedStateError`): with a
warning that names it and the fix, every call is served here.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from pydantic_core import to_jsonable_python

from homeport.errors import (
    OwnerUnavailableError,
    OwnerUnprovenError,
    RegistryError,
    UntrustedStateError,
    WorkspaceAccessDeniedError,
)
from homeport.mesh.forward_headers import FORWARDED_HEADER
from homeport.registry import InstanceRegistry, Owner, RegistryState, owner_for
from homeport.registry.liveness import UNIX_SCHEME

if TYPE_CHECKING:
    from homeport.mesh.owner_client import ClientPool, ToolResult

__all__ = ["FORWARDED_HEADER", "Forwarder"]

_Key = tuple[str, int, str, str | None, str | None]  # (endpoint, pid, workspace root, agent, claims)

log = logging.getLogger("homeport.forwarding")


class Forwarder:
    def __init__(self, registry: InstanceRegistry, *, use_daemon: bool = True) -> None:
        self.registry = registry
        self.use_daemon = use_daemon  # False: the daemon (an owner at a unix: endpoint) is not forwarded to
        self._lock = threading.Lock()
        self._seen: tuple[int, int] | None = None  # (mtime_ns, size) of the registry file last read
        self._state = RegistryState()
        self._clients: ClientPool | None = None  # made on the first forwarded call (its imports are heavy)
        self._warned: str | None = None  # the untrusted-state warning last logged (once, not on every call)

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
        return _others(self._current())

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

    def anyone_else_if_current(self) -> bool | None:
        """`anyone_else()` when the registry as last read is still the file's content (one `stat`, no
        read, no lock); None when the file changed and must be read again (blocking: `anyone_else`)."""
        state = self._unchanged()
        return None if state is None else _others(state)

    def _unchanged(self) -> RegistryState | None:
        """The registry as last read while the file is unchanged (one `stat`); None when it must be read.
        No file: no owner. An unreadable file: the last state stands."""
        try:
            st = os.stat(self.registry.path)
        except FileNotFoundError:
            return RegistryState()
        except OSError:
            return self._state
        return self._state if (st.st_mtime_ns, st.st_size) == self._seen else None

    def _current(self) -> RegistryState:
        state = self._unchanged()
        if state is not None:
            return state
        try:
            state = self.registry.read()  # prunes the dead under the lock (and so may change the file)
        except UntrustedStateError as exc:
            if exc.message != self._warned:
                log.warning("%s; every call is served by this process", exc.message)
                self._warned = exc.message
            state = RegistryState()
        if not self.use_daemon:
            owners = {r: o for r, o in state.owners.items() if not o.endpoint.startswith(UNIX_SCHEME)}
            state = RegistryState(owners, state.ports)
        with self._lock:
            self._state = state
            # Stamped after pruning: a prune rewrote the file, and that version is the one we hold (no
            # stamp: read again next time).
            seen = None
            with contextlib.suppress(OSError):
                st = os.stat(self.registry.path)
                seen = (st.st_mtime_ns, st.st_size)
            self._seen = seen
        return self._state

    # -- the call

    async def forward(
        self,
        owned: str,
        owner: Owner,
        root: Path,
        tool: str,
        arguments: dict[str, Any],
        *,
        agent: str | None = None,
        claims: Mapping[str, Any] | None = None,
        client: tuple[str | None, str | None] | None = None,
    ) -> Any:
        """The owner's `CallToolResult` for `tool` on `root`, called as `agent` (with the `claims` this
        server verified for it, so the owner's group and claim rules see them too) from `client`.

        Raises:
            WorkspaceAccessDeniedError: the owner requires agents (--auth) and the call names none.
            OwnerUnavailableError: the owner did not answer; its entry is pruned.
            RegistryError: the owner is live but refused the call at the protocol level (not a tool error).
        """
        _require_agent(owned, owner, tool, agent)
        from homeport.mesh.forward_headers import claims_header
        from homeport.mesh.owner_client import as_call_tool_result, call_owner, owner_connections

        said = claims_header(claims or {})
        key = (owner.endpoint, owner.pid, str(root), agent, said)

        try:
            conns = self._pool().client(key, lambda: owner_connections(owner, root, agent, said, self._secret(owner)))
            return as_call_tool_result(await call_owner(conns, tool, to_jsonable_python(arguments), client))
        except Exception as exc:
            await self._pool().drop(key)
            live = await anyio.to_thread.run_sync(self._still_live, owner)
            raise _failure(exc, live, owned, owner, tool) from exc

    def forward_blocking(
        self,
        owned: str,
        owner: Owner,
        root: Path,
        tool: str,
        arguments: dict[str, Any],
        *,
        agent: str | None = None,
        claims: Mapping[str, Any] | None = None,
        client: tuple[str | None, str | None] | None = None,
    ) -> ToolResult:
        """`forward` for a process without an event loop (the shell): the same client, on a loop of its own
        for this one call, its connection closed after it. The result is the owner's as JSON (no MCP SDK).

        Raises:
            as `forward`.
        """
        from homeport.mesh.forward_headers import claims_header
        from homeport.mesh.owner_client import call_owner, owner_connections

        _require_agent(owned, owner, tool, agent)
        payload = to_jsonable_python(arguments)

        async def once() -> ToolResult:
            conns = owner_connections(owner, root, agent, claims_header(claims or {}), self._secret(owner))
            try:
                return await call_owner(conns, tool, payload, client)
            finally:
                await conns.aclose()

        try:
            return anyio.run(once)
        except Exception as exc:
            raise _failure(exc, self._still_live(owner), owned, owner, tool) from exc

    def _secret(self, owner: Owner) -> bytes:
        """The secret `owner` registered with, to check its proofs (and to present under --auth).

        Raises:
            OwnerNotProvenError: there is none that can be trusted: nothing can prove the owner.
        """
        from homeport.mesh.owner_http import OwnerNotProvenError

        secret = self.registry.owner_secret(owner.pid)
        if secret is None:
            raise OwnerNotProvenError(f"no secret of pid {owner.pid} in {self.registry.secrets} to check it with")
        return secret

    def _still_live(self, owner: Owner) -> bool:
        """Asked after a failed call: True if the owner still proves itself (else its entries are pruned)."""
        self._seen = None
        try:
            state = self.registry.read()
        except RegistryError:
            return False
        return any(o.pid == owner.pid and o.endpoint == owner.endpoint for o in state.owners.values())

    def _pool(self) -> ClientPool:
        if self._clients is None:
            from homeport.mesh.owner_client import ClientPool

            self._clients = ClientPool()
        return self._clients

    def close(self) -> None:
        if self._clients is not None:
            self._clients.close()


def _require_agent(owned: str, owner: Owner, tool: str, agent: str | None) -> None:
    if owner.auth and agent is None:
        raise WorkspaceAccessDeniedError(
            f"{tool}: {owned} is served by pid {owner.pid} at {owner.endpoint}, which requires an agent (--auth), "
            "and this call names none; start this server with --agent NAME (an agent of the owner's directory), "
            "or call the owner with the agent's token. Nothing was sent."
        )


def _failure(exc: Exception, live: bool, owned: str, owner: Owner, tool: str) -> RegistryError:
    """What a call that failed on its way to a live (or now pruned) owner raises."""
    from homeport.mesh.owner_client import OwnerRefusedError
    from homeport.mesh.owner_http import OwnerNotProvenError

    if isinstance(exc, OwnerNotProvenError):
        return OwnerUnprovenError(
            f"{tool}: what answers at {owner.endpoint} did not prove it is the owner of {owned} registered "
            f"there (pid {owner.pid}): {exc}. Nothing of the call was sent to it, and its registry entry was "
            "pruned; call again and it is served by this process"
        )
    if live and isinstance(exc, OwnerRefusedError):
        return RegistryError(
            f"{tool}: the owner of {owned} (pid {owner.pid} at {owner.endpoint}) refused the call: {exc}"
        )
    return OwnerUnavailableError(
        f"{tool}: the owner of {owned} (pid {owner.pid} at {owner.endpoint}) stopped answering "
        f"({type(exc).__name__}: {exc}); nothing is known of the call's outcome. Its registry entry was "
        "pruned if it is gone; call again and it is served by the next owner, or by this process."
    )


def _others(state: RegistryState) -> bool:
    """Whether `state` names an owner besides this process."""
    return any(o.pid != os.getpid() for o in state.owners.values())
