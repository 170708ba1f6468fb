"""Logical workspace keys: a project's name on a shared server, the same on every clone.

A key such as ``github.com/acme/api`` is segments of ``[A-Za-z0-9._-]`` joined by ``/``, at most
200 characters, with no ``.`` or ``..`` segment. It is a name, never a path on anyone's disk: a
server run with ``--logical-workspaces`` keeps the memory of each key in its own data directory.
Every spelling of one key names one workspace: the resolver and the access rules use its canonical
form (`canonical_key`: lower case, no trailing ``.`` or ``.git`` on a segment), so ``acme/Vault``,
``acme/vault.`` and ``acme/vault.git`` are ``acme/vault``, never a second workspace beside it.

A project knows its key from ``.homeport/config.toml`` (``project = "acme/api"``), else from its
git remote ``origin``, normalised so that the https, scp-like and ssh spellings of one repository
give one key and no credential of the URL survives (`key_from_remote`).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from homeport.errors import InvalidWorkspaceError

__all__ = ["MAX_KEY_LENGTH", "canonical_key", "key_from_remote", "key_problem", "looks_like_path", "validate_key"]

MAX_KEY_LENGTH = 200
_SEGMENT = re.compile(r"[A-Za-z0-9._-]+")
# git@github.com:acme/api.git (scp-like: a colon before any slash, no scheme)
_SCP = re.compile(r"^(?:[^@/:]+@)?(?P<host>[^/:]+):(?P<path>.+)$")


def key_problem(value: str) -> str | None:
    """Why `value` is not a logical key, or None when it is one."""
    if not value:
        return "it is empty"
    if len(value) > MAX_KEY_LENGTH:
        return f"it is {len(value)} characters long (at most {MAX_KEY_LENGTH})"
    for segment in value.split("/"):
        if not segment:
            return "it has an empty segment (a leading, trailing or doubled '/')"
        if segment in (".", ".."):
            return f"it has a {segment!r} segment"
        if not _SEGMENT.fullmatch(segment):
            bad = next(c for c in segment if not _SEGMENT.fullmatch(c))
            return f"segment {segment!r} has the character {bad!r} (only letters, digits, '.', '_' and '-')"
    return None


def validate_key(value: str, *, where: str = "workspace") -> str:
    """`value` itself when it is a logical key.

    Raises:
        InvalidWorkspaceError: the reason it is not one, naming the value.
    """
    problem = key_problem(value)
    if problem is not None:
        raise InvalidWorkspaceError(
            f"{where} {value!r} is not a logical workspace key: {problem}; a key is like acme/api "
            f"(segments of letters, digits, '.', '_', '-' joined by '/', at most {MAX_KEY_LENGTH} characters)"
        )
    return value


def looks_like_path(value: str) -> bool:
    """A candidate that names a place on a disk (absolute path, file:// URI, home or Windows drive)."""
    text = value.strip()
    return text.startswith(("/", "~", "\\")) or "://" in text or bool(re.match(r"^[A-Za-z]:[\\/]", text))


def key_from_remote(url: str) -> str | None:
    """The key of a git remote URL: host and path, lower-cased host, no user, password, port, `.git`
    or trailing slash; None when the URL names no host and path that make a key.

    https://user:token@github.com/acme/api.git, git@github.com:acme/api.git and
    ssh://git@github.com:22/acme/api all give ``github.com/acme/api``; applied to its own result it
    gives the result again.
    """
    text = url.strip()
    if "://" in text:
        parts = urlsplit(text)
        if parts.scheme.lower() == "file":
            return None
        host, path = (parts.hostname or ""), parts.path
    else:
        scp = _SCP.match(text)
        if scp is not None and "/" not in scp.group("host"):
            host, path = scp.group("host"), scp.group("path")
        elif "/" in text and not text.startswith(("/", ".")):
            host, _, path = text.partition("/")  # already a key: github.com/acme/api
            host = host.rpartition("@")[2]
        else:
            return None
    segments = [s for s in path.split("/") if s]
    while segments and segments[-1].endswith(".git") and len(segments[-1]) > len(".git"):
        segments[-1] = segments[-1][: -len(".git")]
    if segments and segments[0].startswith("~"):  # ssh://host/~user/repo: the home shorthand, not a name
        segments[0] = segments[0][1:]
    key = "/".join([host.lower(), *segments])
    return key if host and segments and key_problem(key) is None else None


def canonical_key(value: str, *, where: str = "workspace") -> str:
    """The one spelling of a key (or of a key pattern): lower case, and no segment ending in `.` or
    `.git` (dropped as often as they appear), so `Acme/Vault.git.` is `acme/vault`. Applied to its
    own result it gives the result again; a canonical key is its own canonical form.

    Raises:
        InvalidWorkspaceError: a segment is nothing once they are dropped (`.git`, `...`).
    """
    segments = []
    for segment in value.strip().lower().split("/"):
        kept = segment
        while True:
            shorter = kept.rstrip(".")
            shorter = shorter[: -len(".git")] if shorter.endswith(".git") else shorter
            if shorter == kept:
                break
            kept = shorter
        if not kept and segment:
            raise InvalidWorkspaceError(
                f"{where} {value!r} has the segment {segment!r}, which is nothing once a trailing '.' or '.git' "
                "is dropped (keys are compared lower-cased and without them); name the project, as in acme/api"
            )
        segments.append(kept)
    return "/".join(segments)
