"""Every tool, declared once: name, group, effect, description, what it needs, and the executor call.

A tool is a plain function whose first parameter is the `Call` the pipeline prepared and whose
other parameters are the tool's arguments (their annotations are the input schema):

    @CATALOG.tool("memory", WRITE, "Record a decision ...")
    def log_decision(call: Call, summary: str, rationale: str | None = None) -> dict[str, Any]:
        return decisions.log_decision(call.require_store(), summary, rationale=rationale)

A tool declares one `Effect` (what it does to what it touches), and everything that depends on it is
derived from it, never declared beside it: the MCP hints, whether its workspace is resolved as a
write, and whether `--read-only` refuses it. Two flags that could disagree are how `--read-only`
once let file writes through.

The declaration says what the call needs (`Needs`); the pipeline (`core.pipeline`) supplies it
the same way for every tool, over MCP and from the CLI: resolution from every source, the
client's roots as a bound, the guards, the caller's access, strict arguments, the thread hop,
one error mapping, and `workspace` in the result. A tool cannot skip any of it, because it never
sees the raw request. Nothing here imports the MCP SDK: the SDK binding is `server.mcp_tools`.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from homeport.errors import InvalidArgumentError

__all__ = [
    "CATALOG",
    "COMPAT_GROUPS",
    "DASHBOARD",
    "DELETE",
    "GROUPS",
    "QUERY",
    "READ",
    "REPLACE",
    "SESSION",
    "WRITE",
    "WRITE_IDEMPOTENT",
    "Alias",
    "Effect",
    "Hints",
    "Needs",
    "Scan",
    "ToolCatalog",
    "ToolSpec",
    "unknown_tool",
]


@dataclass(frozen=True)
class Hints:
    """The behaviour a client may rely on (MCP tool annotations); every tool declares all three."""

    read_only: bool
    destructive: bool
    idempotent: bool


class Effect(enum.Enum):
    """What a tool does to what it touches: the one declaration its hints and refusals derive from."""

    READ = "read"  # looks, changes nothing
    WRITE = "write"  # adds something new each time (a decision, a progress entry)
    UPDATE = "update"  # sets something to a value: the same outcome when repeated
    DELETE = "delete"  # removes something
    REPLACE = "replace"  # overwrites what was there with the same outcome each time (export, import)
    # Runs the caller's statement on the project's own database: read-only unless the workspace's
    # config allows writes, and read-only whatever it says on a --read-only server.
    QUERY = "query"
    # Changes only this connection's state (use_workspace's session default): nothing stored.
    SESSION = "session"

    @property
    def hints(self) -> Hints:
        return _HINTS[self]

    @property
    def changes(self) -> bool:
        """It changes stored data (memory, files): refused by --read-only, its workspace resolved as a write."""
        return self in (Effect.WRITE, Effect.UPDATE, Effect.DELETE, Effect.REPLACE)


_HINTS = {
    Effect.READ: Hints(read_only=True, destructive=False, idempotent=True),
    Effect.WRITE: Hints(read_only=False, destructive=False, idempotent=False),
    Effect.UPDATE: Hints(read_only=False, destructive=False, idempotent=True),
    Effect.DELETE: Hints(read_only=False, destructive=True, idempotent=False),
    Effect.REPLACE: Hints(read_only=False, destructive=True, idempotent=True),
    # May change the database when the workspace allows it: not declared read-only.
    Effect.QUERY: Hints(read_only=False, destructive=False, idempotent=False),
    Effect.SESSION: Hints(read_only=False, destructive=False, idempotent=True),
}

# The names declarations use.
READ = Effect.READ
WRITE = Effect.WRITE
WRITE_IDEMPOTENT = Effect.UPDATE
DELETE = Effect.DELETE
REPLACE = Effect.REPLACE
QUERY = Effect.QUERY
SESSION = Effect.SESSION


class Needs(enum.Enum):
    """What a tool's executor needs from the pipeline."""

    STORE = "store"  # the workspace and its memory store (None on reads of a workspace without one)
    WORKSPACE = "workspace"  # the workspace only: files under its root, its database
    FILES = "files"  # the calling agent's file areas; no workspace argument
    NOTHING = "nothing"  # static answers (the memory's schema)


class Scan(enum.Enum):
    """Whether what a tool writes is checked for secrets first (`homeport.secret_scan`).

    A tool that scans takes `allow_secrets` (default false); the pipeline refuses a write that
    carries a secret unless it is true, and records every override in the memory.
    """

    NONE = "none"  # writes nothing an agent typed (reads, deletes, files, the project database)
    ARGUMENTS = "arguments"  # the pipeline scans the arguments before the executor runs
    CONTENT = "content"  # the executor reads what it writes (files) and passes it to `Call.screen`


AllowSecretsArg = Annotated[
    bool,
    # Short on purpose: ten tools carry it, and every character is context on every turn.
    Field(description="Write even if it looks like a secret (refused by default); the override is recorded."),
]


@dataclass(frozen=True)
class Alias:
    """Another server's name for a Homeport tool: its own arguments, mapped onto the tool it runs.

    `translate` takes the alias's arguments (never its workspace argument nor `allow_secrets`, which
    the catalog carries over itself, so that no mapping can drop them) and returns the target's;
    None values are left out (the target's defaults apply). `shape` turns the target's result
    (with `workspace`) into the shape the other server documents; it gets the alias's arguments too.
    """

    target: ToolSpec
    translate: Callable[..., dict[str, Any]]
    workspace_argument: str | None = None  # the other server's name for `workspace` (workspace_id, projectRoot)
    shape: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]] | None = None

    def target_arguments(self, checked: dict[str, Any]) -> dict[str, Any]:
        """The target's arguments for the alias's validated `checked` ones.

        Raises:
            InvalidArgumentError: the mapping refused a value the target cannot take.
        """
        carried = {self.workspace_argument, "allow_secrets"}
        own = {k: v for k, v in checked.items() if k not in carried}
        out = {k: v for k, v in self.translate(**own).items() if v is not None}
        if self.workspace_argument is not None and checked.get(self.workspace_argument) is not None:
            out["workspace"] = checked[self.workspace_argument]
        if "allow_secrets" in checked:
            out["allow_secrets"] = checked["allow_secrets"]
        return out

    def shaped(self, result: dict[str, Any], checked: dict[str, Any]) -> dict[str, Any]:
        return result if self.shape is None else self.shape(result, checked)


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its contract (name, arguments, effect) and how the pipeline prepares its call."""

    name: str
    group: str
    run: Callable[..., Any]
    effect: Effect
    description: str
    needs: Needs = Needs.STORE
    create_store: bool | None = None  # default: `write`
    result_key: str | None = None  # a non-dict result is returned under this key
    report_unresolved: bool = False  # where_am_i: an unresolvable call is an answer, not an error
    scan: Scan = Scan.NONE
    parameters: tuple[inspect.Parameter, ...] = field(default=(), compare=False)
    alias: Alias | None = field(default=None, compare=False)  # another server's name for a tool

    @property
    def hints(self) -> Hints:
        return self.effect.hints

    @cached_property
    def write(self) -> bool:
        """Resolved as a write (--require-explicit-workspace, no folder of projects); refused by --read-only."""
        return self.effect.changes

    @cached_property  # asked twice on every call; after the first, a plain attribute
    def takes_workspace(self) -> bool:
        return self.needs in (Needs.STORE, Needs.WORKSPACE)

    @cached_property
    def goes_to_owner(self) -> bool:
        """Tools that act on a workspace go to its owner; the workspace tools describe this process's routing."""
        return self.takes_workspace and self.group != "workspace"

    @cached_property
    def goes_to_team(self) -> bool:
        """Memory calls: the tools that need the workspace's store (the project database stays local)."""
        return self.needs is Needs.STORE

    @property
    def creates_store(self) -> bool:
        return self.write if self.create_store is None else self.create_store

    @cached_property
    def declares_workspace(self) -> bool:
        """The executor itself takes `workspace` (where_am_i, use_workspace); else the pipeline consumes it."""
        return any(p.name == "workspace" for p in self.parameters)

    @cached_property
    def workspace_argument(self) -> str:
        """The name a client gives the workspace in: `workspace`, or an alias's (workspace_id, projectRoot)."""
        if self.alias is not None and self.alias.workspace_argument is not None:
            return self.alias.workspace_argument
        return "workspace"

    @cached_property
    def arguments(self) -> tuple[inspect.Parameter, ...]:
        """Every argument a client may send: the executor's, plus `workspace` where the pipeline resolves one."""
        if self.alias is not None:  # declared whole, its workspace argument included
            return self.parameters
        if self.takes_workspace and not self.declares_workspace:
            return (*self.parameters, _WORKSPACE_PARAMETER)
        return self.parameters

    @cached_property
    def accepted(self) -> frozenset[str]:
        return frozenset(p.name for p in self.arguments)

    @cached_property
    def _arguments_model(self) -> type[BaseModel]:
        fields: dict[str, Any] = {
            p.name: (p.annotation, ... if p.default is inspect.Parameter.empty else p.default) for p in self.arguments
        }
        config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
        return create_model(f"{self.name}_arguments", __config__=config, **fields)

    @cached_property
    def _json_arguments(self) -> frozenset[str]:
        """Arguments that are not text: a client may send them as JSON inside a string (some do, always)."""
        return frozenset(p.name for p in self.arguments if p.annotation is not str and "str" not in str(p.annotation))

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Check `arguments` against the tool's input schema (every adapter's calls, in the pipeline's first step).

        A list or object sent as JSON text where the schema wants a list or object is read as JSON first,
        as the MCP SDK does.

        Raises:
            InvalidArgumentError: an argument is missing, unknown, of the wrong type or out of range.
        """
        try:
            model = self._arguments_model.model_validate(arguments)
        except ValidationError as exc:
            parsed = _json_in_text(arguments, self._json_arguments)
            if parsed is None:
                raise arguments_error(self.name, exc) from None
            try:
                model = self._arguments_model.model_validate(parsed)
            except ValidationError:
                raise arguments_error(self.name, exc) from None
        return {name: getattr(model, name) for name in type(model).model_fields}


_WORKSPACE_PARAMETER = inspect.Parameter(
    "workspace",
    inspect.Parameter.KEYWORD_ONLY,
    default=None,
    annotation=Annotated[
        str | None,
        Field(description="Project: absolute path, file:// URI or use_workspace handle. Omit when already set."),
    ],
)


def _workspace_annotation(name: str) -> Any:
    """The type of an alias's workspace argument: required, and the same values `workspace` takes."""
    return Annotated[
        str,
        Field(
            min_length=1,
            description=f"Project: absolute path (or file:// URI); Homeport resolves and checks {name} as `workspace`.",
        ),
    ]


def _json_in_text(arguments: dict[str, Any], names: frozenset[str]) -> dict[str, Any] | None:
    """`arguments` with the JSON lists and objects sent as text read, or None when there is none."""
    changed = dict(arguments)
    for name, value in arguments.items():
        if name in names and isinstance(value, str):
            try:
                parsed = json.loads(value)
            except ValueError:
                continue
            if isinstance(parsed, (dict, list)):
                changed[name] = parsed
    return changed if changed != arguments else None


def arguments_error(tool: str, exc: ValidationError) -> InvalidArgumentError:
    """The problems of a validation, by argument, each naming the rejected value (cut short: it may be huge)."""
    problems = []
    for err in exc.errors():
        where = ".".join(str(part) for part in err["loc"]) or "arguments"
        shown = "" if err["type"] == "missing" else f" (got {_short(err['input'])})"
        problems.append(f"{where}: {err['msg']}{shown}")
    return InvalidArgumentError(f"{tool}: {'; '.join(problems)}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:50]}... ({len(text):,} characters)"


# The groups `--tools` exposes, in the order tools are listed to clients.
GROUPS = ("workspace", "memory", "files", "db")
# Other servers' names for Homeport's tools (`Alias`), served only when named in `--tools`: ConPort's
# tools share 17 names with the memory group, so the two are never served together.
COMPAT_GROUPS = ("conport", "devdb")
# The tools the dashboard's pages call through the pipeline; never offered to MCP clients.
DASHBOARD = "dashboard"


class ToolCatalog:
    """The tools, by group in `GROUPS` order and in declaration order within a group."""

    def __init__(self) -> None:
        self._specs: dict[str, ToolSpec] = {}
        # Aliases by group, then name: their names may be a Homeport tool's (ConPort's log_decision).
        self._aliases: dict[str, dict[str, ToolSpec]] = {group: {} for group in COMPAT_GROUPS}

    def tool(
        self,
        group: str,
        effect: Effect,
        description: str,
        *,
        name: str | None = None,
        needs: Needs = Needs.STORE,
        create_store: bool | None = None,
        key: str | None = None,
        report_unresolved: bool = False,
        scan: Scan = Scan.NONE,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Declare the decorated function as a tool (its first parameter receives the `Call`).

        With `scan`, the tool also takes `allow_secrets`, which the pipeline consumes: the executor
        never sees it.
        """

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            tool_name = name or fn.__name__
            if group not in GROUPS and group != DASHBOARD:
                raise ValueError(f"tool {tool_name}: unknown group {group}")
            if tool_name in self._specs:
                raise ValueError(f"tool {tool_name} is declared twice")
            params = tuple(inspect.signature(fn, eval_str=True).parameters.values())[1:]
            if not isinstance(effect, Effect):
                raise TypeError(f"tool {tool_name}: declare one Effect (READ, WRITE, ...), not {effect!r}")
            if scan is not Scan.NONE:
                if not effect.changes:
                    raise ValueError(f"tool {tool_name}: only a write can scan for secrets")
                allow = inspect.Parameter(
                    "allow_secrets", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=AllowSecretsArg
                )
                params = (*params, allow)
            self._specs[tool_name] = ToolSpec(
                name=tool_name,
                group=group,
                run=fn,
                effect=effect,
                description=description,
                needs=needs,
                create_store=create_store,
                result_key=key,
                report_unresolved=report_unresolved,
                scan=scan,
                parameters=params,
            )
            return fn

        return register

    def alias(
        self,
        group: str,
        target: str,
        description: str,
        *,
        name: str | None = None,
        workspace: str | None = None,
        shape: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]] | None = None,
    ) -> Callable[[Callable[..., dict[str, Any]]], Callable[..., dict[str, Any]]]:
        """Declare the decorated function as `group`'s name for the tool `target`: its parameters are the
        alias's arguments, and it returns the target's. Everything else is the target's (effect, needs,
        secret scan), so the pipeline runs the alias exactly as the tool it names.

        `workspace` names the other server's workspace argument: it is required, and the pipeline
        resolves and checks it as `workspace`. `allow_secrets` is offered where the target scans.
        """

        def register(fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
            alias_name = name or fn.__name__
            if group not in COMPAT_GROUPS:
                raise ValueError(f"alias {alias_name}: unknown compatibility group {group}")
            if alias_name in self._aliases[group]:
                raise ValueError(f"alias {alias_name} is declared twice in {group}")
            spec = self._specs[target]
            params = tuple(inspect.signature(fn, eval_str=True).parameters.values())
            if workspace is not None:
                # A target that needs no workspace (a static answer) still has the one named resolved and
                # checked by the pipeline: never ignored.
                required = inspect.Parameter(
                    workspace, inspect.Parameter.KEYWORD_ONLY, annotation=_workspace_annotation(workspace)
                )
                params = (required, *params)
            if spec.scan is not Scan.NONE:
                params = (*params, next(p for p in spec.parameters if p.name == "allow_secrets"))
            self._aliases[group][alias_name] = dataclasses.replace(
                spec,
                name=alias_name,
                group=group,
                description=description,
                parameters=params,
                report_unresolved=False,
                alias=Alias(target=spec, translate=fn, workspace_argument=workspace, shape=shape),
            )
            return fn

        return register

    def __getitem__(self, name: str) -> ToolSpec:
        spec = self.get(name)
        if spec is None:
            raise KeyError(name)
        return spec

    def aliases(self, group: str) -> dict[str, ToolSpec]:
        """The aliases of a compatibility group, by name."""
        return dict(self._aliases[group])

    def get(self, name: str) -> ToolSpec | None:
        """The tool of that name, else the first compatibility group's alias of that name, else None."""
        spec = self._specs.get(name)
        if spec is None:
            spec = next((a[name] for a in self._aliases.values() if name in a), None)
        return spec

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self.in_groups(GROUPS))

    def groups(self) -> tuple[str, ...]:
        return GROUPS

    def in_groups(self, groups: Iterable[str]) -> list[ToolSpec]:
        wanted = set(groups)
        specs = list(self._specs.values())
        specs += [spec for group in COMPAT_GROUPS if group in wanted for spec in self._aliases[group].values()]
        order = (*GROUPS, *COMPAT_GROUPS, DASHBOARD)
        return sorted((s for s in specs if s.group in wanted), key=lambda s: order.index(s.group))


CATALOG = ToolCatalog()


def unknown_tool(name: str, served: Iterable[str]) -> str:
    """The answer to a call of a tool this server does not serve, when its tool groups are `served`.

    The SDK's own words first ("Unknown tool: NAME."), then what to do: the tool of another group and how to
    start the server with it, or the served tool the name was meant to be (a misspelling, or a client's
    prefixed name such as ``mcp__homeport__log_decision``), or where the names are. Only tools that are
    listed are ever named: the dashboard's are served but not offered.
    """
    import difflib  # only on this error's path

    wanted = set(served)
    groups = tuple(g for g in (*GROUPS, *COMPAT_GROUPS) if g in wanted)
    head = f"Unknown tool: {name}."
    bare = re.split(r"__|[./:]", name)[-1]
    spec = CATALOG.get(name) or CATALOG.get(bare)
    if spec is not None and spec.group in (*GROUPS, *COMPAT_GROUPS) and spec.group not in groups:
        together = {*groups, spec.group} - ({"memory"} if spec.group == "conport" else set())
        if "conport" in together and spec.group == "memory":
            together.discard("conport")
        more = ",".join(g for g in (*GROUPS, *COMPAT_GROUPS) if g in together)
        return (
            f"{head} {spec.name} is in the tool group {spec.group}, which this server was started without (it "
            f"serves {', '.join(groups)}); start it with `--tools {more}` (or HOMEPORT_TOOLS={more}) to offer it."
        )
    offered = [s.name for s in CATALOG.in_groups(groups)]
    where = f"tools/list names the {len(offered)} tools of this server."
    meant = [bare] if bare in offered else difflib.get_close_matches(bare, offered, n=1, cutoff=0.75)
    return f"{head} Did you mean {meant[0]}? {where}" if meant else f"{head} {where}"
