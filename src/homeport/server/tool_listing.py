"""What `tools/list` shows a caller: the tools its access rules let it call, and news when that changes.

An agent whose allowlist grants two tools should not pay, on every turn, for the descriptions of
forty it may not call, nor be tempted to call them. So the listing is filtered by the same
decision as the call (`WorkspaceAccess.tools_allowed` over `policy.access_rules.decide_tool`),
for the request's principal and claims, in both protocol eras. The listing is a convenience and
never the guard: every call is still checked by the pipeline's allowlist step.

The rules file is re-read when it changes; a 2025-era session (it has a channel for server
notifications) that listed the tools is remembered, and `watch` sends it
`notifications/tools/list_changed` when a change of the rules changes what it would be shown.
At 2026-07-28 a client learns of changes only through `subscriptions/listen`, which Homeport does
not serve; such a client lists again when it wants to know.
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.types import Tool as MCPTool

from homeport.core.access import WorkspaceAccess
from homeport.core.catalog import CATALOG

__all__ = ["WATCH_SECONDS", "ToolListing"]

logger = logging.getLogger("homeport")

# How often the rules file's stamp is looked at for list-changed notifications: one stat; a change is
# applied to calls at once anyway (the pipeline re-reads the file on each call).
WATCH_SECONDS = 1.0


@dataclass(frozen=True)
class _Listed:
    principal: str
    claims: Mapping[str, Any]
    shown: frozenset[str]


class ToolListing:
    """The tools each caller is shown, for one server: `served` are its listed tools' names."""

    def __init__(self, access: WorkspaceAccess, served: Iterable[str]) -> None:
        self.access = access
        self.served = tuple(served)
        # Connections (2025-era, with a notification channel) that listed tools, and what they were shown.
        self._sessions: weakref.WeakKeyDictionary[Any, _Listed] = weakref.WeakKeyDictionary()
        self._rules_seen: object = None
        self._watching = 0

    @property
    def filters(self) -> bool:
        """Whether listings depend on the caller at all (access rules in force)."""
        return self.access.auth and self.access.rules is not None

    def allowed(self, principal: str, claims: Mapping[str, Any]) -> frozenset[str]:
        targets = {name: _checked_as(name) for name in self.served}
        granted = self.access.tools_allowed(principal, claims, set(targets.values()))
        return frozenset(name for name, (tool, _) in targets.items() if tool in granted)

    def visible(
        self, tools: list[MCPTool], principal: str, claims: Mapping[str, Any], connection: Any = None
    ) -> list[MCPTool]:
        """`tools` less those the caller may not call; `connection` (a 2025-era session's) is told of changes."""
        if not self.filters:
            return tools
        allowed = self.allowed(principal, claims)
        if connection is not None:
            self._sessions[connection] = _Listed(principal, dict(claims), allowed)
        return [tool for tool in tools if tool.name in allowed]

    async def notify_changes(self) -> None:
        """Tell each remembered session whose listing the rules changed (once per change)."""
        if not self.filters:
            return
        assert self.access.rules is not None
        try:
            current: object = self.access.rules.get()
        except Exception:  # unreadable or invalid: every listing is empty now
            current = None
        if current is self._rules_seen:
            return
        self._rules_seen = current
        for connection, listed in list(self._sessions.items()):
            now = self.allowed(listed.principal, listed.claims)
            if now == listed.shown:
                continue
            self._sessions[connection] = _Listed(listed.principal, listed.claims, now)
            try:
                await connection.send_tool_list_changed()
            except Exception:  # a session gone since: nobody left to tell
                self._sessions.pop(connection, None)

    @contextlib.asynccontextmanager
    async def watching(self) -> Any:
        """Run `notify_changes` every WATCH_SECONDS while the server runs (once, however often entered)."""
        if not self.filters or self._watching:
            self._watching += 1
            try:
                yield
            finally:
                self._watching -= 1
            return
        self._watching += 1
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watch)
                try:
                    yield
                finally:
                    tg.cancel_scope.cancel()
        finally:
            self._watching -= 1

    async def _watch(self) -> None:
        with contextlib.suppress(Exception):
            self._rules_seen = self.access.rules.get() if self.access.rules is not None else None
        while True:
            await anyio.sleep(WATCH_SECONDS)
            try:
                await self.notify_changes()
            except Exception:  # a bug must not stop the server's lifespan
                logger.exception("tool list-changed notifications failed")


def _checked_as(name: str) -> tuple[str, str]:
    """The (tool, group) the pipeline's allowlist step checks for a call of `name`: an alias (another
    server's name for a tool) is checked as the tool it names."""
    spec = CATALOG[name]
    target = spec.alias.target if spec.alias is not None else spec
    return target.name, target.group
