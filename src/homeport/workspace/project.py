"""What a project says of itself in `.homeport/config.toml` and its git remote: its key, its team server.

    project = "acme/api"                    # the key; else derived from git remote origin
    [team]
    url = "https://homeport.example.com"    # memory calls go there, with the key
    token_env = "HOMEPORT_TEAM_TOKEN"       # the bearer token comes from this variable (or the keyring)

A token is never read from the file: the repository is shared and a token in it is a leak.
The git remote is read from the repository's own config; a worktree's `.git` is a file naming
its git directory, whose `commondir` leads to the config every worktree of the clone shares,
so a worktree has the key of its main checkout.
"""

from __future__ import annotations

import configparser
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from homeport.errors import ConfigError, InvalidWorkspaceError
from homeport.workspace.keys import key_from_remote, validate_key

__all__ = ["CONFIG_FILE", "ProjectKey", "TeamConfig", "project_key", "read_project_config", "team_config"]

CONFIG_FILE = Path(".homeport") / "config.toml"
_TEAM_KEYS = frozenset({"url", "token_env"})


@dataclass(frozen=True)
class ProjectKey:
    """A project's key and where it came from (`config`, `git_remote`, or `none` with the key None)."""

    key: str | None
    source: str
    detail: str

    def describe(self) -> dict[str, str | None]:
        return {"project_key": self.key, "project_key_source": self.source, "project_key_detail": self.detail}


@dataclass(frozen=True)
class TeamConfig:
    """The team server a project's memory lives on."""

    url: str
    token_env: str | None
    config_path: Path


def read_project_config(root: Path) -> dict[str, Any]:
    """The project's `.homeport/config.toml` as a table; empty when there is none.

    Raises:
        ConfigError: the file is not valid TOML or cannot be read.
    """
    path = root / CONFIG_FILE
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} cannot be read: {exc}") from exc


def project_key(root: Path, config: dict[str, Any] | None = None) -> ProjectKey:
    """The key of the project at `root`: `project` in its config, else its git remote origin.

    Raises:
        ConfigError: the config's `project` is not a valid key, or the config cannot be read.
    """
    document = read_project_config(root) if config is None else config
    path = root / CONFIG_FILE
    if "project" in document:
        value = document["project"]
        if not isinstance(value, str):
            raise ConfigError(f'{path}: project must be a string such as "acme/api", not {value!r}')
        try:
            return ProjectKey(validate_key(value, where=f"{path}: project"), "config", str(path))
        except InvalidWorkspaceError as exc:
            raise ConfigError(exc.message) from None
    remote = _origin_url(root)
    if remote is None:
        return ProjectKey(None, "none", f"no project in {path} and no git remote origin")
    key = key_from_remote(remote)
    if key is None:
        return ProjectKey(None, "none", f"git remote origin ({_without_credentials(remote)}) names no host and path")
    return ProjectKey(key, "git_remote", f"git remote origin {_without_credentials(remote)}")


def team_config(root: Path, config: dict[str, Any] | None = None) -> TeamConfig | None:
    """The project's `[team]` table, or None when it names no team server.

    Raises:
        ConfigError: a `token` in the file, an unknown key, or a url that is not http(s).
    """
    document = read_project_config(root) if config is None else config
    table = document.get("team")
    if table is None:
        return None
    path = root / CONFIG_FILE
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: team must be a table, written [team]")
    if "token" in table:
        raise ConfigError(
            f"{path} [team] has a token: a token must never be kept in the repository; remove it (and revoke it), "
            'then put token_env = "HOMEPORT_TEAM_TOKEN" there and the token in that environment variable or in '
            "the keyring"
        )
    unknown = sorted(set(table) - _TEAM_KEYS)
    if unknown:
        raise ConfigError(f"{path} [team] has unknown keys {', '.join(unknown)}; the keys are url, token_env")
    url, token_env = table.get("url"), table.get("token_env")
    if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
        raise ConfigError(f'{path} [team] url must be an http(s) URL such as "https://homeport.example.com"')
    if urlsplit(url).username or urlsplit(url).password:
        raise ConfigError(f"{path} [team] url carries a user or password; name the token with token_env instead")
    if token_env is not None and (not isinstance(token_env, str) or not token_env):
        raise ConfigError(f"{path} [team] token_env must name an environment variable, such as HOMEPORT_TEAM_TOKEN")
    return TeamConfig(url=url.rstrip("/"), token_env=token_env, config_path=path)


def _git_config(root: Path) -> Path | None:
    """The config file of the repository at `root`, shared by every worktree of the clone."""
    dot_git = root / ".git"
    if dot_git.is_dir():
        git_dir = dot_git
    elif dot_git.is_file():
        try:
            first = dot_git.read_text(encoding="utf-8").splitlines()[0]
        except (OSError, UnicodeDecodeError, IndexError):
            return None
        if not first.startswith("gitdir:"):
            return None
        git_dir = root / first[len("gitdir:") :].strip()  # an absolute path stays absolute
    else:
        return None
    common = git_dir
    try:
        pointer = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        pointer = ""
    if pointer:
        common = git_dir / pointer
    config = common / "config"
    return config if config.is_file() else None


def _origin_url(root: Path) -> str | None:
    path = _git_config(root)
    if path is None:
        return None
    parser = configparser.RawConfigParser(
        strict=False, allow_no_value=True, delimiters=("=",), comment_prefixes=("#", ";"), inline_comment_prefixes=None
    )
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError):
        return None
    for section in parser.sections():
        if section.replace("\t", " ").strip() in ('remote "origin"',):
            url = parser.get(section, "url", fallback=None)
            return url.strip().strip('"') if url else None
    return None


def _without_credentials(url: str) -> str:
    if "://" not in url:
        return url.rpartition("@")[2] if "@" in url.partition(":")[0] else url
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
