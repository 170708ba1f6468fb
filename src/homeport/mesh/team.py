"""A project's memory on its team server: memory calls go there under the project's key.

    front end (stdio, or a shell memory command): resolution, guards, access, as for a local call
      -> the project's .homeport/config.toml names a team server ([team] url)
      -> tools/call on <url>/mcp over Streamable HTTP, the project key in X-Workspace-Id,
         the bearer token from the variable named by token_env (or the keyring)
      -> the team server's CallToolResult, returned as it came (errors included)

Only memory calls go (tools that need the store); the project database and everything else that
reads the project's own directory stay here. A team server that does not answer fails the call
with `team_server_unavailable` naming it: serving the call from a local store instead would split
the project's memory in two without anyone noticing.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from pydantic_core import to_jsonable_python

from homeport.errors import ConfigError, TeamServerUnavailableError
from homeport.mesh.forward_headers import FORWARDED_HEADER
from homeport.workspace.project import CONFIG_FILE, ProjectKey, project_key, read_project_config, team_config

__all__ = ["TeamRoute", "TeamRouter"]

KEYRING_SERVICE = "homeport"


@dataclass(frozen=True)
class TeamRoute:
    """Where a project's memory calls go."""

    url: str
    key: str
    token: str | None
    token_from: str

    @property
    def endpoint(self) -> str:
        return self.url if self.url.endswith("/mcp") else self.url + "/mcp"

    def describe(self) -> dict[str, str]:
        return {"url": self.url, "project_key": self.key, "token": self.token_from}


class TeamRouter:
    """The team route of each project root, read again when its config file changes."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self._lock = threading.Lock()
        self._cache: dict[Path, tuple[tuple[int, int] | None, TeamRoute | None]] = {}
        self._clients: Any = None  # an owner_client.ClientPool, made on the first call (its imports are heavy)

    def route(self, root: Path) -> TeamRoute | None:
        """The team server of the project at `root`, or None when its config names none. Blocking.

        Raises:
            ConfigError: a token in the config, a bad [team] table, no project key, or no token where
                token_env names a variable that is not set.
        """
        stamp = _stamp(root / CONFIG_FILE)
        with self._lock:
            cached = self._cache.get(root)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        route = None if stamp is None else self._read(root)
        with self._lock:
            self._cache[root] = (stamp, route)
        return route

    def identity(self, root: Path) -> ProjectKey:
        """The project's key and where it came from (for `where_am_i`)."""
        return project_key(root)

    def _read(self, root: Path) -> TeamRoute | None:
        document = read_project_config(root)
        team = team_config(root, document)
        if team is None:
            return None
        found = project_key(root, document)
        if found.key is None:
            raise ConfigError(
                f"{team.config_path} names the team server {team.url} but the project has no key ({found.detail}); "
                'add project = "owner/name" to that file'
            )
        token, token_from = self._token(team.url, team.token_env, team.config_path)
        return TeamRoute(url=team.url, key=found.key, token=token, token_from=token_from)

    def _token(self, url: str, token_env: str | None, config_path: Path) -> tuple[str | None, str]:
        if token_env and self.environ.get(token_env):
            return self.environ[token_env].strip(), f"${token_env}"
        from_keyring = _keyring_token(url)
        if from_keyring:
            return from_keyring, "keyring"
        if token_env:
            keyring = f"store it with `keyring set {KEYRING_SERVICE} {url}`"
            if not _keyring_installed():
                keyring = f"install the keyring extra (pip install 'homeport[keyring]') and {keyring}"
            raise ConfigError(
                f"the team server {url} (from {config_path}) needs a token: set the environment variable {token_env}, "
                f"or {keyring}"
            )
        return None, "none"

    async def forward(self, route: TeamRoute, tool: str, arguments: dict[str, Any]) -> Any:
        """The team server's `CallToolResult` for `tool` on the project's key.

        Raises:
            TeamServerUnavailableError: the team server did not answer or refused the call.
        """
        from homeport.mesh.owner_client import ClientPool, as_call_tool_result, async_client, call_tool

        key = (route.endpoint, route.key, route.token or "")
        if self._clients is None:
            self._clients = ClientPool()
        try:
            http = self._clients.client(key, lambda: async_client(_headers(route)))
            return as_call_tool_result(await call_tool(http, route.endpoint, tool, to_jsonable_python(arguments)))
        except Exception as exc:
            await self._clients.drop(key)
            raise _unavailable(exc, route, tool) from exc

    def forward_blocking(
        self,
        route: TeamRoute,
        tool: str,
        arguments: dict[str, Any],
        client: tuple[str | None, str | None] | None = None,
    ) -> Any:
        """`forward` for a process without an event loop (the shell): one client on a loop of its own for
        this one call, closed after it; `client` (name, version) is recorded by the team server as the writer's.
        The result is the team server's as JSON (`owner_client.ToolResult`).

        Raises:
            as `forward`.
        """
        from homeport.mesh.owner_client import async_client, call_tool

        payload = to_jsonable_python(arguments)

        async def once() -> Any:
            async with async_client(_headers(route)) as http:
                return await call_tool(http, route.endpoint, tool, payload, client)

        try:
            return anyio.run(once)
        except Exception as exc:
            raise _unavailable(exc, route, tool) from exc

    def close(self) -> None:
        if self._clients is not None:
            self._clients.close()


def _headers(route: TeamRoute) -> dict[str, str]:
    headers = {"X-Workspace-Id": route.key, FORWARDED_HEADER: str(os.getpid())}
    if route.token:
        headers["Authorization"] = f"Bearer {route.token}"
    return headers


def _unavailable(exc: Exception, route: TeamRoute, tool: str) -> TeamServerUnavailableError:
    """What a call that did not get the team server's answer raises: the server, the key, and why."""
    from homeport.mesh.owner_client import OwnerRefusedError

    refused = isinstance(exc, OwnerRefusedError)
    what = "refused the call" if refused else "could not be reached"
    detail = str(exc) if refused else f"{type(_leaf(exc)).__name__}: {_leaf(exc)}"
    if refused and str(exc).startswith(("HTTP 401", "HTTP 403")):
        sent = "the keyring" if route.token_from == "keyring" else route.token_from
        detail += f"; the token was refused (from {sent})" if route.token else "; no token was sent"
    return TeamServerUnavailableError(
        f"{tool}: the team server {route.url} (project {route.key}) {what} ({detail}). "
        "This project's memory lives there, so the call was not served from a local store; nothing is "
        "known of its outcome. Check that the server runs and the token is valid, then call again."
    )


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside task-group wrappers (the SDK client raises an ExceptionGroup)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _keyring_installed() -> bool:
    try:
        import keyring  # type: ignore[import-not-found,unused-ignore]  # noqa: F401
    except ImportError:
        return False
    return True


def _keyring_token(url: str) -> str | None:
    try:
        import keyring  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    try:
        value = keyring.get_password(KEYRING_SERVICE, url)
    except Exception:  # no backend, a locked keyring: as if it held nothing
        return None
    return str(value) if value else None
