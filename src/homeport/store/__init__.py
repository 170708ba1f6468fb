"""The memory store of each workspace: schema, migrations, one module per item type, search.

Names load on first use (PEP 562): `homeport.store.location` alone does not load SQLAlchemy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    try:
        module = _HOME[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
