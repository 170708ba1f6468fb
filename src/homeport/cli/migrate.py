"""`homeport migrate`: apply the store's migrations now, not on the first call."""

from __future__ import annotations

import click

from homeport.cli._compose import domain_errors, store_option, workspace_from_here

__all__ = ["migrate"]


@click.command()
@store_option(
    "A PostgreSQL store (postgresql://user@host/db): migrate every workspace in it, and create its "
    "table of workspaces if new (env: HOMEPORT_STORE). Without it: the SQLite store of the workspace here."
)
@domain_errors
def migrate(store_url: str | None) -> None:
    """Bring a store's schema to this version's revision.

    `homeport serve` migrates a workspace on its first use too; run this before starting several
    servers on a new release, or to check. A store at a revision newer than this version knows is
    refused (upgrade Homeport instead); several processes migrating at once apply each migration once.
    """
    from homeport.store.database import SCHEMA_REVISION

    if store_url:
        from homeport.store.postgres import PostgresStores, shown_url

        stores = PostgresStores(store_url, pool_size=1)
        try:
            stores.check_revisions()
            before = stores.migrate_all()
        finally:
            stores.close()
        moved = sorted(k for k, r in before.items() if r != SCHEMA_REVISION)
        click.echo(
            f"{shown_url(store_url)}: {len(before)} workspace(s) at revision {SCHEMA_REVISION}"
            + (f"; migrated {len(moved)}: {', '.join(moved)}" if moved else "; nothing to migrate")
        )
        return
    from homeport.store import Store, store_path_for

    ws = workspace_from_here()
    path = store_path_for(ws.root)
    if not path.exists():
        click.echo(f"{path}: no store yet (created at revision {SCHEMA_REVISION} by the first write)")
        return
    store = Store.open(ws.root, create=True)
    assert store is not None
    store.close()
    click.echo(f"{path}: at revision {SCHEMA_REVISION}")
