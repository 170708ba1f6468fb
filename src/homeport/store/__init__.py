"""The memory store of each workspace: schema, migrations, one module per item type, search.

Names load on first use (PEP 562): `homeport.store.location` alone does not load SQLAlchemy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from homeport._lazy import lazy_names

if TYPE_CHECKING:
    from homeport.store.cache import StoreCache
    from homeport.store.database import SCHEMA_REVISION, Store
    from homeport.store.location import store_path_for

__all__ = ["SCHEMA_REVISION", "Store", "StoreCache", "store_path_for"]

_HOME = {
    "SCHEMA_REVISION": "homeport.store.database",
    "Store": "homeport.store.database",
    "StoreCache": "homeport.store.cache",
    "store_path_for": "homeport.store.location",
}


__getattr__, __dir__ = lazy_names(__name__, _HOME, __all__)
