"""Finding a workspace's development database, from the files its framework already has.

Places, first that names a database wins (paths relative to the workspace root):

    1. .homeport/config.toml   [database] url = "..."     ${NAME} / ${NAME:-default} expanded
    2. .env                    DATABASE_URL
    3. .env (Laravel)          DB_URL, else DB_CONNECTION with DB_HOST, DB_PORT, DB_DATABASE,
                               DB_USERNAME, DB_PASSWORD, DB_SOCKET
    4. config/database.yml     the development entry (Rails), simple ERB evaluated
    5. db.sqlite3              Django's default database

Settings come from ``[database]`` in `.homeport/config.toml` whichever place names the database:
``allow_writes`` (default false), ``statement_timeout_ms`` (default 5000), ``row_limit`` (the
most rows one query may return, default 1000), ``max_result_bytes`` (the most JSON one query
may return, default 256 KiB). Variables are looked up in the environment
mapping the caller passes, then in the workspace's `.env`; the process's own DATABASE_URL is not
a source, because one process serves many workspaces.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL

from homeport.errors import ConfigError, DatabaseNotAllowedError, DatabaseNotConfiguredError
from homeport.projectdb._dotenv import read_dotenv
from homeport.projectdb._rails import RAILS_CONFIG, rails_development_url
from homeport.projectdb._trust import hosts_off_this_machine, require_local_database
from homeport.projectdb._urls import backend_of, masked, normalize_url

__all__ = [
    "CONFIG_PATH",
    "CONFIG_SNIPPET",
    "DEFAULT_MAX_RESULT_BYTES",
    "DEFAULT_ROW_LIMIT",
    "DEFAULT_STATEMENT_TIMEOUT_MS",
    "DatabaseSource",
    "discover_database",
]

CONFIG_PATH = Path(".homeport") / "config.toml"
DEFAULT_STATEMENT_TIMEOUT_MS = 5_000
DEFAULT_ROW_LIMIT = 1_000
MAX_STATEMENT_TIMEOUT_MS = 600_000
MAX_ROW_LIMIT = 100_000
DEFAULT_MAX_RESULT_BYTES = 256 * 1024
MAX_RESULT_BYTES = 64 * 1024 * 1024
CONFIG_SNIPPET = """[database]
url = "postgresql://USER:${DB_PASSWORD}@localhost:5432/DBNAME"   # or mysql://..., sqlite:///db/dev.sqlite3
# allow_writes = false          # true lets run_query change data
# statement_timeout_ms = 5000
# row_limit = 1000              # the most rows one query returns
# max_result_bytes = 262144     # the most bytes of JSON one query returns"""

_DOTENV = ".env"
_UNTRUSTED_WRITES = (
    "allow_writes in the workspace's configuration is not honoured by a server whose callers are remote "
    "(HTTP); whoever runs the server can allow it with `homeport serve --http --trust-workspace-config`"
)
_DJANGO_SQLITE = "db.sqlite3"
# `enabled` is the project's switch for its database tools, checked by the call path
# (`core.project_switches`) before discovery is ever reached.
_SETTING_KEYS = ("url", "allow_writes", "statement_timeout_ms", "row_limit", "max_result_bytes", "enabled")
_ENV_REFERENCE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?\}")


@dataclass(frozen=True)
class DatabaseSource:
    """A workspace's development database: where it is, where that was read, and the settings."""

    url: URL
    origin: str
    allow_writes: bool = False
    statement_timeout_ms: int = DEFAULT_STATEMENT_TIMEOUT_MS
    row_limit: int = DEFAULT_ROW_LIMIT
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
    # Set when the workspace's config asked for writes and this server does not trust it to.
    writes_off_because: str | None = None
    # The variables of the caller's environment its configuration read (${NAME}), never their values.
    environment: tuple[str, ...] = ()

    @property
    def backend(self) -> str:
        """``sqlite``, ``postgresql`` or ``mysql`` (which covers MariaDB)."""
        return backend_of(self.url)

    @property
    def sqlite_path(self) -> Path | None:
        return Path(self.url.database) if self.backend == "sqlite" and self.url.database else None

    def describe(self) -> str:
        """The database and where it was found, never with a password."""
        return f"{masked(self.url.set(drivername=self.backend))} (from {self.origin})"


def discover_database(
    root: Path,
    environ: Mapping[str, str],
    *,
    trust_workspace_config: bool = True,
    approves_remote: Callable[[Path, tuple[str, ...]], bool] | None = None,
    approves_environment: Callable[[Path, tuple[str, ...]], bool] | None = None,
) -> DatabaseSource:
    """The development database of the workspace at `root`.

    With `trust_workspace_config` false (a server whose callers are remote), ``${NAME}`` and
    Rails' ``ENV[...]`` read only the workspace's `.env`, never `environ`, the database must
    be on this machine (see `_trust`), and ``allow_writes`` is not honoured (the source says why
    in `writes_off_because`). With `approves_remote` (stdio: the user's trust records), a database
    off this machine is opened only when `approves_remote(root, hosts)` says the user allowed
    those hosts for this project (`homeport trust`): its credentials would leave the machine. With
    `approves_environment`, the configuration's ``${NAME}`` may read a variable of `environ` only when
    `approves_environment(root, names)` says the user allowed it: a repository must not pick which of
    the user's secrets to put into a URL whose parts an agent can read back.

    Raises:
        DatabaseNotConfiguredError: no place names a database; the message lists every place
            looked at and the `.homeport/config.toml` lines to add.
        ConfigError: a place names a database but cannot be read or is malformed.
        DatabaseNotAllowedError: untrusted configuration names another host or a file outside
            the workspace, or (with `approves_remote`) a host off this machine the user has not
            allowed for this project.
    """
    places = _Places(root, _Read(environ) if trust_workspace_config else _Read({}))
    looked: list[str] = []
    for probe in (_from_config, _from_database_url, _from_laravel, _from_rails, _from_django):
        found = probe(places)
        if isinstance(found, str):
            looked.append(found)
            continue
        url, origin = found
        settings = dict(places.settings)
        if trust_workspace_config and approves_remote is not None:
            _require_trusted_hosts(url, root, origin, approves_remote)
        names = tuple(sorted(places.environ.names))
        if names and approves_environment is not None and not approves_environment(root, names):
            _refuse_untrusted_environment(names, root, origin)
        if not trust_workspace_config:
            require_local_database(url, root, origin)
            if settings["allow_writes"]:
                settings["allow_writes"] = False
                settings["writes_off_because"] = _UNTRUSTED_WRITES
        return DatabaseSource(url=url, origin=origin, environment=names, **settings)
    raise DatabaseNotConfiguredError(_not_found_message(root, looked))


class _Read(Mapping[str, str]):
    """The caller's environment, remembering which variables were read (found) from it."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ
        self.names: set[str] = set()

    def __getitem__(self, name: str) -> str:
        value = self._environ[name]
        self.names.add(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._environ)

    def __len__(self) -> int:
        return len(self._environ)


def _refuse_untrusted_environment(names: tuple[str, ...], root: Path, origin: str) -> None:
    from homeport.workspace.trust import trust_command

    named = ", ".join(f"${{{name}}}" for name in names)
    raise DatabaseNotAllowedError(
        f"{origin} reads {named} from your environment; a project's configuration reads your environment "
        f"only once you trust it (a repository must not choose which of your secrets go into a database URL "
        f"an agent can read back): waiting for trust. If you trust it, run `{trust_command(root)}`; or put "
        "the value in the project's own .env"
    )


def _require_trusted_hosts(
    url: URL, root: Path, origin: str, approves_remote: Callable[[Path, tuple[str, ...]], bool]
) -> None:
    hosts = hosts_off_this_machine(url)
    if hosts and not approves_remote(root, hosts):
        from homeport.workspace.trust import trust_command

        named = ", ".join(hosts)
        raise DatabaseNotAllowedError(
            f"{origin} names the database host {named}, off this machine; its credentials are not sent there "
            f"until you trust this project's configuration: waiting for trust. If you trust it to reach {named}, "
            f"run `{trust_command(root)}`"
        )


class _Places:
    """The files of one workspace that can name its database, each read at most once."""

    def __init__(self, root: Path, environ: _Read) -> None:
        self.root = root
        self.environ = environ

    @cached_property
    def config(self) -> tuple[dict[str, Any] | None, str]:
        """The [database] table, or None and why there is none."""
        path = self.root / CONFIG_PATH
        try:
            document = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None, "no such file"
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path} cannot be read: {exc}") from exc
        table = document.get("database")
        if table is None:
            return None, "no [database] table"
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: database must be a table, written [database]")
        unknown = sorted(set(table) - set(_SETTING_KEYS))
        if unknown:
            raise ConfigError(
                f"{path} [database] has unknown keys {', '.join(unknown)}; the keys are {', '.join(_SETTING_KEYS)}"
            )
        return table, ""

    @cached_property
    def settings(self) -> dict[str, Any]:
        table, _ = self.config
        table = table or {}
        path = self.root / CONFIG_PATH
        allow_writes = table.get("allow_writes", False)
        if not isinstance(allow_writes, bool):
            raise ConfigError(f"{path} [database] allow_writes must be true or false, not {allow_writes!r}")
        return {
            "allow_writes": allow_writes,
            "statement_timeout_ms": _bounded_int(
                table, "statement_timeout_ms", DEFAULT_STATEMENT_TIMEOUT_MS, MAX_STATEMENT_TIMEOUT_MS, path
            ),
            "row_limit": _bounded_int(table, "row_limit", DEFAULT_ROW_LIMIT, MAX_ROW_LIMIT, path),
            "max_result_bytes": _bounded_int(
                table, "max_result_bytes", DEFAULT_MAX_RESULT_BYTES, MAX_RESULT_BYTES, path, least=1024
            ),
        }

    @cached_property
    def dotenv_exists(self) -> bool:
        return (self.root / _DOTENV).is_file()

    @cached_property
    def dotenv(self) -> dict[str, str]:
        return read_dotenv(self.root / _DOTENV, self.environ)

    def variable(self, name: str) -> str | None:
        """An environment variable: the caller's environment first, then the workspace's .env."""
        value = self.environ.get(name)
        return value if value is not None else self.dotenv.get(name)


_Found = tuple[URL, str] | str  # the database and its origin, or the line saying why not


def _from_config(places: _Places) -> _Found:
    table, why_not = places.config
    place = f"{CONFIG_PATH} [database] url"
    if table is None:
        return f"{place}: {why_not}"
    raw = table.get("url")
    if raw is None:
        return f"{place}: no url key"
    if not isinstance(raw, str):
        raise ConfigError(f"{places.root / CONFIG_PATH} [database] url must be a string")
    return normalize_url(_expand(raw, places.variable, place), places.root, origin=place), place


def _from_database_url(places: _Places) -> _Found:
    place = f"{_DOTENV} DATABASE_URL"
    if not places.dotenv_exists:
        return f"{place}: no {_DOTENV} file"
    raw = places.dotenv.get("DATABASE_URL")
    if not raw:
        return f"{place}: not set"
    return normalize_url(raw, places.root, origin=place), place


def _from_laravel(places: _Places) -> _Found:
    place = f"{_DOTENV} DB_URL / DB_CONNECTION (Laravel)"
    if not places.dotenv_exists:
        return f"{place}: no {_DOTENV} file"
    env = places.dotenv
    if env.get("DB_URL"):
        origin = f"{_DOTENV} DB_URL (Laravel)"
        return normalize_url(env["DB_URL"], places.root, origin=origin), origin
    connection = env.get("DB_CONNECTION", "").strip().lower()
    if not connection:
        return f"{place}: not set"
    origin = f"{_DOTENV} DB_CONNECTION={connection} (Laravel)"
    if connection == "sqlite":
        database = env.get("DB_DATABASE") or "database/database.sqlite"
        return normalize_url(f"sqlite3:{database}", places.root, origin=origin), origin
    drivers = {"mysql": ("mysql", 3306), "mariadb": ("mysql", 3306), "pgsql": ("postgresql", 5432)}
    if connection not in drivers:
        raise ConfigError(
            f"{_DOTENV} DB_CONNECTION={connection} is not a database Homeport can open "
            f"(sqlite, mysql, mariadb, pgsql); set [database] url in {CONFIG_PATH}"
        )
    scheme, default_port = drivers[connection]
    port_text = env.get("DB_PORT") or str(default_port)
    if not port_text.isdigit():
        raise ConfigError(f"{_DOTENV} DB_PORT is not a number: {port_text!r}")
    socket = env.get("DB_SOCKET")
    url = URL.create(
        scheme,
        username=env.get("DB_USERNAME") or "root",
        password=env.get("DB_PASSWORD") or None,
        host=env.get("DB_HOST") or "127.0.0.1",
        port=int(port_text),
        database=env.get("DB_DATABASE") or "laravel",
        query={"unix_socket": socket} if socket and scheme == "mysql" else {},
    )
    return normalize_url(url, places.root, origin=origin), origin


def _from_rails(places: _Places) -> _Found:
    place = f"{RAILS_CONFIG} development (Rails)"
    try:
        found, label = rails_development_url(places.root / RAILS_CONFIG, places.root, places.variable)
    except FileNotFoundError:
        return f"{place}: no such file"
    except LookupError as exc:
        return f"{place}: {exc.args[0]}"
    origin = f"{RAILS_CONFIG} {label} (Rails)"
    return normalize_url(found, places.root, origin=origin), origin


def _from_django(places: _Places) -> _Found:
    place = f"{_DJANGO_SQLITE} (Django)"
    if not (places.root / _DJANGO_SQLITE).is_file():
        return f"{place}: no such file"
    return normalize_url(f"sqlite3:{_DJANGO_SQLITE}", places.root, origin=place), place


def _expand(value: str, lookup: Callable[[str], str | None], place: str) -> str:
    def replace(match: re.Match[str]) -> str:
        found = lookup(match["name"])
        if found is not None:
            return found
        if match["default"] is not None:
            return match["default"]
        raise ConfigError(
            f"{place} uses ${{{match['name']}}}, which is not set in the environment or in {_DOTENV}; "
            f"set it, or write ${{{match['name']}:-default}}"
        )

    return _ENV_REFERENCE.sub(replace, value)


def _bounded_int(table: Mapping[str, Any], key: str, default: int, most: int, path: Path, *, least: int = 1) -> int:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        raise ConfigError(f"{path} [database] {key} must be a whole number from {least} to {most}, not {value!r}")
    return value


def _not_found_message(root: Path, looked: list[str]) -> str:
    places = "\n".join(f"  {number}. {line}" for number, line in enumerate(looked, start=1))
    snippet = "\n".join(f"    {line}" for line in CONFIG_SNIPPET.splitlines())
    return (
        f"No development database found for the workspace {root}. Looked at, in order:\n{places}\n"
        f"Name the database in {root / CONFIG_PATH}:\n\n{snippet}\n"
    )
