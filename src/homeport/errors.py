"""The exception tree of Homeport.

Every error Homeport raises on purpose derives from `HomeportError`; each carries a short
machine-readable `code` and a message that names the offending value and what to do instead.
Dependency errors (OS, SQLAlchemy, drivers) are translated at the boundary with
``raise X(...) from exc``; the MCP layer turns any `HomeportError` into an ``isError`` result
and the CLI into one line on stderr with a non-zero exit.

    HomeportError
    ├── ConfigError                    bad flags, settings or config files
    ├── InvalidArgumentError           a tool call's arguments do not fit the tool
    │   └── UnknownArgumentError       an argument the tool does not have (never silently dropped)
    ├── SecretDetectedError            a write carries what looks like a secret (names its kind and field)
    ├── WorkspaceError                 a call could not be tied to a workspace
    │   ├── InvalidWorkspaceError      the candidate itself is malformed or missing
    │   ├── WorkspaceDeniedError       a guard refused it (allowlist, client roots, denied roots, data directory)
    │   │   └── WorkspaceContainsProjectsError  a write to a directory that is no project but holds some
    │   ├── AmbiguousWorkspaceError    several client roots and none contains the cwd
    │   ├── WorkspaceUnresolvedError   no source yielded a candidate
    │   ├── ExplicitWorkspaceRequired  a write with only an implicit source under --require-explicit-workspace
    │   └── LogicalWorkspaceError      a tool that needs a directory, called on a logical workspace (a key)
    ├── PermissionDeniedError          the policy refused an action (names the rule)
    │   ├── WorkspaceAccessDeniedError an authenticated agent asked for a workspace outside its organization's roots
    │   └── ToolNotAllowedError        the access rules' tool allowlist of the caller does not list the tool
    ├── StoreError                     the memory store failed
    │   ├── ItemNotFoundError          an id or key that does not exist
    │   ├── InvalidItemError           an argument that does not make a valid item
    │   │   └── ValueTooLargeError     a text or JSON value over its size cap (names the limit)
    │   ├── SemanticSearchUnavailableError  search by meaning without its extra or model (names the fix)
    │   ├── StoreHoldsOtherWorkspaceError   a store file named with --store holds another workspace's memory
    │   ├── CopyUnfinishedError        the workspace holds a partial `homeport copy` (run the copy again)
    │   ├── ChangesetConflictError     a tidy changeset's items changed since it was proposed (or applied)
    │   └── ChangesetGuardError        a tidy changeset touches a pinned item or too much of the memory
    ├── InternalError                  a bug: reported with a pointer to the log, never with its traceback
    ├── FileAreaError                  file areas: bad path, too large, missing file
    ├── SyncError                      syncing the memory through git failed (git, the remote, a refused push)
    │   └── SyncSecretError            an item to be synced holds a secret (names the item and field)
    ├── ProjectDatabaseError           the project's own database
    │   ├── DatabaseNotConfiguredError no database found for the workspace
    │   ├── DatabaseNotAllowedError    untrusted workspace configuration names another host or a server file
    │   ├── QueryRejectedError         a statement refused before it reached the database
    │   └── QuerySyntaxError           a statement that is not valid SQL (Homeport's reading or the database's)
    └── RegistryError                  the instance registry: unreadable, no free port
        ├── WorkspaceOwnedError        another live instance owns the workspace (--take-over)
        ├── OwnerUnavailableError      the owner of a workspace stopped answering mid-call
        ├── TeamServerUnavailableError the project's team server did not answer (no local fallback)
        ├── OwnerUnprovenError         what answers at an owner's endpoint did not prove it is the owner
        └── UntrustedStateError        the state directory, or a file in it, could be changed by another user
"""

from __future__ import annotations

__all__ = [
    "AmbiguousWorkspaceError",
    "ChangesetConflictError",
    "ChangesetGuardError",
    "ConfigError",
    "CopyUnfinishedError",
    "DaemonError",
    "DaemonRunningError",
    "DatabaseNotAllowedError",
    "DatabaseNotConfiguredError",
    "ExplicitWorkspaceRequired",
    "FileAreaError",
    "HomeportError",
    "InternalError",
    "InvalidArgumentError",
    "InvalidItemError",
    "InvalidWorkspaceError",
    "ItemNotFoundError",
    "LogicalWorkspaceError",
    "OwnerUnavailableError",
    "OwnerUnprovenError",
    "PermissionDeniedError",
    "ProjectDatabaseError",
    "QueryRejectedError",
    "QuerySyntaxError",
    "RegistryError",
    "SecretDetectedError",
    "SemanticSearchUnavailableError",
    "StoreError",
    "StoreHoldsOtherWorkspaceError",
    "SyncError",
    "SyncSecretError",
    "TeamServerUnavailableError",
    "ToolNotAllowedError",
    "UnknownArgumentError",
    "UnknownToolError",
    "UntrustedStateError",
    "ValueTooLargeError",
    "WorkspaceAccessDeniedError",
    "WorkspaceContainsProjectsError",
    "WorkspaceDeniedError",
    "WorkspaceError",
    "WorkspaceOwnedError",
    "WorkspaceUnresolvedError",
    "error_for_code",
]


class HomeportError(Exception):
    """Base of every error Homeport raises on purpose."""

    code = "homeport_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigError(HomeportError):
    code = "config_error"


class InvalidArgumentError(HomeportError):
    code = "invalid_argument"


class UnknownArgumentError(InvalidArgumentError):
    code = "unknown_argument"


class UnknownToolError(InvalidArgumentError):
    """A call of a tool this server does not serve (a misspelling, another group's tool, a prefixed name)."""

    code = "unknown_tool"


class SecretDetectedError(HomeportError):
    """Refused before anything was written; `allow_secrets=true` (CLI: --allow-secrets) overrides it."""

    code = "secret_detected"


class WorkspaceError(HomeportError):
    code = "workspace_error"


class InvalidWorkspaceError(WorkspaceError):
    code = "invalid_workspace"


class WorkspaceDeniedError(WorkspaceError):
    code = "workspace_denied"


class WorkspaceContainsProjectsError(WorkspaceDeniedError):
    code = "workspace_contains_projects"


class AmbiguousWorkspaceError(WorkspaceError):
    code = "ambiguous_workspace"


class WorkspaceUnresolvedError(WorkspaceError):
    code = "workspace_unresolved"

    # `seen`: what each source held, as (source, value or None, note). The CLI names only the sources a
    # person at a shell can set, where the message names every one an MCP client can.
    def __init__(self, message: str, seen: tuple[tuple[str, str | None, str], ...] = ()) -> None:
        super().__init__(message)
        self.seen = seen


class ExplicitWorkspaceRequired(WorkspaceError):
    code = "explicit_workspace_required"


class LogicalWorkspaceError(WorkspaceError):
    code = "logical_workspace"


class PermissionDeniedError(HomeportError):
    code = "permission_denied"


class WorkspaceAccessDeniedError(PermissionDeniedError):
    code = "workspace_access_denied"


class ToolNotAllowedError(PermissionDeniedError):
    code = "tool_not_allowed"


class StoreError(HomeportError):
    code = "store_error"


class ItemNotFoundError(StoreError):
    code = "item_not_found"


class InvalidItemError(StoreError):
    code = "invalid_item"


class ValueTooLargeError(InvalidItemError):
    code = "value_too_large"


class StoreTooNewError(StoreError):
    """The store was migrated by a newer Homeport: its revision is unknown to this one."""

    code = "store_too_new"


class SemanticSearchUnavailableError(StoreError):
    code = "semantic_unavailable"


class StoreHoldsOtherWorkspaceError(StoreError):
    """The file named with `--store sqlite:///FILE` was first used by another workspace, whose memory it holds."""

    code = "store_holds_other_workspace"


class CopyUnfinishedError(StoreError):
    """A `homeport copy` into the workspace was interrupted: it is not served until the copy is run again."""

    code = "copy_unfinished"


class ChangesetConflictError(StoreError):
    """An item of a tidy changeset changed since it was proposed (apply) or applied (revert): nothing was done."""

    code = "changeset_conflict"


class ChangesetGuardError(StoreError):
    """A tidy changeset touches a pinned item or more than 5 % of the items, and `force` was not given."""

    code = "changeset_guard"


class InternalError(HomeportError):
    code = "internal_error"


class FileAreaError(HomeportError):
    code = "file_area_error"


class ProjectDatabaseError(HomeportError):
    code = "project_database_error"


class DatabaseNotConfiguredError(ProjectDatabaseError):
    code = "database_not_configured"


class DatabaseNotAllowedError(ProjectDatabaseError):
    code = "database_not_allowed"


class QueryRejectedError(ProjectDatabaseError):
    code = "query_rejected"


class RegistryError(HomeportError):
    code = "registry_error"


class WorkspaceOwnedError(RegistryError):
    code = "workspace_owned"


class OwnerUnavailableError(RegistryError):
    code = "owner_unavailable"


class TeamServerUnavailableError(RegistryError):
    code = "team_server_unavailable"


class DaemonError(RegistryError):
    code = "daemon_error"


class DaemonRunningError(DaemonError):
    code = "daemon_running"


class QuerySyntaxError(ProjectDatabaseError):
    code = "query_syntax_error"


class OwnerUnprovenError(RegistryError):
    """Nothing of the call was sent: the process at the owner's endpoint could not prove it is the owner
    (`registry.proof`); its entry is pruned, and the next call is served by this process."""

    code = "owner_unproven"


class UntrustedStateError(RegistryError):
    """The state directory (or a directory above it, or a file in it) is not the user's own, or another
    user can write it; the message names the path and the chmod/chown that fixes it."""

    code = "untrusted_state"


class SyncError(HomeportError):
    """`homeport sync` stopped: git is missing, the directory is no repository, the remote failed or refused
    the push (the message names the remote, the ref and git's reason). The memory and its ref are as before."""

    code = "sync_failed"


class SyncSecretError(SyncError):
    """An item that would be exported holds what looks like a secret; nothing was exported or pushed. The
    message names the item (type, id, file) and the field: remove the secret from the item and sync again."""

    code = "sync_secret"


def error_for_code(code: str, message: str) -> HomeportError:
    """The error another instance reported (its `code` and message), as the class that has that code here.

    A code this version does not know keeps its code on a plain `HomeportError`.
    """
    pending: list[type[HomeportError]] = [HomeportError]
    while pending:
        cls = pending.pop()
        if cls.code == code:
            return cls(message)
        pending.extend(cls.__subclasses__())
    error = HomeportError(message)
    error.code = code
    return error
