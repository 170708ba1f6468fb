"""Search by meaning in a server process: the model loaded once on first use, the background indexer,
and `search` in its three modes.

    words     full-text search alone (FTS5, bm25)
    semantic  nearest items by meaning alone; an error naming the fix when the extra or model is missing
    auto      both, fused by reciprocal rank; word search alone, silently, when the extra is missing

Nothing here imports numpy or the model at start-up: whether the extra is installed is checked
with `find_spec`, and the model loads when the first item is embedded or the first query is.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

from homeport.embedding.model import Embedder, find_model, load_embedder, unavailable_reason
from homeport.errors import SemanticSearchUnavailableError
from homeport.store import Store, branches
from homeport.store import search as word_search
from homeport.store.loop_calls import may_wait

__all__ = ["SEARCH_MODES", "SearchMode", "SemanticSearch"]

SearchMode = Literal["auto", "words", "semantic"]
SEARCH_MODES: tuple[SearchMode, ...] = ("auto", "words", "semantic")
# How many of word search's ranking auto mode fuses: deep enough that an item ranked low by it and high
# by meaning still surfaces (the ranking by meaning is taken 2 x limit deep, see `search`).
_FUSION_DEPTH = 50
_QUERY_CACHE = 256
# A process without the indexer thread (a shell command) embeds at most this many waiting items before a
# search by meaning: a few seconds on 2 cores; more stay pending, and the search says how many.
EMBED_NOW_MAX = 500


class SemanticSearch:
    """One per process: owns the embedder and the indexer thread (started only by a first write or search)."""

    def __init__(self, data_dir: Path | None, *, background: bool = True) -> None:
        self._data_dir = data_dir
        self._background = background
        self._embedder: Embedder | None = None
        self._lock = threading.Lock()
        self._reason: str | None = None
        self._checked = False
        self._seen: set[Path] = set()
        self._indexer: Any = None  # homeport.embedding.indexer.VectorIndexer, imported on first use
        self._cache: Any = None  # homeport.store.vectors.VectorCache
        self._queries: OrderedDict[tuple[str, str], Any] = OrderedDict()  # (model, query) -> its vector
        self._pool: ThreadPoolExecutor | None = None  # embeds a query while its words are searched

    def unavailable(self) -> str | None:
        """Why search by meaning cannot run in this process (checked once, without importing the extra)."""
        if not self._checked:
            self._reason = unavailable_reason(self._data_dir)
            self._checked = True
        return self._reason

    def embedder(self) -> Embedder:
        """Raises: SemanticSearchUnavailableError: the extra or the model is missing, or the model is damaged."""
        if self._embedder is None:
            with self._lock:
                if self._embedder is None:
                    self._embedder = load_embedder(self._data_dir)
        return self._embedder

    def model_name(self) -> str | None:
        """The name this process's model gives its vectors, found without loading it (None: no model)."""
        files = find_model(self._data_dir) if self.unavailable() is None else None
        return files.name if files is not None else None

    def notice(self, store: Store, *, wrote: bool) -> None:
        """After a call used `store`: queue its pending items on a write or on the first call to it.

        Costs the call a set lookup: whether the extra and a model are there is found out on the
        indexer's thread (which then stops for good if they are not).
        """
        if not self._background:
            return
        if self._indexer is not None:
            self._indexer.touch()
        if not wrote and store.path in self._seen:
            return
        self._seen.add(store.path)
        if self._indexer is None:
            with self._lock:
                if self._indexer is None:
                    from homeport.embedding.indexer import VectorIndexer

                    self._indexer = VectorIndexer(self.embedder, model_name=self.model_name)
        self._indexer.notice(store)

    def drain(self, timeout: float = 60.0) -> bool:
        """Wait until the indexer has embedded every item it was told about (tests and benchmarks)."""
        return self._indexer is None or bool(self._indexer.drain(timeout))

    def search(
        self,
        store: Store | None,
        query: str,
        *,
        mode: SearchMode,
        types: Sequence[str] | None = None,
        tags_any: Sequence[str] | None = None,
        category: str | None = None,
        since: str | None = None,
        limit: int = 20,
    ) -> dict[str, Any]:
        """`{results, mode_used, not_yet_embedded?, note?}`; see the module docstring for the modes.

        Raises:
            SemanticSearchUnavailableError: mode "semantic" without the extra or a model.
            InvalidItemError: as word search (an empty query, an unknown type, a bad `since`).
        """
        filters: dict[str, Any] = {"types": types, "tags_any": tags_any, "category": category, "since": since}
        reason = self.unavailable() if mode != "words" else None
        if mode == "semantic" and reason is not None:
            raise SemanticSearchUnavailableError(f"{reason}; or search with mode='words'")
        if mode != "words" and reason is None and store is not None:
            may_wait("the model that embeds the query")  # loaded on first use, then a few ms of inference
        if mode == "words" or reason is not None:
            results = word_search.search(store, query, limit=limit, **filters)
            out: dict[str, Any] = {"results": results, "mode_used": "words"}
            if reason is not None:
                out["note"] = f"searched by words only: {reason}"
            return out
        # With the model loaded, the query is embedded on another thread while the words are searched (both
        # release the GIL): auto costs the longer of the two, not their sum.
        embedding = None
        if store is not None and self._embedder is not None and not self._known_query(self._embedder, query):
            embedding = self._query_pool().submit(self._query_vector, self._embedder, query)
        words = word_search.search(store, query, limit=max(limit, _FUSION_DEPTH) if mode == "auto" else 1, **filters)
        if store is None:
            return {"results": [], "mode_used": mode, "not_yet_embedded": 0}
        from homeport.store.vectors import VectorCache, VectorFilters, vector_search_path

        try:
            embedder = self.embedder()
        except SemanticSearchUnavailableError as exc:  # a damaged model: auto still answers, by words
            if mode == "semantic":
                raise
            return {"results": words[:limit], "mode_used": "words", "note": f"searched by words only: {exc}"}
        if self._cache is None:
            with self._lock:
                if self._cache is None:
                    self._cache = VectorCache()
        self.notice(store, wrote=False)
        query_vector = embedding.result() if embedding is not None else self._query_vector(embedder, query)
        hidden = branches.hidden_keys_of(store)  # decisions and patterns of branches the reader is not on
        # Auto takes twice `limit` by meaning: with RRF k = 5 an item further down cannot reach the first
        # `limit` (measured on the labelled sets: depth 20 and 50 gave the same hit@10 and MRR at limit 10).
        depth = (limit if mode == "semantic" else 2 * limit) + len(hidden)
        meaning = self._cache.nearest(store, embedder.name, query_vector, filters=VectorFilters(**filters), limit=depth)
        meaning = branches.without_hidden(meaning, hidden)
        if mode == "semantic":
            results = meaning
        else:
            from homeport.store.fusion import fuse

            results = fuse({"words": words, "semantic": meaning}, limit=limit)
        pending = self._cache.pending(store, embedder.name)  # counted again only after a write
        # Which path searched by meaning: "pgvector <version>" or "float32 blobs" (store/vectors.py).
        return {
            "results": results,
            "mode_used": mode,
            "not_yet_embedded": pending,
            "vector_search": vector_search_path(store),
        }

    def embed_waiting(self, store: Store | None, *, mode: SearchMode) -> int:
        """In a process without the indexer thread (a shell command), before a search by meaning: embed the
        items that wait (at most EMBED_NOW_MAX), or they would stay "not embedded yet" for every command run
        without a server. Called outside the search's read, which must see the new vectors. The number saved.
        """
        if self._background or mode != "semantic" or store is None or self.unavailable() is not None:
            return 0
        from homeport.embedding.indexer import embed_now
        from homeport.store.vectors import pending_count

        embedder = self.embedder()
        if not pending_count(store, embedder.name):
            return 0
        return embed_now(store, embedder, max_items=EMBED_NOW_MAX)

    def _query_vector(self, embedder: Embedder, query: str) -> Any:
        """The query's vector; the last `_QUERY_CACHE` queries' are kept (an agent often asks again)."""
        key = (embedder.name, query)
        with self._lock:
            vector = self._queries.get(key)
            if vector is not None:
                self._queries.move_to_end(key)
                return vector
        vector = embedder.embed([query])[0]
        with self._lock:
            self._queries[key] = vector
            while len(self._queries) > _QUERY_CACHE:
                self._queries.popitem(last=False)
        return vector

    def _known_query(self, embedder: Embedder, query: str) -> bool:
        with self._lock:
            return (embedder.name, query) in self._queries

    def _query_pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            with self._lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="homeport-query")
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
        if self._indexer is not None:
            self._indexer.close()
