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

The repository's config is a suggestion (see `workspace/trust.py`): its team server is used only once
this user has trusted it for this project on this machine (`homeport trust`), the token comes from
the source the user chose then, and a config changed since (its url, key, token_env, anything) waits
for trust again. Until then nothing is sent, no variable is read, and the project is served locally;
`waiting(root)` says what waits and the command that grants it.
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
from homeport.workspace.trust import TrustBook, trust_command

__all__ = ["TeamRoute", "TeamRouter", "TrustWait"]

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


@dataclass(frozen=True)
class TrustWait:
    """A team server a project's config names that this user has not trusted here (or not as it now reads)."""

    root: Path
    team_url: str
    project_key: str | None
    suggested_token_env: str | None  # the repository's token_env: shown, never read
    config_path: Path
    reason: str

    @property
    def command(self) -> str:
        return trust_command(self.root)

    def describe(self) -> dict[str, str | None]:
        """The `trust` field of `where_am_i` and `homeport where --json`."""
        return {
            "status": "waiting",
            "team_url": self.team_url,
            "project_key": self.project_key,
            "suggested_token_env": self.suggested_token_env,
            "reason": self.reason,
            "command": self.command,
        }

    def situation(self) -> str:
        """What the repository asks, why it waits, and what is done meanwhile."""
        key = f" (project {self.project_key})" if self.project_key else ""
        return (
            f"{self.config_path} asks to send this project's memory to the team server {self.team_url}{key}; "
            f"waiting for trust ({self.reason}), so nothing is sent there and memory stays on this machine"
        )

    def line(self) -> str:
        """`situation` and the fix, for a person."""
        return f"{self.situation()}. If you trust that server for this project, run `{self.command}`"


@dataclass(frozen=True)
class _Decision:
    route: TeamRoute | None = None
    waiting: TrustWait | None = None
    trusted_url: str | None = None  # the team server the user trusted for the project (route or not)
    error: ConfigError | None = None  # trusted, but the token's source holds none: raised by `route`


class TeamRouter:
    """The team route of each project root, read again when its config file or the trust file changes."""

    def __init__(self, environ: Mapping[str, str], trust: TrustBook | None = None) -> None:
        self.environ = environ
        self.trust = trust if trust is not None else TrustBook(None)
        self._lock = threading.Lock()
        self._cache: dict[Path, tuple[Any, _Decision]] = {}
        self._clients: Any = None  # an owner_client.ClientPool, made on the first call (its imports are heavy)

    def route(self, root: Path) -> TeamRoute | None:
        """The team server of the project at `root`, or None when its config names none or this user
        has not trusted the one it names (then `waiting(root)` says so). Blocking.

        Raises:
            ConfigError: a token in the config, a bad [team] table, an unsafe trust file, or no token
                where the source the user chose holds none.
        """
        decision = self._decide(root)
        if decision.error is not None:
            raise decision.error
        return decision.route

    def trusted_url(self, root: Path) -> str | None:
        """The team server of the project at `root` that this user trusted, whether or not its token is set.

        Raises:
            ConfigError: a bad [team] table or an unsafe trust file.
        """
        return self._decide(root).trusted_url

    def waiting(self, root: Path) -> TrustWait | None:
        """The team server the project's config names that waits for this user's trust, if any.

        Raises:
            ConfigError: as `route`.
        """
        return self._decide(root).waiting

    def identity(self, root: Path) -> ProjectKey:
        """The project's key and where it came from (for `where_am_i`)."""
        return project_key(root)

    def _decide(self, root: Path) -> _Decision:
        stamp = (_stamp(root / CONFIG_FILE), self.trust.stamp())
        with self._lock:
            cached = self._cache.get(root)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        decision = _Decision() if stamp[0] is None else self._read(root)
        with self._lock:
            self._cache[root] = (stamp, decision)
        return decision

    def _read(self, root: Path) -> _Decision:
        document = read_project_config(root)
        team = team_config(root, document)
        if team is None:
            return _Decision()
        found = project_key(root, document)
        record = self.trust.record_for(root)
        current = self.trust.current(root)

        def wait(reason: str) -> _Decision:
            return _Decision(waiting=TrustWait(root, team.url, found.key, team.token_env, team.config_path, reason))

        if record is None:
            return wait("never trusted on this machine")
        if current is None:
            return wait(f"{team.config_path.name} changed since it was trusted on {record.trusted_at}")
        if current.team_url != team.url:
            return wait(f"trusted for the team server {current.team_url}, not {team.url}")
        if found.key is None:
            raise ConfigError(
                f"{team.config_path} names the team server {team.url} but the project has no key ({found.detail}); "
                'add project = "owner/name" to that file'
            )
        if current.project_key != found.key:
            return wait(f"trusted for the project key {current.project_key}, and the key is now {found.key}")
        try:
            token, token_from = self._token(root, team.url, current.token)
        except ConfigError as exc:
            return _Decision(trusted_url=team.url, error=exc)
        route = TeamRoute(url=team.url, key=found.key, token=token, token_from=token_from)
        return _Decision(route=route, trusted_url=team.url)

    def _token(self, root: Path, url: str, source: str) -> tuple[str | None, str]:
        """The token from the source the user chose when trusting the project; never from the repository."""
        change = f"or choose another source with `{trust_command(root)} --token-env VAR` (or --keyring)"
        if source.startswith("env:"):
            name = source[len("env:") :]
            value = self.environ.get(name, "").strip()
            if value:
                return value, f"${name}"
            raise ConfigError(
                f"the team server {url} needs a token, and you chose the environment variable {name} when trusting "
                f"this project: set {name}, {change}"
            )
        if source == "keyring":
            from_keyring = _keyring_token(url)
            if from_keyring:
                return from_keyring, "keyring"
            keyring = f"store it with `keyring set {KEYRING_SERVICE} {url}`"
            if not _keyring_installed():
                keyring = f"install the keyring extra (pip install 'homeport[keyring]') and {keyring}"
            raise ConfigError(
                f"the team server {url} needs a token, and you chose the keyring when trusting this project: "
                f"{keyring}, {change}"
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


def _stamp(path: Path) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


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
