"""The memory store of each workspace: schema, migrations, one module per item type, search."""

from homeport.store.cache import StoreCache
from homeport.store.database import SCHEMA_REVISION, Store, store_path_for

__all__ = ["SCHEMA_REVISION", "Store", "StoreCache", "store_path_for"]
