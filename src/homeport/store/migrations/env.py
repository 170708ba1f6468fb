"""Alembic environment: Homeport always hands in an open connection (see homeport.store.migrate)."""

from alembic import context

from homeport.store.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
