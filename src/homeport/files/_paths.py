"""Paths of file areas: where an area lives, and a caller's path split into checked names.

Private to `homeport.files`; `homeport.files.areas` re-exports the public names. No writes
here, and the only I/O is the ``lstat`` of `area_exists`; opening things inside an area is
`homeport.files._dirfd`'s job.
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
# The POSIX limits (Linux's PATH_MAX and NAME_MAX). Every OS call here takes a single name relative
# to a directory descriptor, so neither limit binds the executor itself; they keep what is written
# usable by every other tool that opens these files by path.
MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255

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
        if len(part.encode("utf-8")) > MAX_NAME_BYTES:
            raise FileAreaError(
                f"path {path!r} has a name longer than {MAX_NAME_BYTES} bytes ({len(part.encode('utf-8')):,}), "
                "the limit for one name; use shorter names"
            )
    if not parts and not allow_empty:
        raise FileAreaError(f"path {path!r} names no file; {_HINT}")
    return parts


def check_path_length(parts: tuple[str, ...], path: str) -> None:
    """Refuse a path to write that is longer than `MAX_PATH_BYTES` (names are checked by `parts_of`).

    Raises:
        FileAreaError: the path, as '/'-joined components, is over the limit.
    """
    size = len("/".join(parts).encode("utf-8"))
    if size > MAX_PATH_BYTES:
        raise FileAreaError(
            f"path {path[:60]!r}... is {size:,} bytes, over the {MAX_PATH_BYTES:,}-byte limit for paths in file "
            "areas; use fewer or shorter folder names"
        )


def describe_area(org: str, folder_id: str, scope: str) -> str:
    return f"the {scope} folder of {folder_id!r} (organization {org!r})"


def area_exists(data_dir: PathLike, org: str, folder_id: str, scope: str) -> bool:
    """Whether the area's directory exists yet (the policy treats a missing one as *new*)."""
    try:
        return stat.S_ISDIR(os.lstat(area_root(data_dir, org, folder_id, scope)).st_mode)
    except OSError:
        return False
