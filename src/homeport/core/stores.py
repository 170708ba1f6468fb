"""Where a workspace's memory is, and how an admin command opens it: the one place the shell reaches a store.

The tools get their stores from the runtime (`core/runtime.py`, a `StoreCache`); the shell's admin
commands (`where`, `doctor`, `migrate`, `copy`) get theirs here, so that choosing the backend (a
workspace's SQLite file, or a schema in a PostgreSQL database) and reading its location are written
once. `homeport where` needs only the location: this module's top loads no SQLAlchemy, and what opens
a store imports the store when it runs.

    the project's .homeport/config.toml names [team] url  -> that team server, under the project's key,
      and the user trusted it there (`homeport trust`)        (else the project is served as below)
    --store URL / HOMEPORT_STORE (ServeSettings.store_url)  -> a schema in that PostgreSQL database
    otherwise                                              -> <root>/.homeport/homeport.db

The same order as the server's: the team step comes before any store is opened (core/pipeline.py),
and a store URL replaces the SQLite files (core/runtime.py). Locating creates and migrates nothing.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from homeport.errors import ConfigError, HomeportError, StoreError
from homeport.store.location import store_path_for
from homeport.workspace.project import project_key, read_project_config, team_config

if TYPE_CHECKING:
    from homeport.store.copying import CopyProgress as CopyProgress
    from homeport.store.database import Store as Store

__all__ = [
    "AdminStores",
    "StoreLocation",
    "check_known_revision",
    "copied_so_far",
    "copy_key",
    "copy_memory",
    "database_workspaces",
    "is_sqlite_spec",
    "locate_store",
    "migrate_database",
    "migrate_workspace",
    "schema_revision",
    "shown_spec",
    "shown_url",
    "split_store_option",
    "store_file",
]

_POSTGRES_SCHEMES = ("postgresql:", "postgres:", "postgresql+")


def store_file(root: Path) -> Path:
    """The SQLite file of the workspace at `root` (it may not exist yet)."""
    return store_path_for(root)


def schema_revision() -> str:
    """The schema revision this Homeport creates and migrates stores to."""
    from homeport.store.database import SCHEMA_REVISION

    return SCHEMA_REVISION


def shown_url(url: str) -> str:
    """A PostgreSQL store's URL with its password hidden, for messages."""
    from homeport.store import postgres

    return postgres.shown_url(url)


# -- where a workspace's store is ----------------------------------------------------------------


@dataclass(frozen=True)
class StoreLocation:
    """The store of one workspace. `exists` is None when it cannot be known from here."""

    kind: Literal["sqlite", "postgresql", "team", "unknown"]
    where: str  # the file, the database URL with its password hidden, or the team server's URL
    exists: bool | None
    schema: str | None = None  # postgresql
    revision: str | None = None  # postgresql: as recorded in homeport.workspaces
    key: str | None = None  # postgresql: the workspace's key there; team: the project's key
    error: str | None = None  # why it could not be read (unreachable database, a bad config)

    def describe(self) -> dict[str, Any]:
        """The `store*` fields of `homeport where --json`."""
        shown = {f"store_{name}": value for name, value in asdict(self).items() if name not in ("where", "exists")}
        return {"store": self.where, "store_exists": self.exists, **shown}

    def line(self) -> str:
        """One line for a person."""
        if self.kind == "team":
            return f"team server {self.where}, project {self.key or '-'}"
        if self.kind == "unknown":
            return f"unknown: {self.error}"
        if self.kind == "sqlite":
            if self.error is not None:  # a file named with --store that another workspace's memory is in
                return f"{self.where} ({self.error}: calls for this one are refused)"
            return self.where + ("" if self.exists else " (not created yet)")
        if self.error is not None:
            return f"{self.where}, schema {self.schema} ({self.error})"
        state = f"revision {self.revision}" if self.exists else "not created yet"
        return f"{self.where}, schema {self.schema}, {state}"


def locate_store(
    root: Path, store_url: str | None, trust_file: Path | None = None, named_file: Path | None = None
) -> StoreLocation:
    """The store a stdio server with `store_url` and `trust_file` (its settings') would use for the
    workspace at `root`. Asks the PostgreSQL database (read-only) for the workspace's schema and
    revision; never raises."""
    from homeport.mesh.team import TeamRouter
    from homeport.workspace.trust import TrustBook

    try:
        document = read_project_config(root)
        team = team_config(root, document)
        key = project_key(root, document).key if team is not None else None
        # A team server this user has not trusted for the project is not where its memory goes (yet).
        trusted = team is not None and TeamRouter({}, TrustBook(trust_file)).trusted_url(root) == team.url
    except HomeportError as exc:
        return StoreLocation("unknown", "", None, error=exc.message)
    if team is not None and trusted:
        return StoreLocation("team", team.url, None, key=key)
    if store_url:
        return _postgres(store_url, str(root))
    if named_file is not None:  # --store sqlite:///FILE
        return _named_file(named_file, str(root))
    path = store_file(root)
    return StoreLocation("sqlite", str(path), path.exists())


def _named_file(path: Path, key: str) -> StoreLocation:
    """A file named with --store sqlite:///FILE, and whether it holds another workspace (read-only)."""
    import sqlite3

    if not path.exists():
        return StoreLocation("sqlite", str(path), False, key=key)
    try:
        with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as conn:
            row = conn.execute("SELECT key FROM store_workspace WHERE id = 1").fetchone()
    except sqlite3.Error:  # no such table yet (an older revision), or not a database: serving says which
        row = None
    if row is not None and row[0] != key:
        return StoreLocation("sqlite", str(path), True, key=key, error=f"it holds the memory of the workspace {row[0]}")
    return StoreLocation("sqlite", str(path), True, key=key)


def _postgres(url: str, key: str) -> StoreLocation:
    from homeport.store.postgres import PostgresStores, schema_for

    try:
        stores = PostgresStores(url, pool_size=1)
    except HomeportError as exc:  # not a PostgreSQL URL
        return StoreLocation("unknown", shown_url(url), None, error=exc.message)
    try:
        found = stores.registered().get(key)
    except HomeportError as exc:
        return StoreLocation("postgresql", shown_url(url), None, schema_for(key), key=key, error=exc.message)
    finally:
        stores.close()
    if found is None:
        return StoreLocation("postgresql", shown_url(url), False, schema_for(key), key=key)
    schema, revision = found
    return StoreLocation("postgresql", shown_url(url), True, schema, revision, key=key)


# -- --store: a PostgreSQL database, or one SQLite file ----------------------------------------------


def split_store_option(value: str | None, cwd: Path) -> tuple[str | None, Path | None]:
    """`--store VALUE` as (PostgreSQL URL, None) or (None, SQLite file): `sqlite:///FILE` in SQLAlchemy's
    spelling (three slashes then a path relative to `cwd`, four for an absolute path; `~` expands).

    Raises:
        ConfigError: a sqlite URL that names no file (`sqlite://`, `sqlite:///`, `sqlite://host/x`, `:memory:`).
    """
    if not value:
        return None, None
    if not value.lower().startswith("sqlite"):
        return value, None
    scheme, sep, rest = value.partition("://")
    if scheme.lower() not in ("sqlite", "sqlite+pysqlite") or not sep or not rest.startswith("/"):
        raise ConfigError(
            f"--store {value}: a SQLite store is written sqlite:///path/to/file.db (relative to the current "
            "directory) or sqlite:////absolute/path/file.db"
        )
    name = rest[1:].partition("?")[0]
    if not name or name == ":memory:" or name.endswith("/"):
        raise ConfigError(
            f"--store {value}: name the file, e.g. sqlite:///memory/shop.db; an in-memory store would lose "
            "everything when the server stops"
        )
    return None, Path(os.path.abspath(cwd / Path(name).expanduser()))


# -- a store named on the command line (`homeport copy`) ------------------------------------------


def is_sqlite_spec(spec: str) -> bool:
    """`sqlite:PATH`: the SQLite store of the workspace at PATH (else a PostgreSQL URL)."""
    return spec.startswith("sqlite:")


def _sqlite_root(spec: str) -> Path:
    return Path(spec.removeprefix("sqlite:")).expanduser().absolute()


def shown_spec(spec: str) -> str:
    """A store as the command line named it, with a PostgreSQL password hidden."""
    return spec if is_sqlite_spec(spec) else shown_url(spec)


def copy_key(source: str, target: str, key: str | None) -> str | None:
    """The workspace's key on both sides of a copy: `key`, else the SQLite side's absolute path; None when
    both sides are PostgreSQL databases and no key was given."""
    if key:
        return key
    paths = [str(_sqlite_root(s)) for s in (source, target) if is_sqlite_spec(s)]
    return paths[0] if paths else None


class AdminStores:
    """The stores one admin command opens by name (`sqlite:PATH` or `postgresql://...`), closed together.

    with AdminStores() as stores:
        source = stores.open("sqlite:~/src/shop", key, create=False)
    """

    def __init__(self) -> None:
        self._opened: list[Any] = []  # a Store, or the PostgresStores its schema belongs to

    def __enter__(self) -> AdminStores:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self, spec: str, key: str, *, create: bool) -> Store | None:
        """The store `spec` names, for the workspace `key` on PostgreSQL; None when it holds no memory and not
        `create`. Opened with `create`, a store that an interrupted copy is filling is let in (the copy
        resumes it); without, it is refused as servers refuse it.

        Raises:
            ConfigError: `spec` names no store, or a SQLite workspace that is not a directory.
            StoreError: the store cannot be opened or migrated; a database migrated by a newer Homeport.
            CopyUnfinishedError: the store holds an unfinished copy and `create` is off.
        """
        if is_sqlite_spec(spec):
            from homeport.store.database import Store

            root = _sqlite_root(spec)
            if not root.is_dir():
                raise ConfigError(
                    f"{spec}: {root} is not a directory; name the workspace (the folder holding .homeport/)"
                )
            store = Store.open(root, create=create, allow_unfinished_copy=create)
            if store is not None:
                self._opened.append(store)
            return store
        if spec.startswith(_POSTGRES_SCHEMES):
            from homeport.store.postgres import PostgresStores

            stores = PostgresStores(spec, pool_size=1)
            self._opened.append(stores)
            stores.check_revisions()
            return stores.get(key, create=create, allow_unfinished_copy=create)
        raise ConfigError(f"{spec!r} is not a store: use sqlite:PATH or postgresql://user@host/db")

    def close(self) -> None:
        """Close every store opened, in the order they were opened."""
        opened, self._opened = self._opened, []
        for thing in opened:
            thing.close()


# -- copying, migrating, checking ----------------------------------------------------------------


def copy_memory(
    source: Store, target: Store, *, replace: bool, progress: Callable[[CopyProgress], None] | None = None
) -> dict[str, Any]:
    """Copy the memory of `source` into `target` in committed batches, resuming an unfinished copy, and verify it
    (`homeport.store.copying.copy_memory`, whose result this is).

    Raises:
        InvalidItemError: the target holds memory and not `replace`, or what was written differs from the source.
        CopyUnfinishedError: the target holds an unfinished copy of another source and not `replace`.
        StoreError: a batch failed (the message says how many items are committed and to run the copy again).
    """
    from homeport.store import copying

    return copying.copy_memory(source, target, replace=replace, progress=progress)


def copied_so_far(target: Store) -> tuple[int, int] | None:
    """(done, total) items of the unfinished copy `target` holds, as its checkpoint says; None when it holds
    none, or when it cannot be read (a connection the interrupt broke)."""
    from homeport.store.copy_state import read_checkpoint

    try:
        with target.read() as conn:
            found = read_checkpoint(conn)
    except StoreError:
        return None
    return (found.done, found.total) if found is not None else None


def migrate_database(url: str) -> dict[str, str]:
    """Bring every workspace of the PostgreSQL store at `url` to this version's revision (creating its table of
    workspaces if new); each workspace's key with its revision before. In the shared layout that is one
    migration for the database; a URL with `layout=shared` on a database of schemas moves them there (resumable).

    Raises:
        StoreTooNewError: a newer Homeport migrated a workspace there (nothing is migrated then).
        StoreError: the database cannot be reached.
    """
    from homeport.store.postgres import PostgresStores

    stores = PostgresStores(url, pool_size=1)
    try:
        if stores.moves_to_shared():  # `?layout=shared` on a database of schemas: move every workspace
            from homeport.store.postgres_move import move_into_shared

            return move_into_shared(stores)
        stores.check_revisions()
        return stores.migrate_all()
    finally:
        stores.close()


def migrate_workspace(root: Path, named_file: Path | None = None) -> Path | None:
    """Bring the SQLite store of the workspace at `root` (or the file named with --store sqlite:///FILE) to this
    version's revision; its file, or None when there is no store yet (nothing is created then).

    Raises:
        StoreError: it cannot be migrated; StoreTooNewError: a newer Homeport migrated it.
    """
    from homeport.store.database import Store

    path = named_file or store_file(root)
    if not path.exists():
        return None
    store = Store.open(root, create=True, path=named_file)
    assert store is not None
    store.close()
    return path


def database_workspaces(url: str) -> dict[str, tuple[str, str]]:
    """Each workspace registered in the PostgreSQL store at `url`, with its schema and revision; read-only.

    Raises:
        StoreError: the database cannot be reached.
    """
    from homeport.store.postgres import PostgresStores

    stores = PostgresStores(url, pool_size=1)
    try:
        return stores.registered()
    finally:
        stores.close()


def check_known_revision(revision: str | None, where: str) -> None:
    """Raises: StoreTooNewError: `revision` is one a newer Homeport wrote (this one would refuse the store)."""
    from homeport.store.migrate import check_known

    check_known(revision, where)
