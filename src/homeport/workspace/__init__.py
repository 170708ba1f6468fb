"""Which workspace a call belongs to: sources, normalisation, guards, handles. No MCP imports."""

from homeport.workspace.guards import DeniedDirectories, ProjectRoot, WorkspaceGuard, default_denied
from homeport.workspace.handles import HandleEntry, HandleSigner
from homeport.workspace.paths import canonical_directory, decode_candidate, is_within, within_any
from homeport.workspace.resolver import (
    CLIENT_ENV_VARS,
    CallInputs,
    Resolution,
    ResolverSettings,
    Seen,
    Workspace,
    WorkspaceResolver,
)
from homeport.workspace.sources import EXPLICIT_SOURCES, Source

__all__ = [
    "CLIENT_ENV_VARS",
    "EXPLICIT_SOURCES",
    "CallInputs",
    "DeniedDirectories",
    "HandleEntry",
    "HandleSigner",
    "ProjectRoot",
    "Resolution",
    "ResolverSettings",
    "Seen",
    "Source",
    "Workspace",
    "WorkspaceGuard",
    "WorkspaceResolver",
    "canonical_directory",
    "decode_candidate",
    "default_denied",
    "is_within",
    "within_any",
]
