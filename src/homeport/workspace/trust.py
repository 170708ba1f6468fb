"""Which projects' own configuration this user has trusted on this machine (`homeport trust`).

A repository's `.homeport/config.toml` is written by whoever committed it. What it says about
this machine alone (its key, its database on this machine, limits) applies as written; what would
send data off the machine or read the user's secrets applies only after the user has trusted it
here, like `direnv allow` or an editor's workspace trust:

    [team] url, project          memory calls and the project key go to that server
    the token's source           always the user's choice at trust time (--token-env VAR, the keyring,
                                 or none), never the repository's token_env
    a database off this machine  the project database's credentials go to that host

The user's approvals live in their own config directory (`trusted-projects.json`, mode 0600, the
path passed down from the CLI as a setting). One record per project root binds:

    root             the project's canonical root
    config_sha256    the bytes of .homeport/config.toml when trusted (a changed file needs trust again)
    team_url         the team server trusted, and project_key, the key its calls carry
    token            env:VAR | keyring | none
    database_hosts   the database hosts off this machine the user allowed

A file another user could write is refused, not read: whoever can write it decides where memory goes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import stat
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from homeport.errors import ConfigError
from homeport.files._atomic import locked, write_atomically

__all__ = ["TRUST_FILE_NAME", "TrustBook", "TrustRecord", "config_digest", "trust_command"]

TRUST_FILE_NAME = "trusted-projects.json"
_CONFIG = Path(".homeport") / "config.toml"
_FILE_MODE = 0o600
_VERSION = 1
_MAX_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class TrustRecord:
    """This user's approval of one project's configuration."""

    root: str
    config_sha256: str | None  # None: the project had no .homeport/config.toml
    team_url: str | None
    project_key: str | None
    token: str  # "env:VAR", "keyring" or "none"
    database_hosts: tuple[str, ...]
    trusted_at: str
    # Variables of the user's environment the project's database configuration may read (${NAME}).
    environment: tuple[str, ...] = ()

    @property
    def token_env(self) -> str | None:
        return self.token[len("env:") :] if self.token.startswith("env:") else None

    def describe(self) -> dict[str, Any]:
        return {**asdict(self), "database_hosts": list(self.database_hosts), "environment": list(self.environment)}


def config_digest(root: Path) -> str | None:
    """The SHA-256 of the project's `.homeport/config.toml`, or None when it has none.

    Raises:
        ConfigError: the file exists but cannot be read.
    """
    path = root / _CONFIG
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise ConfigError(f"{path} cannot be read: {exc.strerror or exc}") from exc


def trust_command(root: Path) -> str:
    """The command that shows what the project's configuration asks for and trusts it."""
    return f"homeport trust --project {shlex.quote(str(root))}"


class TrustBook:
    """The user's trust records, read again when the file changes. `path` None: nothing is trusted."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._cache: tuple[tuple[int, int, int] | None, dict[str, TrustRecord]] | None = None

    def stamp(self) -> tuple[int, int, int] | None:
        """What changes when the file does (for callers that cache what they derived from it)."""
        if self.path is None:
            return None
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def records(self) -> dict[str, TrustRecord]:
        """Every record, by project root.

        Raises:
            ConfigError: the file may be written by another user, is not a regular file, or is damaged.
        """
        stamp = self.stamp()
        with self._lock:
            if self._cache is not None and self._cache[0] == stamp:
                return self._cache[1]
        found = self._read()
        with self._lock:
            self._cache = (stamp, found)
        return found

    def record_for(self, root: Path) -> TrustRecord | None:
        """The record of the project at `root` (its canonical root), whether or not it is still current.

        Raises:
            ConfigError: as `records`.
        """
        return self.records().get(str(root))

    def current(self, root: Path) -> TrustRecord | None:
        """The record of `root` if the project's config is byte for byte the one that was trusted.

        Raises:
            ConfigError: as `records`, or the project's config cannot be read.
        """
        record = self.record_for(root)
        if record is None or record.config_sha256 != config_digest(root):
            return None
        return record

    def approves_database_hosts(self, root: Path, hosts: tuple[str, ...]) -> bool:
        """Whether the user allowed the project at `root` to reach each of `hosts` (off this machine).

        Raises:
            ConfigError: as `current`.
        """
        record = self.current(root)
        return record is not None and set(hosts) <= set(record.database_hosts)

    def approves_environment(self, root: Path, names: tuple[str, ...]) -> bool:
        """Whether the user allowed the project at `root` to read each of `names` from their environment.

        Raises:
            ConfigError: as `current`.
        """
        record = self.current(root)
        return record is not None and set(names) <= set(record.environment)

    def grant(self, record: TrustRecord) -> None:
        """Record `record`, replacing any earlier one for its root.

        Raises:
            ConfigError: no trust file is configured, or it cannot be read or written.
        """
        path = self._writable_path()
        with locked(path):
            found = dict(self._read())
            found[record.root] = record
            self._write(path, found)

    def revoke(self, root: Path) -> TrustRecord | None:
        """Remove the record of `root`; the record removed, or None when there was none.

        Raises:
            ConfigError: as `grant`.
        """
        path = self._writable_path()
        with locked(path):
            found = dict(self._read())
            removed = found.pop(str(root), None)
            if removed is not None:
                self._write(path, found)
        return removed

    def _writable_path(self) -> Path:
        if self.path is None:
            raise ConfigError("no trust file is configured for this process; run `homeport trust` from a shell")
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        return self.path

    def _write(self, path: Path, records: dict[str, TrustRecord]) -> None:
        document = {"version": _VERSION, "projects": {root: r.describe() for root, r in sorted(records.items())}}
        write_atomically(path, json.dumps(document, indent=2) + "\n", _FILE_MODE)
        with self._lock:
            self._cache = None

    def _read(self) -> dict[str, TrustRecord]:
        if self.path is None:
            return {}
        path = self.path
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise ConfigError(f"the trust file {path} cannot be read: {exc.strerror or exc}") from exc
        with os.fdopen(fd, "rb") as handle:
            _check_private(path, os.fstat(handle.fileno()))
            _check_private(path.parent, os.stat(path.parent))
            raw = handle.read(_MAX_BYTES + 1)
        if len(raw) > _MAX_BYTES:
            raise ConfigError(f"the trust file {path} is larger than {_MAX_BYTES} bytes; remove it and trust again")
        try:
            document = json.loads(raw.decode("utf-8"))
            projects = document["projects"]
            return {root: _record(root, fields) for root, fields in projects.items()}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(
                f"the trust file {path} is damaged ({type(exc).__name__}: {exc}); remove it and run "
                "`homeport trust` again in each project you trust"
            ) from None


def _record(root: str, fields: dict[str, Any]) -> TrustRecord:
    hosts = fields.get("database_hosts", [])
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        raise TypeError(f"{root}: database_hosts must be a list of host names")
    names = fields.get("environment", [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"{root}: environment must be a list of variable names")
    token = fields["token"]
    if not isinstance(token, str) or not (token in ("keyring", "none") or token.startswith("env:")):
        raise TypeError(f"{root}: token must be env:VAR, keyring or none")
    return TrustRecord(
        root=root,
        config_sha256=_optional_str(fields.get("config_sha256")),
        team_url=_optional_str(fields.get("team_url")),
        project_key=_optional_str(fields.get("project_key")),
        token=token,
        database_hosts=tuple(hosts),
        trusted_at=str(fields.get("trusted_at", "")),
        environment=tuple(names),
    )


def _optional_str(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{value!r} is not a string")


def _check_private(path: Path, info: os.stat_result) -> None:
    """Refuse a trust file or directory that another user owns or may write: they could trust for us."""
    kind = "directory" if stat.S_ISDIR(info.st_mode) else "file"
    if kind == "file" and not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"the trust file {path} is not a regular file; remove it and trust again")
    if info.st_uid != os.geteuid():
        raise ConfigError(
            f"the trust {kind} {path} belongs to uid {info.st_uid}, not to this user (uid {os.geteuid()}); "
            "remove it and run `homeport trust` again in each project you trust"
        )
    if info.st_mode & 0o022:
        raise ConfigError(
            f"the trust {kind} {path} may be changed by other users (mode {stat.S_IMODE(info.st_mode):o}); "
            f"run chmod go-w {path}"
        )
