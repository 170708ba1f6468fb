"""The deployment's secret: what every process of one deployment shares, so that each verifies
what another issued (workspace handles, the SDK's sealed request state).

First found wins: `HOMEPORT_HANDLE_KEY` (`ServeSettings.handle_key`, the same value on every
machine of the deployment); the PostgreSQL store's `homeport.secrets` table (every server on that
database); a file `deployment.key` in the data directory (every process of this user here).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from homeport.core.settings import ServeSettings
from homeport.errors import ConfigError
from homeport.workspace.handles import MIN_KEY_BYTES

if TYPE_CHECKING:
    from homeport.store.postgres import PostgresStores

__all__ = ["KEY_FILE", "deployment_secret"]

KEY_FILE = "deployment.key"


def deployment_secret(settings: ServeSettings, postgres: PostgresStores | None = None) -> Callable[[], bytes]:
    """The secret's source, read on first use and kept.

    Raises:
        ConfigError: a HOMEPORT_HANDLE_KEY shorter than 32 bytes (at once); the key file is unusable
            (on first use).
        StoreError: the PostgreSQL store cannot be read (on first use).
    """
    if settings.handle_key is not None:
        given = settings.handle_key.encode("utf-8")
        if len(given) < MIN_KEY_BYTES:
            raise ConfigError(
                f"HOMEPORT_HANDLE_KEY is {len(given)} bytes; give at least {MIN_KEY_BYTES} random characters, "
                "the same on every process of the deployment (python3 -c 'import secrets; "
                "print(secrets.token_hex(32))')"
            )
        return lambda: given
    if postgres is not None:
        store = postgres

        def from_store() -> bytes:
            from homeport.store.deployment_secret import postgres_secret

            return postgres_secret(store, "deployment")

        return _once(from_store)
    from homeport.core.settings import data_dir_of

    path = data_dir_of(settings) / KEY_FILE

    def from_file() -> bytes:
        from homeport.files.deployment_secret import read_or_create_secret

        return read_or_create_secret(path)

    return _once(from_file)


def _once(read: Callable[[], bytes]) -> Callable[[], bytes]:
    lock = threading.Lock()
    found: list[bytes] = []

    def secret() -> bytes:
        with lock:
            if not found:
                found.append(read())
            return found[0]

    return secret
