"""The background indexer: one thread per process embeds pending items, so no write waits for a model.

A write (or the first call that opens a store) *notices* the store: a non-blocking put on a
bounded queue, nothing more. The thread then takes that store's pending items in batches, embeds
them and saves the vectors (`homeport.store.vectors.save_vectors` drops any whose item changed
meanwhile). What is pending is read from the store each time, never kept in memory: a full queue
or a crash only delays vectors, and the next notice finds every pending item again.

The model is loaded only for an item to embed (or by the first search by meaning): a store with
nothing pending costs the thread one query, under the model's name, which is known without loading
it. A server's first calls therefore never share the machine with the model's loading unless there
is something to embed, and then only after a quiet moment (QUIET_S after the call that noticed it).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from homeport.embedding.model import Embedder
from homeport.errors import HomeportError
from homeport.store.database import Store
from homeport.store.vectors import pending_items, save_vectors

__all__ = ["VectorIndexer", "embed_now"]

log = logging.getLogger(__name__)

# Items per batch. Measured with 400 writes while the thread embedded: 16 items a batch put the writes' p95
# at 5-9 ms (the GIL and the write lock held longer), 4 items at 1.2 ms, as without the extra, and
# embedded faster (less padding).
BATCH_ITEMS = 4
BATCH_CHUNKS = 32  # a long item's chunks are embedded in runs of this many
# Calls come first: a batch (and the model's loading) waits until no call has touched the indexer for
# QUIET_S, or MAX_WAIT_S at most, so a steady stream of calls still leaves room for embedding.
QUIET_S = 0.05
MAX_WAIT_S = 1.0


def embed_by_length(embedder: Embedder, texts: list[str]) -> Any:
    """The vectors of `texts`, in their order, embedded in runs of similar length.

    The model pads a run to its longest text: an item's title (its last chunk, a few words) run beside
    its body cost as much as the body. Sorted by length and cut where a text is over twice the run's
    first (or at BATCH_CHUNKS), little is padding.
    """
    import numpy as np

    order = sorted(range(len(texts)), key=lambda n: len(texts[n]))
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    run: list[int] = []
    for n in [*order, None]:
        if run and (n is None or len(run) >= BATCH_CHUNKS or len(texts[n]) > 2 * max(16, len(texts[run[0]]))):
            out[run] = embedder.embed([texts[k] for k in run])
            run = []
        if n is not None:
            run.append(n)
    return out


def embed_now(store: Store, embedder: Embedder, *, max_items: int) -> int:
    """Embed up to `max_items` pending items of `store` in this thread, in batches, and save their vectors; the
    number saved. For a process with no indexer thread (a shell command asked to search by meaning)."""
    saved = 0
    while saved < max_items:
        items = pending_items(store, embedder.name, limit=min(BATCH_ITEMS * 8, max_items - saved))
        if not items:
            break
        texts: list[str] = []
        spans: list[tuple[int, int]] = []
        for item in items:
            spans.append((len(texts), len(texts) + len(item.chunks)))
            texts.extend(item.chunks)
        vectors = embed_by_length(embedder, texts)
        done = save_vectors(store, embedder.name, [(it, vectors[a:b]) for it, (a, b) in zip(items, spans, strict=True)])
        if done == 0:
            break  # every item changed while it was embedded: another writer is at work; its indexer follows
        saved += done
    return saved


class VectorIndexer:
    """Embeds pending items of the stores it is told about, on one daemon thread started on first notice."""

    def __init__(
        self,
        embedder: Callable[[], Embedder],
        *,
        queue_size: int = 256,
        model_name: Callable[[], str | None] | None = None,
    ) -> None:
        self._load_embedder = embedder
        # The name the model's vectors carry, without loading it (None: unknown, then load to find out).
        self._model_name = model_name
        self._queue: queue.Queue[Store | None] = queue.Queue(maxsize=queue_size)
        self._queued: set[Path] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self.failure: str | None = None  # why the indexer stopped for good (the model could not be loaded)
        self._last_call = 0.0

    def touch(self) -> None:
        """A call is being served: the next batch waits for a quiet moment (see QUIET_S)."""
        self._last_call = time.monotonic()

    def notice(self, store: Store) -> None:
        """Have `store`'s pending items embedded soon. Never blocks; a full queue drops the notice."""
        if self.failure is not None or self._stopping.is_set():
            return
        self.touch()  # the call that noticed the store is still being answered
        with self._lock:
            if store.path in self._queued:
                return
            try:
                self._queue.put_nowait(store)
            except queue.Full:
                return  # the items stay pending; the store's next notice finds them
            self._queued.add(store.path)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="homeport-embedder", daemon=True)
                self._thread.start()

    def drain(self, timeout: float) -> bool:
        """Wait until every noticed store has no pending item left; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._queue.all_tasks_done.wait(remaining):
                    return False
        return True

    def close(self) -> None:
        """Stop after the current batch (its vectors are saved or, if cut short, found pending next time)."""
        self._stopping.set()
        thread = self._thread
        if thread is not None:
            with contextlib.suppress(queue.Full):
                self._queue.put_nowait(None)
            thread.join(timeout=10)

    def _run(self) -> None:
        embedder: Embedder | None = None
        while (store := self._queue.get()) is not None:
            try:
                with self._lock:
                    self._queued.discard(store.path)  # a write from now on notices it again
                if self._stopping.is_set() or self.failure is not None:
                    continue
                if embedder is None:
                    if not self._has_pending(store):
                        continue  # nothing to embed: the model stays unloaded until a search needs it
                    self._wait_for_quiet()
                    embedder = self._load_embedder()
                self._index(store, embedder)
            except HomeportError as exc:
                if embedder is None:
                    # No extra or no model: not a fault, search says so where it matters (mode_used, note).
                    self.failure = str(exc)
                    log.debug("search by meaning is off in this process: %s", exc)
                else:
                    log.warning("embedding items of %s stopped: %s", store.root, exc)
            except Exception:  # a bug must not end the thread: the next notice tries again
                log.exception("embedding items of %s failed", store.root)
            finally:
                self._queue.task_done()
        self._queue.task_done()

    def _has_pending(self, store: Store) -> bool:
        name = self._model_name() if self._model_name is not None else None
        return name is None or bool(pending_items(store, name, limit=1))

    def _wait_for_quiet(self) -> None:
        deadline = time.monotonic() + MAX_WAIT_S
        while (now := time.monotonic()) < deadline and now - self._last_call < QUIET_S:
            self._stopping.wait(QUIET_S)

    def _index(self, store: Store, embedder: Embedder) -> None:
        skipped_before: set[tuple[str, int]] = set()
        while not self._stopping.is_set():
            self._wait_for_quiet()
            items = pending_items(store, embedder.name, limit=BATCH_ITEMS)
            if not items:
                return
            texts: list[str] = []
            spans: list[tuple[int, int]] = []
            for item in items:
                chunks = item.chunks
                spans.append((len(texts), len(texts) + len(chunks)))
                texts.extend(chunks)
            vectors = embed_by_length(embedder, texts)
            saved = save_vectors(
                store, embedder.name, [(it, vectors[a:b]) for it, (a, b) in zip(items, spans, strict=True)]
            )
            if saved == 0:
                # Every item changed while it was embedded: embed the new texts, unless they are the same
                # items again with nothing saved twice running (then a writer is faster than the model).
                keys = {(it.item_type, it.item_id) for it in items}
                if keys <= skipped_before:
                    return
                skipped_before = keys
