"""A bounded LRU of open stores: thousands of workspaces, a bounded number of file handles."""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from homeport.store.database import Store, store_path_for

__all__ = ["StoreCache"]


class StoreCache:
    """Open stores keyed by workspace root; the least recently used is closed past `capacity`."""

    def __init__(self, *, capacity: int = 32, pool_size: int = 2) -> None:
        self._capacity = capacity
        self._pool_size = pool_size
        self._stores: OrderedDict[Path, Store] = OrderedDict()
        self._lock = threading.Lock()
        self._open_locks: dict[Path, threading.Lock] = {}

    def get(self, root: Path, *, create: bool) -> Store | None:
        """The store of `root`; with `create` False, None when the workspace has no store yet."""
        with self._lock:
            store = self._stores.get(root)
            if store is not None:
                self._stores.move_to_end(root)
                return store
            if not create and not store_path_for(root).exists():
                return None
            open_lock = self._open_locks.setdefault(root, threading.Lock())
        with open_lock:  # one thread opens (and migrates) a store; others wait for it
            with self._lock:
                store = self._stores.get(root)
                if store is not None:
                    return store
            store = Store.open(root, create=create, pool_size=self._pool_size)
            if store is None:
                return None
            with self._lock:
                self._stores[root] = store
                evicted = []
                while len(self._stores) > self._capacity:
                    _, old = self._stores.popitem(last=False)
                    evicted.append(old)
                self._open_locks.pop(root, None)
        for old in evicted:
            old.close()
        return store

    def __len__(self) -> int:
        return len(self._stores)

    def close(self) -> None:
        with self._lock:
            stores = list(self._stores.values())
            self._stores.clear()
        for store in stores:
            store.close()
