"""Safe joins for file areas: from (data dir, org, folder id, scope, path) to a checked path.

Private to `homeport.files`; `homeport.files.areas` re-exports the public names. No writes
here, and the only I/O is ``realpath``/``lstat`` to see where a path really leads.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from homeport.errors import FileAreaError

_SCOPES = ("private", "shared")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_DRIVE = re.compile(r"[A-Za-z]:")
_HINT = "use a relative path inside the folder, like 'notes/today.md'"

PathLike = str | os.PathLike[str]


def _component(value: str, what: str) -> str:
    # Ids become one directory name each; anything that could name another place is refused.
    if not isinstance(value, str) or value in ("", ".", "..") or _CONTROL.search(value) or set("/\\") & set(value):
        raise FileAreaError(f"{what} {value!r} is not a single folder name; pass the id as it is listed")
    return value


def area_root(data_dir: PathLike, org: str, folder_id: str, scope: str) -> Path:
    """Where the area lives (it may not exist yet). No I/O.

    Raises:
        FileAreaError: `org` or `folder_id` is not one path component, or `scope` is unknown.
    """
    if scope not in _SCOPES:
        raise FileAreaError(f"scope {scope!r} is not one of: private, shared")
    org, folder_id = _component(org, "organization"), _component(folder_id, "folder id")
    return Path(data_dir) / "organizations" / org / "workspaces" / folder_id / scope


def parts_of(path: str, *, allow_empty: bool) -> tuple[str, ...]:
    """Split a caller's path into safe components; the error says what is wrong and what to do."""
    if not isinstance(path, str):
        raise FileAreaError(f"path {path!r} is not a string; {_HINT}")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise FileAreaError(f"path {path!r} is not valid Unicode (lone surrogate); {_HINT}") from None
    if _CONTROL.search(path):
        raise FileAreaError(f"path {path!r} contains NUL or control characters; {_HINT}")
    if "\\" in path:
        raise FileAreaError(f"path {path!r} contains a backslash; separate folders with '/' ({_HINT})")
    if path.startswith("/"):
        raise FileAreaError(f"path {path!r} is absolute; {_HINT}")
    if _DRIVE.match(path):
        raise FileAreaError(f"path {path!r} starts like a Windows drive ('C:'); {_HINT}")
    parts = tuple(p for p in path.split("/") if p not in ("", "."))
    if ".." in parts:
        raise FileAreaError(f"path {path!r} has a '..' component; {_HINT}")
    for part in parts:
        if len(part.encode("utf-8")) > 255:
            raise FileAreaError(f"path {path!r} has a name longer than 255 bytes; use shorter names")
    if not parts and not allow_empty:
        raise FileAreaError(f"path {path!r} names no file; {_HINT}")
    return parts


def describe_area(org: str, folder_id: str, scope: str) -> str:
    return f"the {scope} folder of {folder_id!r} (organization {org!r})"


def checked_root(data_dir: PathLike, org: str, folder_id: str, scope: str) -> tuple[Path, Path]:
    """The area root and its realpath; refuses an area whose own directories are symlinks."""
    root = area_root(data_dir, org, folder_id, scope)
    expected = Path(os.path.realpath(data_dir)) / "organizations" / org / "workspaces" / folder_id / scope
    real_root = Path(os.path.realpath(root))
    if real_root != expected:
        area = describe_area(org, folder_id, scope)
        raise FileAreaError(
            f"{area} is reached through a symlink on disk ({root} -> {real_root}); file areas must be "
            "real directories under the data directory, ask an operator to fix it"
        )
    return root, real_root


def resolve_path(
    data_dir: PathLike, org: str, folder_id: str, scope: str, path: str, *, allow_empty: bool = False
) -> Path:
    """The real path `path` names in the area, checked to stay inside it.

    Raises:
        FileAreaError: the path is malformed, or resolves (through a symlink) outside the area.
    """
    parts = parts_of(path, allow_empty=allow_empty)
    root, real_root = checked_root(data_dir, org, folder_id, scope)
    real = Path(os.path.realpath(root.joinpath(*parts)))
    # By components, after realpath: a string prefix test would let 'private-evil' pass as 'private'.
    if not real.is_relative_to(real_root):
        area = describe_area(org, folder_id, scope)
        raise FileAreaError(
            f"path {path!r} in {area} leads outside the folder through a symlink; Homeport does not follow it"
        )
    return real


def area_exists(data_dir: PathLike, org: str, folder_id: str, scope: str) -> bool:
    """Whether the area's directory exists yet (the policy treats a missing one as *new*)."""
    try:
        return stat.S_ISDIR(os.lstat(area_root(data_dir, org, folder_id, scope)).st_mode)
    except OSError:
        return False
