"""What an untrusted workspace configuration may name: a database on this machine, nothing more.

Over HTTP the caller is remote, and its workspace's `.homeport/config.toml`, `.env` or
`database.yml` must not turn the server into a client of other hosts, nor into a reader of the
server's files. An untrusted URL may name

- a PostgreSQL or MySQL / MariaDB server at ``localhost``, a loopback address (127.0.0.0/8, ::1)
  or a Unix socket, never a host name that DNS could point anywhere;
- a SQLite file whose real path (symbolic links followed) is inside the workspace;

and none of the connection parameters that read files on the server or name hosts indirectly
(libpq's ``service``, ``passfile``, ``sslkey`` ..., PyMySQL's ``ssl_key`` ...). libpq's
``options`` may only set ``search_path`` (Prisma's ``schema=``): any other ``-c`` setting is
applied at connection start, where a superuser login could load a library
(``session_preload_libraries``) or change logging.
"""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path

from sqlalchemy.engine import URL

from homeport.errors import DatabaseNotAllowedError
from homeport.projectdb._urls import backend_of

__all__ = ["hosts_off_this_machine", "require_local_database"]

_LOCAL = "127.0.0.1, ::1, localhost or a Unix socket"
# Parameters that read files on the server or lead to another host.
_SERVER_FILE_PARAMS = {
    "postgresql": frozenset({"service", "passfile", "sslcert", "sslkey", "sslrootcert", "sslcrl", "sslcrldir"}),
    "mysql": frozenset({"ssl_ca", "ssl_cert", "ssl_key", "ssl_capath"}),
}
_HOST_PARAMS = frozenset({"host", "hostaddr"})
_SEARCH_PATH_ONLY = re.compile(r"^\s*-c\s*search_path=[\w$,\"]+\s*$")


def require_local_database(url: URL, root: Path, origin: str) -> None:
    """Refuse `url` (read from `origin` in the workspace at `root`) unless it stays on this machine.

    Raises:
        DatabaseNotAllowedError: naming what was refused and what is allowed.
    """
    backend = backend_of(url)
    if backend == "sqlite":
        path = Path(os.path.realpath(url.database or ""))
        if not path.is_relative_to(os.path.realpath(root)):
            raise DatabaseNotAllowedError(
                f"{origin} names the SQLite file {url.database}, which is not inside the workspace "
                f"{root}; {_WHY}: it may open only a SQLite file inside the workspace"
            )
        return
    hosts = [url.host] if url.host else []
    for key, value in url.query.items():
        if key in _SERVER_FILE_PARAMS[backend]:
            raise DatabaseNotAllowedError(
                f"{origin} sets the connection parameter {key}, which reads a file on the server; {_WHY}: "
                f"drop {key}, or use Homeport over stdio, where the workspace's configuration is trusted"
            )
        if key == "options" and backend == "postgresql" and not _SEARCH_PATH_ONLY.match(str(value)):
            raise DatabaseNotAllowedError(
                f"{origin} sets options={value!r}; {_WHY}: options may only set search_path "
                "(-c search_path=...), or use Homeport over stdio, where the workspace's configuration is trusted"
            )
        if key in _HOST_PARAMS and backend == "postgresql":
            hosts.extend([value] if isinstance(value, str) else value)
    for host in hosts:
        for part in host.split(","):
            if not _is_local(part.strip()):
                raise DatabaseNotAllowedError(
                    f"{origin} names the database host {part.strip()!r}; {_WHY}: it may name only a database on "
                    f"this machine ({_LOCAL}); use Homeport over stdio, where the workspace's configuration is "
                    "trusted, to reach another host"
                )


_WHY = "this server does not trust workspace configuration (its callers are remote)"


def hosts_off_this_machine(url: URL) -> tuple[str, ...]:
    """The database hosts `url` names that are not this machine (no loopback address, socket or localhost).

    Over stdio a workspace's configuration is the user's own, but one cloned from elsewhere must not send
    the database's credentials to another host until the user has trusted it (`workspace/trust.py`).
    """
    backend = backend_of(url)
    if backend == "sqlite":
        return ()
    hosts = [url.host] if url.host else []
    if backend == "postgresql":
        for key, value in url.query.items():
            if key in _HOST_PARAMS:
                hosts.extend([value] if isinstance(value, str) else value)
    parts = [part.strip() for host in hosts for part in host.split(",")]
    return tuple(sorted({part for part in parts if not _is_local(part)}))


def _is_local(host: str) -> bool:
    if not host or host.startswith("/") or host.lower() == "localhost":
        return True  # no host: the driver's local default; a path: a Unix socket directory
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    # "127.0.0.1:5433" inside a libpq multi-host list
    name, _, port = host.rpartition(":")
    return bool(name) and port.isdigit() and _is_local(name)
