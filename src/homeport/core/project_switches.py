"""A project's own switches in `.homeport/config.toml`: tools it turns off for itself.

    [database]
    enabled = false            # get_tables, get_schema, get_database_type, run_query refused here
    [tools]
    deny = ["delete_decision", "export"]   # these tools refused here (by Homeport's name or an alias's)

`--tools` turns a group off for every project a server serves; these turn tools off for one
project, whoever calls and through whichever name (an alias runs the tool it names, so denying
`run_query` denies DevDB's `run-query` too). The pipeline checks them once the workspace is
resolved and its caller's access granted, before the call may leave for an owner (which checks
them again). A project without the file costs one stat per call; a file is read again only when
it changed (size, mtime, inode).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from homeport.core.catalog import ToolSpec
from homeport.errors import ConfigError, ToolNotAllowedError
from homeport.store.loop_calls import may_wait
from homeport.workspace.project import CONFIG_FILE, read_project_config

__all__ = ["ProjectSwitches", "check_project_switches", "project_switches"]

_CACHE_LIMIT = 1024


@dataclass(frozen=True)
class ProjectSwitches:
    """What a project's config turns off: its database tools, and tools by name."""

    database_enabled: bool = True
    deny: frozenset[str] = frozenset()


_NONE = ProjectSwitches()
_cache: dict[Path, tuple[tuple[int, int, int], ProjectSwitches]] = {}
_lock = threading.Lock()


def project_switches(root: Path) -> ProjectSwitches:
    """The switches of the project at `root` (none when it has no config file).

    Raises:
        ConfigError: the file is unreadable, or a switch is not of its type.
    """
    path = root / CONFIG_FILE
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return _NONE
    except OSError as exc:
        raise ConfigError(f"{path} cannot be read: {exc}") from exc
    stamp = (st.st_size, st.st_mtime_ns, st.st_ino)
    with _lock:
        cached = _cache.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    may_wait("the project's .homeport/config.toml")
    switches = _parse(read_project_config(root), path)
    with _lock:
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        _cache[path] = (stamp, switches)
    return switches


def _parse(document: dict[str, Any], path: Path) -> ProjectSwitches:
    database = document.get("database", {})
    enabled = database.get("enabled", True) if isinstance(database, dict) else True
    if not isinstance(enabled, bool):
        raise ConfigError(f"{path} [database] enabled must be true or false, not {enabled!r}")
    tools = document.get("tools", {})
    if not isinstance(tools, dict):
        raise ConfigError(f"{path}: tools must be a table, written [tools]")
    unknown = sorted(set(tools) - {"deny"})
    if unknown:
        raise ConfigError(f"{path} [tools] has unknown keys {', '.join(unknown)}; the key is deny")
    deny = tools.get("deny", [])
    if not isinstance(deny, list) or not all(isinstance(name, str) for name in deny):
        raise ConfigError(f'{path} [tools] deny must be a list of tool names, such as ["run_query"], not {deny!r}')
    return ProjectSwitches(database_enabled=enabled, deny=frozenset(deny))


def check_project_switches(root: Path, spec: ToolSpec, alias: ToolSpec | None = None) -> None:
    """Refuse `spec` (called by `alias`'s name, if by one) where the project at `root` turns it off.

    Raises:
        ToolNotAllowedError: the project's config turns the tool off.
        ConfigError: the project's config is invalid (every call of the project is refused, as its
            other settings would be).
    """
    switches = project_switches(root)
    path = root / CONFIG_FILE
    called = spec.name if alias is None else alias.name
    if not switches.database_enabled and spec.group == "db":
        raise ToolNotAllowedError(
            f"{called} is turned off for the project {root}: its {path} says [database] enabled = false. "
            "Nothing was done; set enabled = true there (or remove the line) to use its database tools"
        )
    denied = switches.deny & {spec.name, called}
    if denied:
        raise ToolNotAllowedError(
            f"{called} is turned off for the project {root}: its {path} lists {sorted(denied)[0]!r} in "
            "[tools] deny. Nothing was done; remove it from that list to use the tool here"
        )
