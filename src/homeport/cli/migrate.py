"""`homeport migrate`: apply the store's migrations now, not on the first call."""

from __future__ import annotations

from pathlib import Path

import click

from homeport.cli._compose import domain_errors, store_option, workspace_from_here

__all__ = ["migrate"]


@click.command()
@store_option(
    "A PostgreSQL store (postgresql://user@host/db): migrate every workspace in it, and create its "
    "table of workspaces if new (env: HOMEPORT_STORE); with ?layout=shared, the shared tables of every "
    "workspace, once (a database of schemas is moved into them, resumably). A SQLite file "
    "(sqlite:///path/to/file.db): migrate it. Without it: the SQLite store of the workspace here."
)
@domain_errors
def migrate(store_url: str | None) -> None:
    """Bring a store's schema to this version's revision.

    `homeport serve` migrates a workspace on its first use too; run this before starting several
    servers on a new release, or to check. A store at a revision newer than this version knows is
    refused (upgrade Homeport instead); several processes migrating at once apply each migration once.
    """
    from homeport.core.stores import (
        migrate_database,
        migrate_workspace,
        schema_revision,
        shown_url,
        split_store_option,
        store_file,
    )

    revision = schema_revision()
    store_url, named_file = split_store_option(store_url, Path.cwd())
    if named_file is not None:
        if migrate_workspace(named_file.parent, named_file) is None:
            click.echo(f"{named_file}: no store yet (created at revision {revision} by the first write)")
        else:
            click.echo(f"{named_file}: at revision {revision}")
        return
    if store_url:
        before = migrate_database(store_url)
        moved = sorted(k for k, r in before.items() if r != revision)
        click.echo(
            f"{shown_url(store_url)}: {len(before)} workspace(s) at revision {revision}"
            + (f"; migrated {len(moved)}: {', '.join(moved)}" if moved else "; nothing to migrate")
        )
        return
    ws = workspace_from_here()
    path = migrate_workspace(ws.root)
    if path is None:
        click.echo(f"{store_file(ws.root)}: no store yet (created at revision {revision} by the first write)")
        return
    click.echo(f"{path}: at revision {revision}")
