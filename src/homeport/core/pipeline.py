"""The one path every tool call takes, over MCP and from the CLI.

    request (MCP context or CLI flags)
      -> inputs: principal, workspace argument, header, query, session default   `CallRequest.inputs`
      -> the client's roots, a bound on every source (cached, or asked for)      `CallRequest.attach_roots`
      -> the caller's tool allowlist (access rules), before anything is resolved  `WorkspaceAccess.check_tool`
      -> secrets in what a write carries (tools declared with `Scan`)            `SecretGate.check`
      -> resolution and guards                                                    `WorkspaceResolver.resolve`
      -> the caller's access to that workspace                                    `WorkspaceAccess.check`
      -> a memory call of a project with a team server? its result, as it came   `TeamRouter.forward`
      -> owned by another live instance? its result, as it came                  `Forwarder.forward`
      -> the store (opened, or created for writes)                                `Runtime.store_for`
      -> the executor, on a worker thread over HTTP, its writes recorded as the   `ToolSpec.run`
         caller's (principal, client, tool)                                      `provenance.writing_as`
      -> overrides of the secret check recorded in the memory                     `SecretGate.record`
      -> the result with `workspace` added                                        `tool_result`

No step is optional and no tool sees the raw request, so a change for speed in one step cannot
let a call skip another. Errors are `HomeportError`s; the MCP binding and the CLI each turn them
into their own kind of answer in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio.to_thread

from homeport import __version__
from homeport.core.catalog import Needs, Scan, ToolSpec
from homeport.core.runtime import Runtime, tool_result
from homeport.core.secret_gate import SecretGate
from homeport.errors import (
    InvalidArgumentError,
    LogicalWorkspaceError,
    PermissionDeniedError,
    StoreError,
    UnknownArgumentError,
    WorkspaceError,
    error_for_code,
)
from homeport.registry import Owner
from homeport.store import Store
from homeport.store.loop_calls import MustWait, may_wait, on_loop
from homeport.store.provenance import Writer, writing_as
from homeport.workspace import CallInputs, Workspace

__all__ = ["Call", "CallPipeline", "CallRequest", "LocalRequest", "owners_answer", "unknown_arguments_error"]

# The workspace names other servers use: a call that carries one is told to use `workspace`.
FOREIGN_WORKSPACE_NAMES = frozenset(
    {"workspace_id", "projectRoot", "project_root", "project_path", "workspace_root", "cwd", "projectPath", "root"}
)


# Arguments that are never written as memory text: not scanned for secrets.
_NOT_SCANNED = frozenset({"workspace", "allow_secrets"})


class CallRequest(Protocol):
    """Where a call came from: an MCP request, or a command typed in a shell."""

    @property
    def principal(self) -> str: ...

    @property
    def agent(self) -> str | None: ...

    @property
    def claims(self) -> Mapping[str, Any]:
        """The verified token's claims (JWT), for the access rules; empty otherwise."""
        ...

    @property
    def forwarded(self) -> bool:
        """A call another instance forwarded here: served here, never forwarded again."""
        ...

    @property
    def client(self) -> tuple[str | None, str | None]:
        """The client's name and version (MCP handshake or request envelope); (None, None) when unsaid."""
        ...

    def inputs(self, argument: str | None) -> CallInputs: ...

    async def attach_roots(self, inputs: CallInputs) -> CallInputs | Any:
        """`inputs` with the client's roots, or the question to send the client for them (2026-07-28)."""
        ...

    def bind_session(self, root: str) -> bool: ...

    def describe(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class LocalRequest:
    """A call made in this process by the local user (the shell commands): no roots, no session, no header."""

    principal: str = "local"
    agent: str | None = None
    forwarded: bool = False
    claims: Mapping[str, Any] = field(default_factory=dict, compare=False)
    client: tuple[str | None, str | None] = ("homeport", __version__)  # the shell commands
    # (done, total) from a long tool (import_from), for the shell's progress bar.
    progress: Callable[[int, int], None] | None = field(default=None, compare=False)

    def inputs(self, argument: str | None) -> CallInputs:
        return CallInputs(principal=self.principal, argument=argument)

    async def attach_roots(self, inputs: CallInputs) -> CallInputs:
        return inputs

    def bind_session(self, root: str) -> bool:
        return False

    def describe(self) -> dict[str, Any]:
        return {"protocol_version": None, "session": False}


@dataclass
class Call:
    """What an executor gets: the resolved workspace and its store, the runtime's services, the request."""

    runtime: Runtime
    request: CallRequest
    inputs: CallInputs | None = None
    tool: str = ""
    workspace: Workspace | None = None
    store: Store | None = None
    error: WorkspaceError | None = None  # only for tools that report an unresolvable call
    secrets: SecretGate | None = None  # tools declared with `Scan`
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        """The project's directory.

        Raises:
            LogicalWorkspaceError: the workspace is a logical key, which has no directory to read.
        """
        assert self.workspace is not None, "a tool that needs a workspace was declared without one"
        may_wait("the project's own files")  # reading or writing them is never done on the event loop
        if self.workspace.logical_key is not None:
            raise LogicalWorkspaceError(
                f"{self.tool or 'this tool'} needs the project's own directory (its files or its database) and is "
                f"not available for logical workspaces such as {self.workspace.logical_key!r}; run it with a "
                "Homeport on the machine that has the project checked out"
            )
        return self.workspace.root

    def screen(self, values: Any, *, prefix: str = "") -> None:
        """Check content the executor read (`Scan.CONTENT`) for secrets before writing it.

        Raises:
            SecretDetectedError: a secret, and the caller did not pass allow_secrets=true.
        """
        assert self.secrets is not None, "a tool that screens content was declared without Scan.CONTENT"
        self.secrets.check(values, prefix=prefix)

    def require_store(self) -> Store:
        if self.store is None:
            raise StoreError(f"no memory store at {self.root}; this is a bug in the tool's declaration")
        return self.store


class CallPipeline:
    """Run declared tools for one runtime."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._threaded = runtime.settings.transport == "http"
        # A PostgreSQL store waits on the network for every statement: its calls always go to a thread.
        self._store_on_loop = runtime.stores.postgres is None

    async def call(self, spec: ToolSpec, arguments: dict[str, Any], request: CallRequest) -> dict[str, Any] | Any:
        """Run `spec` with validated `arguments` for an MCP request.

        Returns the result dict, or the client-input request (roots, 2026-07-28) to send back as is.

        Raises:
            HomeportError: resolution, a guard, the caller's access or the executor refused the call.
        """
        self._refuse_write_if_read_only(spec)
        inputs: CallInputs | None = None
        checked: Workspace | None = None
        if spec.takes_workspace:
            inputs = request.inputs(_workspace_argument(spec, arguments))
            attached = await request.attach_roots(inputs)
            if not isinstance(attached, CallInputs):
                return attached
            inputs = attached
            forwarded, checked = await self._forward(spec, arguments, request, inputs)
            if forwarded is not None:
                return forwarded
        if not self._threaded:  # stdio: one client, and a thread hop would cost more than most reads
            return self.execute(spec, arguments, request, inputs, checked)
        if spec.needs is Needs.STORE and self._store_on_loop:
            # A memory call on SQLite runs here on the loop unless a step of it could wait (`loop_calls`):
            # then, before it has changed anything, it is run again from the start on a worker thread.
            try:
                with on_loop():
                    return self.execute(spec, arguments, request, inputs, checked)
            except MustWait:
                pass
        return await anyio.to_thread.run_sync(self.execute, spec, arguments, request, inputs, checked)

    async def _forward(
        self, spec: ToolSpec, arguments: dict[str, Any], request: CallRequest, inputs: CallInputs
    ) -> tuple[Any | None, Workspace | None]:
        """(the owner's result, None) when another live instance owns the call's workspace; else
        (None, the workspace when this step resolved it, so that it is not resolved again here).

        Resolution, the guards and the caller's access run here first, exactly as for a local call;
        the owner runs them again on the root it is sent.
        """
        if request.forwarded or not spec.goes_to_owner:
            return None, None
        team = self.runtime.team
        if team is not None and spec.goes_to_team:
            workspace, route = await self._blocking(self._team_of_call, spec, request, inputs)
            if route is not None:
                return await team.forward(route, spec.name, arguments), None
            checked: Workspace | None = workspace
        else:
            checked = None
        forwarder = self.runtime.forwarder
        if forwarder is None:
            return None, checked
        # One stat per call; reading a changed registry takes its lock and asks owners for /healthz:
        # not on the loop.
        anyone_else = forwarder.anyone_else_if_current()
        if anyone_else is None:
            anyone_else = await self._blocking(forwarder.anyone_else)
        if not anyone_else:
            return None, checked
        # On the loop: the registry is current, and resolution is a few stat calls (tens of µs),
        # less than the thread hop it would take (bench/forwarding.py).
        workspace, found = self._owner_of_call(spec, request, inputs, checked)
        if found is None:
            return None, workspace
        owned, owner = found
        result = await forwarder.forward(
            owned,
            owner,
            workspace.root,
            spec.name,
            arguments,
            agent=request.agent,
            claims=request.claims,
            client=request.client,
        )
        return result, None

    async def _blocking(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self._threaded:
            return await anyio.to_thread.run_sync(fn, *args)
        return fn(*args)

    def _team_of_call(self, spec: ToolSpec, request: CallRequest, inputs: CallInputs) -> tuple[Workspace, Any]:
        assert self.runtime.team is not None
        self._check_tool(spec, request)
        workspace = self._resolve_and_check(spec, request, inputs)
        if workspace.logical_key is not None:
            return workspace, None
        return workspace, self.runtime.team.route(workspace.root)

    def _owner_of_call(
        self, spec: ToolSpec, request: CallRequest, inputs: CallInputs, checked: Workspace | None
    ) -> tuple[Workspace, tuple[str, Owner] | None]:
        assert self.runtime.forwarder is not None
        if checked is None:
            self._check_tool(spec, request)
        workspace = checked if checked is not None else self._resolve_and_check(spec, request, inputs)
        if workspace.logical_key is not None:  # a key is served where its store is: this server
            return workspace, None
        return workspace, self.runtime.forwarder.owner_of(workspace.root)

    def _check_tool(self, spec: ToolSpec, request: CallRequest) -> None:
        self.runtime.access.check_tool(request.principal, request.claims, spec.name, spec.group)

    def _refuse_write_if_read_only(self, spec: ToolSpec) -> None:
        # Before forwarding too: an owner started without --read-only must not take the write instead.
        if spec.write and self.runtime.settings.read_only:
            raise PermissionDeniedError(
                f"{spec.name} writes, and this server was started with --read-only; nothing was changed. "
                "Restart it without --read-only to make changes"
            )

    def _resolve_and_check(self, spec: ToolSpec, request: CallRequest, inputs: CallInputs) -> Workspace:
        # Checked again on every call whatever named the workspace: a handle or a session is no capability.
        workspace = self.runtime.resolve(inputs, write=spec.write)
        self.runtime.access.check(
            request.principal, workspace.root, write=spec.write, claims=request.claims, key=workspace.logical_key
        )
        return workspace

    def execute_or_forward(
        self, spec: ToolSpec, arguments: dict[str, Any], request: CallRequest, inputs: CallInputs | None
    ) -> dict[str, Any]:
        """The shell's call: a team project's memory call goes to its team server (`workspace` then names
        the team server as `team`), a workspace another live instance owns (the daemon, a `serve --own`)
        to that owner, anything else is executed here. A remote error is raised here as the same class.

        Raises:
            HomeportError: as `call`; TeamServerUnavailableError when the team server gives no answer.
        """
        self._refuse_write_if_read_only(spec)
        checked: Workspace | None = None
        if inputs is None or request.forwarded or not spec.goes_to_owner:
            return self.execute(spec, arguments, request, inputs)
        team = self.runtime.team
        if team is not None and spec.goes_to_team:
            checked, route = self._team_of_call(spec, request, inputs)
            if route is not None:
                try:
                    answer = owners_answer(team.forward_blocking(route, spec.name, arguments, request.client))
                except LogicalWorkspaceError as exc:
                    raise LogicalWorkspaceError(
                        f"{spec.name} reads or writes the project's own files, and this project's memory is on "
                        f"its team server {route.url} (project {route.key}), which cannot see them; it is not "
                        "available in a team project (the other memory commands are). Nothing was changed"
                    ) from exc
                if isinstance(answer.get("workspace"), dict):
                    answer["workspace"] = {**answer["workspace"], "team": route.url}
                return answer
        forwarder = self.runtime.forwarder
        if forwarder is not None and forwarder.anyone_else():
            checked, found = self._owner_of_call(spec, request, inputs, checked)
            if found is not None:
                owned, owner = found
                result = forwarder.forward_blocking(
                    owned,
                    owner,
                    checked.root,
                    spec.name,
                    arguments,
                    agent=request.agent,
                    claims=request.claims,
                    client=request.client,
                )
                return owners_answer(result)
        return self.execute(spec, arguments, request, inputs, checked)

    def execute(
        self,
        spec: ToolSpec,
        arguments: dict[str, Any],
        request: CallRequest,
        inputs: CallInputs | None,
        checked: Workspace | None = None,
    ) -> dict[str, Any]:
        """The blocking part: resolve, check access, open the store, run, shape. The CLI calls it directly.

        `checked` is the workspace the forwarding step already resolved and checked for this call.

        Raises:
            HomeportError: as `call`.
        """
        if checked is None:
            # The access step begins with the tool allowlist: a refused tool is scanned and resolved never.
            self._check_tool(spec, request)
        self._refuse_write_if_read_only(spec)
        call = Call(self.runtime, request, inputs, tool=spec.name)
        if spec.scan is not Scan.NONE:
            # Before resolution: a refused write must not even create the store.
            call.secrets = SecretGate(spec.name, allowed=bool(arguments.get("allow_secrets")))
            if spec.scan is Scan.ARGUMENTS:
                call.secrets.check({k: v for k, v in arguments.items() if k not in _NOT_SCANNED})
        if spec.takes_workspace:
            assert inputs is not None
            try:
                call.workspace = checked if checked is not None else self._resolve_and_check(spec, request, inputs)
            except WorkspaceError as exc:
                if not spec.report_unresolved:
                    raise
                call.error = exc
            if call.workspace is not None and spec.needs is Needs.STORE:
                call.store = self.runtime.store_for(call.workspace, write=spec.write, create=spec.creates_store)
        kwargs = {k: v for k, v in arguments.items() if k != "workspace" or spec.declares_workspace}
        if call.secrets is not None:
            kwargs.pop("allow_secrets", None)
        client, client_version = request.client
        writer = Writer(request.principal, client, client_version, spec.name)
        try:
            with writing_as(writer):  # every item version this call writes records who wrote it
                result = spec.run(call, **kwargs)
        except OverflowError as exc:
            # Out-of-range input that reached a library (an id past 64 bits, a date past year 9999).
            raise InvalidArgumentError(f"{spec.name}: an argument is out of range ({exc})") from exc
        if spec.write and isinstance(result, dict):
            result = {**result, "written_by": writer.describe()}
        if call.secrets is not None:
            call.secrets.record(call.store, request.principal)
        if call.store is not None:  # queues items for embedding; never waits for it
            self.runtime.semantic.notice(call.store, wrote=spec.write)
        if call.workspace is None or spec.report_unresolved:
            return result if isinstance(result, dict) else {spec.result_key or "result": result}
        return tool_result(call.workspace, result, spec.result_key)


def unknown_arguments_error(spec_name: str, unknown: list[str], accepted: list[str]) -> UnknownArgumentError:
    """The refusal of arguments a tool does not have: never dropped, never served from a default workspace."""
    names = ", ".join(sorted(unknown))
    foreign = sorted(set(unknown) & FOREIGN_WORKSPACE_NAMES)
    hint = ""
    if foreign and "workspace" in accepted:
        hint = (
            f" {', '.join(foreign)} is another server's name for the project: use `workspace` (an absolute path, "
            "file:// URI or use_workspace handle)."
        )
    return UnknownArgumentError(
        f"{spec_name} has no argument {names}; it takes {', '.join(accepted) or 'no arguments'}.{hint} "
        "Nothing was done."
    )


def _workspace_argument(spec: ToolSpec, arguments: dict[str, Any]) -> str | None:
    value = arguments.get("workspace") if spec.declares_workspace else arguments.pop("workspace", None)
    return value or None


def owners_answer(result: Any) -> dict[str, Any]:
    """An owner's result as a local call returns it: the structured result, or its error raised.

    `result` is its JSON (what the shell's forwarding returns, `owner_client.ToolResult`) or the SDK's
    `CallToolResult` (what a server's forwarding returns).
    """
    if not isinstance(result, dict):
        result = result.model_dump(by_alias=True, mode="json")
    content = result.get("structuredContent") or {}
    if result.get("isError"):
        error = content.get("error") or {}
        text = " ".join(str(part.get("text", "")) for part in result.get("content") or () if isinstance(part, dict))
        raise error_for_code(str(error.get("code", "homeport_error")), str(error.get("message") or text))
    return dict(content)
