"""The one path every tool call takes, over MCP, from the shell and from the dashboard.

Two functions, the same for every adapter and every configuration:

    decide(tool, arguments, request) -> Route       the steps in `STEPS`, always in this order:
      validate    the arguments against the tool's schema; unknown ones refused     `ToolSpec.validate`
      read_only   a tool whose declared effect changes anything, on --read-only     `Effect.changes`
      allowlist   the caller's tool allowlist (access rules)                          `WorkspaceAccess.check_tool`
      secrets     what a write carries (tools declared with `Scan.ARGUMENTS`)         `SecretGate.check`
      resolve     the workspace from its sources, within the guards and client roots `WorkspaceResolver`
      access      the caller's access to that workspace                               `WorkspaceAccess.check`
      route       here, the project's team server, or the live instance that owns it `TeamRouter`, `Forwarder`

    perform(route) -> result                        the steps in `PERFORM_STEPS`:
      open        the store (opened, or created for writes), or the policy-checked file area
      run         the executor, its writes recorded as the caller's (principal, client, tool)
      record      overrides of the secret check, and the memory queued for embedding
      shape       the result with `workspace` added

A route that leaves this process is handed to the mesh (`homeport.mesh`) with the tool's name,
the workspace and the arguments; the other side runs this whole path again. The async edge
(`call`: MCP and the dashboard) and the blocking edge (`call_blocking`: the shell) are a few lines
around the same two functions. No tool sees the raw request, so no tool can skip a step, and a
change for speed in one step cannot remove another. Errors are `HomeportError`s; each adapter
turns them into its own kind of answer in one place.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import anyio.to_thread
import pydantic_core

from homeport import __version__
from homeport.core.catalog import Effect, Needs, Scan, ToolSpec
from homeport.core.project_switches import check_project_switches
from homeport.core.runtime import Runtime, tool_result
from homeport.core.secret_gate import SecretGate
from homeport.errors import (
    InvalidArgumentError,
    LogicalWorkspaceError,
    OwnerUnprovenError,
    PermissionDeniedError,
    StoreError,
    UnknownArgumentError,
    WorkspaceError,
    error_for_code,
)
from homeport.registry import Owner
from homeport.store import Store, branches
from homeport.store.loop_calls import MustWait, may_wait, on_loop
from homeport.store.provenance import Writer, writing_as
from homeport.workspace import CallInputs, Workspace

if TYPE_CHECKING:
    from homeport.core.file_access import OpenArea
    from homeport.mesh.forwarding import Forwarder
    from homeport.mesh.team import TeamRoute

__all__ = [
    "PERFORM_STEPS",
    "STEPS",
    "Call",
    "CallPipeline",
    "CallRequest",
    "LocalRequest",
    "Route",
    "as_served",
    "owners_answer",
    "unknown_arguments_error",
]

# The workspace names other servers use: a call that carries one is told to use `workspace`.
FOREIGN_WORKSPACE_NAMES = frozenset(
    {"workspace_id", "projectRoot", "project_root", "project_path", "workspace_root", "cwd", "projectPath", "root"}
)


# Tools whose new decisions and patterns are not scoped to the branch they are written on: what they
# write was decided elsewhere (an import) or already belonged somewhere (a restored version).
_UNSCOPED_TOOLS = frozenset({"import", "import_from", "restore_version"})
# Arguments that are never written as memory text: not scanned for secrets.
_NOT_SCANNED = frozenset({"workspace", "allow_secrets"})
# What a file tool's effect asks of the file-area policy.
_FILE_ACTIONS = {Effect.READ: "read", Effect.UPDATE: "write", Effect.WRITE: "write", Effect.DELETE: "delete"}


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
    area: OpenArea | None = None  # file tools: the folder's area, the policy already checked
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


STEPS = ("validate", "read_only", "allowlist", "secrets", "resolve", "access", "route")
PERFORM_STEPS = ("open", "run", "record", "shape")

Destination = Literal["here", "team", "owner"]


@dataclass
class Route:
    """A decided call: the tool, its checked arguments, its workspace, and where it is served."""

    spec: ToolSpec
    given: dict[str, Any]  # the arguments as the caller sent them: what goes to another instance
    request: CallRequest
    arguments: dict[str, Any] = field(default_factory=dict)  # validated, with the defaults filled in
    inputs: CallInputs | None = None
    workspace: Workspace | None = None
    error: WorkspaceError | None = None  # only for tools that report an unresolvable call
    secrets: SecretGate | None = None  # tools declared with `Scan`
    to: Destination = "here"
    team: TeamRoute | None = None  # to == "team"
    owner: tuple[str, Owner] | None = None  # to == "owner": (the root it registered, the owner)
    steps: list[str] = field(default_factory=list)  # the steps this call passed, in order (a test reads them)
    # Called by another server's name (`catalog.Alias`): `spec` is the tool it runs, this the alias and its
    # validated arguments, for the result's shape. Forwarded, the call goes as `spec` with its arguments.
    alias: ToolSpec | None = None
    alias_arguments: dict[str, Any] = field(default_factory=dict)


class CallPipeline:
    """Decide and perform declared tools for one runtime."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._threaded = runtime.settings.transport == "http"
        # A PostgreSQL store waits on the network for every statement: its calls always go to a thread.
        self._store_on_loop = runtime.stores.postgres is None
        self._database_limiters: dict[Path, anyio.CapacityLimiter] = {}

    # -- the edges

    async def call(self, spec: ToolSpec, arguments: dict[str, Any], request: CallRequest) -> dict[str, Any] | Any:
        """Run `spec` with a client's `arguments` (as sent) for an MCP request or a dashboard page.

        Returns the result dict, the owner's or team server's result as it came, or the client-input
        request (roots, 2026-07-28) to send back as is.

        Raises:
            HomeportError: a step refused the call, or the executor did.
        """
        inputs: CallInputs | None = None
        if spec.takes_workspace or spec.workspace_argument != "workspace":
            argument = arguments.get(spec.workspace_argument)
            attached = await request.attach_roots(request.inputs(argument if isinstance(argument, str) else None))
            if not isinstance(attached, CallInputs):
                return attached
            inputs = attached
        if not self._threaded:  # stdio: one client, and a thread hop would cost more than most reads
            route = self.decide(spec, arguments, request, inputs)
            if route.to != "here":
                try:
                    return await self._leave(route)
                except OwnerUnprovenError:
                    route.to, route.owner = "here", None  # nothing was sent, and the entry is gone: served here
            return self.perform(route)
        # HTTP: decided on the loop (resolution is a few stat calls, less than a thread hop), unless a
        # step of it could wait (`loop_calls`: a registry that changed); then on a worker thread.
        try:
            with on_loop():
                route = self.decide(spec, arguments, request, inputs)
        except MustWait:
            route = await anyio.to_thread.run_sync(self.decide, spec, arguments, request, inputs)
        if route.to != "here":
            try:
                return await self._leave(route)
            except OwnerUnprovenError:
                route.to, route.owner = "here", None  # nothing was sent, and the entry is gone: served here
        if route.spec.needs is Needs.STORE and self._store_on_loop:
            # A memory call on SQLite runs here on the loop unless a step of it could wait: then, before it
            # has changed anything, it is performed again from the start on a worker thread.
            try:
                with on_loop():
                    return self.perform(route)
            except MustWait:
                pass
        # One workspace's project-database calls hold at most as many threads as its connections; the
        # rest wait here on the loop, where waiting costs nothing, instead of being refused.
        limiter = self._database_limiter(route)
        return await anyio.to_thread.run_sync(self.perform, route, limiter=limiter)

    def _database_limiter(self, route: Route) -> anyio.CapacityLimiter | None:
        if route.spec.group != "db" or route.workspace is None:
            return None  # the default limiter: anyio's shared pool of worker threads
        root = route.workspace.root
        limiter = self._database_limiters.get(root)
        if limiter is None:
            limiter = anyio.CapacityLimiter(self.runtime.databases.max_calls_per_workspace)
            limiter = self._database_limiters.setdefault(root, limiter)
        return limiter

    def call_blocking(
        self,
        spec: ToolSpec,
        arguments: dict[str, Any],
        request: CallRequest,
        confirm: Callable[[Workspace], None] | None = None,
    ) -> dict[str, Any]:
        """The shell's call: the same steps, then the team server, the owner (the daemon, a `serve --own`)
        or this process. A remote error is raised here as the same class. `confirm(workspace)` runs once
        the call is decided and before anything is changed, and may abort.

        Raises:
            HomeportError: as `call`; TeamServerUnavailableError when the team server gives no answer.
        """
        inputs = request.inputs(None) if spec.takes_workspace else None
        route = self.decide(spec, arguments, request, inputs)
        if confirm is not None and route.workspace is not None:
            confirm(route.workspace)
        if route.to == "team":
            return _alias_shaped_dict(route, self._team_answer(route))
        if route.to == "owner":
            owned, owner = self._owner(route)
            try:
                result = self._forwarder.forward_blocking(owned, owner, self._root(route), **self._carried(route))
            except OwnerUnprovenError:
                route.to, route.owner = "here", None  # nothing was sent, and the entry is gone: served here
            else:
                answer: dict[str, Any] = self._as_resolved_here(route, owners_answer(result))
                return _alias_shaped_dict(route, answer)
        return self.perform(route)

    # -- decide

    def decide(
        self, spec: ToolSpec, arguments: dict[str, Any], request: CallRequest, inputs: CallInputs | None = None
    ) -> Route:
        """Run the steps of `STEPS` in order and say where the call is served.

        `inputs` are the request's (with the client's roots attached); by default `request.inputs`.

        Raises:
            HomeportError: a step refused the call.
        """
        if spec.alias is not None:
            return self._decide_alias(spec, arguments, request, inputs)
        route = Route(spec, arguments, request)
        steps = route.steps
        # validate: the tool's own schema, unknown arguments refused before anything else
        unknown = [name for name in arguments if name not in spec.accepted]
        if unknown:
            raise unknown_arguments_error(spec.name, unknown, list(spec.accepted))
        route.arguments = arguments = spec.validate(arguments)
        steps.append("validate")
        # read_only: before forwarding too, so that an owner started without --read-only never takes it
        if spec.write and self.runtime.settings.read_only:
            raise PermissionDeniedError(
                f"{spec.name} changes what it touches, and this server was started with --read-only; nothing was "
                "changed. Restart it without --read-only to make changes"
            )
        steps.append("read_only")
        # allowlist: a refused tool is scanned and resolved never
        self.runtime.access.check_tool(request.principal, request.claims, spec.name, spec.group)
        steps.append("allowlist")
        # secrets: before resolution, so that a refused write does not even create the store
        if spec.scan is not Scan.NONE:
            route.secrets = SecretGate(spec.name, allowed=bool(arguments.get("allow_secrets")))
            if spec.scan is Scan.ARGUMENTS:
                route.secrets.check({k: v for k, v in arguments.items() if k not in _NOT_SCANNED})
        steps.append("secrets")
        # resolve and access: checked again on every call whatever named the workspace (a handle or a
        # session is no capability)
        if spec.takes_workspace:
            argument = arguments.get("workspace") or None
            if inputs is None:
                inputs = request.inputs(argument)
            elif inputs.argument != argument:
                inputs = dataclasses.replace(inputs, argument=argument)
            route.inputs = inputs
            try:
                route.workspace = workspace = self.runtime.resolve(inputs, write=spec.write)
                steps.append("resolve")
                self.runtime.access.check(
                    request.principal,
                    workspace.root,
                    write=spec.write,
                    claims=request.claims,
                    key=workspace.logical_key,
                )
                steps.append("access")
            except WorkspaceError as exc:
                if not spec.report_unresolved:
                    raise
                route.workspace, route.error = None, exc
                steps.extend(step for step in ("resolve", "access") if step not in steps)
        else:
            steps.extend(("resolve", "access"))
        if route.workspace is not None and route.workspace.logical_key is None:
            # The project's own switches ([database] enabled, [tools] deny): part of its access, checked
            # here before the call may leave for an owner, which checks them again.
            check_project_switches(route.workspace.root, spec, route.alias)
        self._route(route)
        steps.append("route")
        return route

    def _decide_alias(
        self, alias: ToolSpec, arguments: dict[str, Any], request: CallRequest, inputs: CallInputs | None
    ) -> Route:
        """Another server's name: its arguments checked against its own schema (unknown ones refused, by its
        names), mapped onto the tool it names, and that tool decided like any call of it (every step)."""
        assert alias.alias is not None
        unknown = [name for name in arguments if name not in alias.accepted]
        if unknown:
            raise unknown_arguments_error(alias.name, unknown, list(alias.accepted))
        checked = alias.validate(arguments)
        target = alias.alias.target
        mapped = alias.alias.target_arguments(checked)
        if alias.alias.workspace_argument is not None and not target.takes_workspace:
            # The tool needs no workspace (a static answer); the one named is still resolved and checked,
            # never ignored: a wrong workspace_id is the same error it is everywhere else.
            argument = mapped.pop("workspace")
            named = request.inputs(argument) if inputs is None else dataclasses.replace(inputs, argument=argument)
            workspace = self.runtime.resolve(named, write=target.write)
            inputs = None  # the tool itself takes none
            self.runtime.access.check(
                request.principal, workspace.root, write=target.write, claims=request.claims, key=workspace.logical_key
            )
        route = self.decide(target, mapped, request, inputs)
        route.alias, route.alias_arguments = alias, checked
        if route.workspace is not None and route.workspace.logical_key is None:
            check_project_switches(route.workspace.root, target, alias)  # [tools] deny may name the alias
        return route

    def _route(self, route: Route) -> None:
        """Here, the project's team server (memory calls of a trusted [team] project), or its owner."""
        spec, workspace = route.spec, route.workspace
        if route.request.forwarded or not spec.goes_to_owner or workspace is None or workspace.logical_key is not None:
            return  # a forwarded call is served here (one hop at most); a key is served where its store is
        # A read across several workspaces (search) is served where the client's roots are known: an
        # owner, sent the call, could not bound the other workspaces by them, and refuses it.
        several = bool(route.arguments.get("workspaces")) and not spec.write
        team = self.runtime.team
        if team is not None and spec.goes_to_team:
            may_wait("the project's team configuration")
            route.team = team.route(workspace.root)
            if route.team is not None:
                if several:  # its memory is on the team server; the local store would answer wrongly
                    raise InvalidArgumentError(
                        f"{spec.name} with workspaces is not available in a project whose memory is on its team "
                        f"server {route.team.url}: search it without workspaces, and the others one by one"
                    )
                route.to = "team"
                return
        if several:
            return
        forwarder = self.runtime.forwarder
        if forwarder is None:
            return
        anyone_else = forwarder.anyone_else_if_current()  # one stat while the registry is unchanged
        if anyone_else is None:
            may_wait("the instance registry")  # reading it takes its lock and asks owners for /healthz
            anyone_else = forwarder.anyone_else()
        if anyone_else:
            route.owner = forwarder.owner_of(workspace.root)
            if route.owner is not None:
                route.to = "owner"

    # -- leave

    async def _leave(self, route: Route) -> Any:
        """The team server's or the owner's result, for the async edge."""
        if route.to == "team":
            assert self.runtime.team is not None and route.team is not None
            return _alias_shaped(route, await self.runtime.team.forward(route.team, route.spec.name, self._sent(route)))
        owned, owner = self._owner(route)
        result = await self._forwarder.forward(owned, owner, self._root(route), **self._carried(route))
        return _alias_shaped(route, self._as_resolved_here(route, result))

    def _team_answer(self, route: Route) -> dict[str, Any]:
        assert self.runtime.team is not None and route.team is not None
        spec, team = route.spec, route.team
        try:
            answer = owners_answer(
                self.runtime.team.forward_blocking(team, spec.name, self._sent(route), route.request.client)
            )
        except LogicalWorkspaceError as exc:
            raise LogicalWorkspaceError(
                f"{spec.name} reads or writes the project's own files, and this project's memory is on "
                f"its team server {team.url} (project {team.key}), which cannot see them; it is not "
                "available in a team project (the other memory commands are). Nothing was changed"
            ) from exc
        if isinstance(answer.get("workspace"), dict):
            answer["workspace"] = {**answer["workspace"], "team": team.url}
        return answer

    @property
    def _forwarder(self) -> Forwarder:
        assert self.runtime.forwarder is not None
        return self.runtime.forwarder

    @staticmethod
    def _owner(route: Route) -> tuple[str, Owner]:
        assert route.owner is not None
        return route.owner

    @staticmethod
    def _root(route: Route) -> Path:
        assert route.workspace is not None
        return route.workspace.root

    @staticmethod
    def _sent(route: Route) -> dict[str, Any]:
        """The arguments as the caller sent them, without `workspace`: it travels in a header instead."""
        return {k: v for k, v in route.given.items() if k != "workspace" or route.spec.declares_workspace}

    def _carried(self, route: Route) -> dict[str, Any]:
        request = route.request
        return {
            "tool": route.spec.name,
            "arguments": self._sent(route),
            "agent": request.agent,
            "claims": request.claims,
            "client": request.client,
        }

    @staticmethod
    def _as_resolved_here(route: Route, result: Any) -> Any:
        """The owner's result naming the workspace's source as this process resolved it, and the owner.

        The owner is handed the root in a header and would say `header`; the caller chose the
        workspace by an argument, a flag, its roots or its directory, and the result says so, and
        which process served it (`served_by`: the owner's pid and endpoint).
        """
        assert route.workspace is not None and route.owner is not None
        owner = route.owner[1]
        return as_served(result, route.workspace.source, {"pid": owner.pid, "endpoint": owner.endpoint})

    # -- perform

    def perform(self, route: Route) -> dict[str, Any]:
        """Open what the call needs, run the executor, record, shape: the steps of `PERFORM_STEPS`.

        Raises:
            HomeportError: the store, the file area's policy or the executor refused the call.
        """
        spec, request, arguments, steps = route.spec, route.request, route.arguments, route.steps
        del steps[len(STEPS) :]  # performed again from the start (on a thread, after MustWait on the loop)
        call = Call(self.runtime, request, route.inputs, tool=spec.name, workspace=route.workspace, error=route.error)
        call.secrets = route.secrets
        if call.workspace is not None and spec.needs is Needs.STORE:
            call.store = self.runtime.store_for(call.workspace, write=spec.write, create=spec.creates_store)
        elif spec.needs is Needs.FILES and "folder_id" in arguments:
            call.area = self.runtime.files.open(
                request.agent, arguments["folder_id"], arguments["scope"], _FILE_ACTIONS[spec.effect]
            )
        steps.append("open")
        kwargs = {k: v for k, v in arguments.items() if k != "workspace" or spec.declares_workspace}
        if call.secrets is not None:
            kwargs.pop("allow_secrets", None)
        client, client_version = request.client
        writer = Writer(request.principal, client, client_version, spec.name)
        workspace = call.workspace
        # Where its writes are made and its reads see from: the work tree's branch (none for a logical key).
        tree = workspace.root if call.store is not None and workspace and workspace.logical_key is None else None
        scoping = spec.name not in _UNSCOPED_TOOLS
        try:
            with writing_as(writer), branches.working_in(tree, scoping=scoping, store=call.store) as place:
                result = spec.run(call, **kwargs)
        except OverflowError as exc:
            # Out-of-range input that reached a library (an id past 64 bits, a date past year 9999).
            raise InvalidArgumentError(f"{spec.name}: an argument is out of range ({exc})") from exc
        steps.append("run")
        if spec.write and isinstance(result, dict):
            result = {**result, "written_by": writer.describe()}
        if call.secrets is not None:
            call.secrets.record(call.store, request.principal)
        if call.store is not None:  # queues items for embedding; never waits for it
            self.runtime.semantic.notice(call.store, wrote=spec.write)
        steps.append("record")
        steps.append("shape")
        if call.workspace is None or spec.report_unresolved:
            shaped = result if isinstance(result, dict) else {spec.result_key or "result": result}
        else:
            shaped = tool_result(call.workspace, result, spec.result_key)
        if place.hidden:  # what its reads left out: decisions and patterns of branches not merged here
            shaped = {**shaped, **place.report()}
        return _alias_shaped_dict(route, shaped)


def _alias_shaped_dict(route: Route, result: dict[str, Any]) -> dict[str, Any]:
    """A local (or owner's, as a local call returns it) result in the shape of the alias it was called by."""
    if route.alias is None or route.alias.alias is None:
        return result
    return route.alias.alias.shaped(result, route.alias_arguments)


def _alias_shaped(route: Route, result: Any) -> Any:
    """`result` (a result dict, or the SDK's `CallToolResult` from an owner) in the shape the alias the
    call was made by documents; an error, or a call by Homeport's own name, as it is."""
    if route.alias is None or route.alias.alias is None:
        return result
    alias, checked = route.alias.alias, route.alias_arguments
    if isinstance(result, dict):
        return alias.shaped(result, checked) if "isError" not in result else result
    content = getattr(result, "structured_content", None)
    if getattr(result, "is_error", False) or not isinstance(content, dict):
        return result
    shaped = alias.shaped(content, checked)
    return result.model_copy(
        update={"structured_content": shaped, "content": _reworded(result.content, content, shaped)}
    )


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


def as_served(result: Any, source: str, served_by: dict[str, Any]) -> Any:
    """`result` (a result dict, its JSON, or the SDK's `CallToolResult`) with `workspace.source` set to
    `source` and `workspace.served_by` to `served_by`."""
    if isinstance(result, dict):
        content = result.get("structuredContent") if "structuredContent" in result else result
        if isinstance(content, dict) and isinstance(content.get("workspace"), dict):
            content["workspace"] = {**content["workspace"], "source": source, "served_by": served_by}
        return result
    content = getattr(result, "structured_content", None)
    if isinstance(content, dict) and isinstance(content.get("workspace"), dict):
        workspace = content["workspace"]
        if workspace.get("source") != source or workspace.get("served_by") != served_by:
            fixed = {**content, "workspace": {**workspace, "source": source, "served_by": served_by}}
            result = result.model_copy(
                update={"structured_content": fixed, "content": _reworded(result.content, content, fixed)}
            )
    return result


def _reworded(parts: Any, old: dict[str, Any], new: dict[str, Any]) -> Any:
    """The text parts of a result whose JSON was `old`, as `new` (the same serialisation the SDK gives)."""
    out = []
    for part in parts or ():
        text = getattr(part, "text", None)
        if text is not None:
            try:
                same = json.loads(text) == old
            except ValueError:
                same = False
            if same:
                part = part.model_copy(update={"text": pydantic_core.to_json(new, fallback=str, indent=2).decode()})
        out.append(part)
    return out


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
