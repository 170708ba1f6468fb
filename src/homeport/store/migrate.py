"""Run the Alembic migrations of the memory schema on an engine."""

from __future__ import annotations

import threading

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

__all__ = ["alembic_config", "downgrade", "head_revision", "upgrade"]

# Alembic's `context` and `op` are process-wide proxies: two migrations in two threads (two fresh
# workspaces written at once) would run inside each other. One migration at a time per process.
_ALEMBIC_LOCK = threading.Lock()


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", "homeport.store:migrations")
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def upgrade(engine: Engine, revision: str = "head") -> None:
    config = alembic_config()
    with _ALEMBIC_LOCK, engine.connect().execution_options(homeport_begin="BEGIN IMMEDIATE") as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
        conn.commit()


def downgrade(engine: Engine, revision: str) -> None:
    config = alembic_config()
    with _ALEMBIC_LOCK, engine.connect().execution_options(homeport_begin="BEGIN IMMEDIATE") as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, revision)
        conn.commit()
