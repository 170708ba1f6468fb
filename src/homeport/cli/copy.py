"""`homeport copy`: one workspace's memory from one store to another (SQLite <-> PostgreSQL)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from homeport.cli._compose import domain_errors
from homeport.errors import ConfigError

if TYPE_CHECKING:
    from homeport.store import Store

__all__ = ["copy"]


@click.command()
@click.option("--from", "source", required=True, metavar="STORE", help="sqlite:PATH (a workspace) or postgresql://...")
@click.option("--to", "target", required=True, metavar="STORE", help="sqlite:PATH (a workspace) or postgresql://...")
@click.option(
    "--key",
    metavar="KEY",
    help="The workspace's key in the PostgreSQL store (a canonical path or a logical key such as acme/api); "
    "default: the absolute path of the SQLite workspace.",
)
@click.option("--replace", is_flag=True, help="Overwrite memory the target workspace already holds.")
@domain_errors
def copy(source: str, target: str, key: str | None, replace: bool) -> None:
    """Copy one workspace's memory between stores, e.g. onto a team's PostgreSQL store.

    \b
      homeport copy --from sqlite:~/src/shop --to postgresql://homeport@db/homeport
      homeport copy --from postgresql://homeport@db/homeport --key /srv/src/shop --to sqlite:.

    Everything is copied in one transaction (ids, uids, tags, links, context history) and read back
    before the commit: the counts and a SHA-256 of the whole memory must match the source, or nothing
    is written. A copy that fails leaves the target as it was; run it again.
    """
    from rich.progress import BarColumn, Progress, TextColumn

    from homeport.store.transfer import copy_memory

    paths = [Path(s.removeprefix("sqlite:")).expanduser().absolute() for s in (source, target) if _is_sqlite(s)]
    workspace_key = key or (str(paths[0]) if paths else None)
    if workspace_key is None:
        raise click.UsageError("copying between two PostgreSQL stores needs --key")
    opened: list[Any] = []
    try:
        src = _open(source, workspace_key, create=False, opened=opened)
        if src is None:
            raise ConfigError(f"{source} holds no memory for {workspace_key}; nothing to copy")
        dst = _open(target, workspace_key, create=True, opened=opened)
        assert dst is not None
        with Progress(
            TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}")
        ) as bar:
            task = bar.add_task("copying", total=3)
            result = copy_memory(
                src,
                dst,
                replace=replace,
                progress=lambda step, n: bar.update(task, advance=1, description=f"{step} {n} items"),
            )
    finally:
        for thing in opened:
            thing.close()
    shown = ", ".join(f"{n} {section}" for section, n in result["counts"].items() if n)
    click.echo(f"copied {result['items']} items ({shown or 'none'}); sha256 {result['checksum'][:16]} matches")


def _is_sqlite(spec: str) -> bool:
    return spec.startswith("sqlite:")


def _open(spec: str, key: str, *, create: bool, opened: list[Any]) -> Store | None:
    from homeport.store import Store

    if _is_sqlite(spec):
        root = Path(spec.removeprefix("sqlite:")).expanduser().absolute()
        if not root.is_dir():
            raise ConfigError(f"{spec}: {root} is not a directory; name the workspace (the folder holding .homeport/)")
        store = Store.open(root, create=create)
        if store is not None:
            opened.append(store)
        return store
    if spec.startswith(("postgresql:", "postgres:", "postgresql+")):
        from homeport.store.postgres import PostgresStores

        stores = PostgresStores(spec, pool_size=1)
        opened.append(stores)
        stores.check_revisions()
        return stores.get(key, create=create)
    raise ConfigError(f"{spec!r} is not a store: use sqlite:PATH or postgresql://user@host/db")
