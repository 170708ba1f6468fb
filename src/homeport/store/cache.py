"""A bounded LRU of open stores: thousands of workspaces, a bounded number of file handles."""

from __future__ import annotations

import queue
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING

from homeport.store.binding import bind_workspace, held_by_other
from homeport.store.database import Store, StoreConnector, store_path_for
from homeport.store.loop_calls import may_wait

if TYPE_CHECKING:
    from homeport.store.postgres import PostgresStores

__all__ = ["StoreCache"]

_MAX_PENDING = 16


class StoreCache:
    """Open stores keyed by workspace root; the least recently used is closed past `capacity`."""

    def __init__(
        self, *, capacity: int = 32, pool_size: int = 2, url: str | None = None, file: Path | None = None
    ) -> None:
        # With `url` (postgresql://...) every workspace's store is a schema in that one database.
        # With `file` (--store sqlite:///FILE) one workspace's store is that file, bound to it on first use.
        self._file = file
        self._bound: str | None = None  # the workspace the file holds, once this cache has opened it
        self._postgres: PostgresStores | None = None
        if url:
            from homeport.store.postgres import PostgresStores

            self._postgres = PostgresStores(url)
        self._capacity = capacity
        self._pool_size = pool_size
        self._stores: OrderedDict[Path, Store] = OrderedDict()
        self._lock = threading.Lock()
        self._open_locks: dict[Path, threading.Lock] = {}
        self._connector = StoreConnector()
        # Stores found at the head schema by this cache: reopened without the check after eviction.
        self._current: set[Path] = set()
        # Closing a SQLite store in WAL mode checkpoints it (about 1 ms); evicted stores are closed by
        # a background thread, off the path of the call that evicted them. At most `_MAX_PENDING` wait,
        # so open files stay bounded when closing falls behind.
        self._closing: queue.SimpleQueue[Store | None] = queue.SimpleQueue()
        self._pending = threading.Semaphore(_MAX_PENDING)
        self._closer: threading.Thread | None = None

    def get(self, root: Path, *, create: bool, key: str | None = None) -> Store | None:
        """The store of `root`; with `create` False, None when the workspace has no store yet.

        On PostgreSQL a workspace is found by `key` (a logical workspace's key, such as ``acme/api``)
        or else by its root: never by a path under one server's data directory, which differs between
        the processes and machines that share the store.
        """
        if self._postgres is not None:
            return self._postgres.get(key if key is not None else str(root), create=create)
        if (
            self._file is not None
            and self._bound is not None
            and self._bound != (key if key is not None else str(root))
        ):
            raise held_by_other(self._file, self._bound, key if key is not None else str(root))
        with self._lock:
            store = self._stores.get(root)
            if store is not None:
                self._stores.move_to_end(root)
                return store
            if not create and not (self._file or store_path_for(root)).exists():
                return None
            open_lock = self._open_locks.setdefault(root, threading.Lock())
        may_wait("opening the store")  # creating or migrating it takes a file lock; a connection is opened
        with open_lock:  # one thread opens (and migrates) a store; others wait for it
            with self._lock:
                store = self._stores.get(root)
                if store is not None:
                    return store
            store = Store.open(
                root,
                create=create,
                pool_size=self._pool_size,
                known_current=root in self._current,
                connector=self._connector,
                path=self._file,
            )
            if store is None:
                return None
            if self._file is not None:
                try:
                    bind_workspace(store, key if key is not None else str(root))
                except BaseException:
                    store.close()
                    raise
                self._bound = key if key is not None else str(root)
            with self._lock:
                self._current.add(root)
                self._stores[root] = store
                evicted = []
                while len(self._stores) > self._capacity:
                    _, old = self._stores.popitem(last=False)
                    evicted.append(old)
                self._open_locks.pop(root, None)
        for old in evicted:
            self._close_later(old)
        return store

    def _close_later(self, store: Store) -> None:
        if not self._pending.acquire(blocking=False):
            store.close()  # the closer is behind: close here rather than hold more files open
            return
        if self._closer is None:
            with self._lock:
                if self._closer is None:
                    self._closer = threading.Thread(target=self._close_loop, name="homeport-store-closer", daemon=True)
                    self._closer.start()
        self._closing.put(store)

    def _close_loop(self) -> None:
        while (store := self._closing.get()) is not None:
            try:
                store.close()
            finally:
                self._pending.release()

    def roots(self) -> list[Path]:
        """The roots of the open stores, most recently used first."""
        with self._lock:
            return list(reversed(self._stores))

    @property
    def file(self) -> Path | None:
        """The one store file named with --store sqlite:///FILE, if any."""
        return self._file

    @property
    def postgres(self) -> PostgresStores | None:
        """The shared PostgreSQL store, when this cache was given a URL."""
        return self._postgres

    def __len__(self) -> int:
        return len(self._postgres) if self._postgres is not None else len(self._stores)

    def close(self) -> None:
        """Close every store, including those still waiting for the background closer."""
        with self._lock:
            stores = list(self._stores.values())
            self._stores.clear()
            closer, self._closer = self._closer, None
        for store in stores:
            store.close()
        if closer is not None:
            self._closing.put(None)
            closer.join(timeout=30)
        self._connector.close()
        if self._postgres is not None:
            self._postgres.close()
