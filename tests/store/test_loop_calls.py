"""A call on the event loop never waits there, and a call run again on a thread never writes twice.

`homeport.store.loop_calls`: on the loop, a step that could wait raises `MustWait` as long as the
call has changed nothing (the pipeline then runs it again on a worker thread); once a write has
committed, the step waits instead. These tests hold the store's write lock from another SQLite
connection (another process, as far as SQLite knows) or from another thread of this process.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from homeport.store import Store, StoreCache, decisions, store_path_for
from homeport.store.database import BUSY_TIMEOUT_MS, driver
from homeport.store.loop_calls import MustWait, changed, may_wait, on_loop, on_the_loop


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(tmp_path, create=True)
    assert s is not None
    yield s
    s.close()


class OtherWriter:
    """Another connection to the same file holding the write lock (BEGIN IMMEDIATE) until released."""

    def __init__(self, root: Path) -> None:
        self.conn = sqlite3.connect(store_path_for(root), isolation_level=None, check_same_thread=False)
        self._lock = threading.Lock()  # a timer may release while the test closes
        self._closed = False

    def __enter__(self) -> OtherWriter:
        self.conn.execute("BEGIN IMMEDIATE")
        return self

    def release(self) -> None:
        with self._lock:
            if not self._closed and self.conn.in_transaction:
                self.conn.execute("ROLLBACK")

    def __exit__(self, *exc: object) -> None:
        self.release()
        with self._lock:
            self._closed = True
            self.conn.close()


def _summaries(store: Store) -> list[str]:
    return sorted(d["summary"] for d in decisions.get_decisions(store, limit=100))


def _busy_timeout(store: Store) -> int:
    with store.read() as conn:
        return driver(conn).execute("PRAGMA busy_timeout").fetchone()[0]


def test_off_the_loop_may_wait_and_changed_do_nothing():
    assert not on_the_loop()
    may_wait("anything")
    changed()


def test_on_the_loop_may_wait_raises_until_the_call_changed_something():
    with on_loop():
        assert on_the_loop()
        with pytest.raises(MustWait):
            may_wait("a lock")
        changed()
        may_wait("a lock")  # a call that wrote cannot be run again: it waits where it is
    assert not on_the_loop()
    with on_loop(), pytest.raises(MustWait):  # every call starts unchanged
        may_wait("a lock")


def test_must_wait_is_not_caught_by_a_handler_of_errors():
    with on_loop(), pytest.raises(MustWait):
        try:
            may_wait("a lock")
        except Exception:  # a tool's or the store's own handler
            pytest.fail("MustWait was caught as an error")


def test_a_write_on_the_loop_while_another_process_holds_the_lock_writes_nothing_and_restores_the_timeout(store):
    decisions.log_decision(store, "before")
    with OtherWriter(store.root):
        started = time.monotonic()
        with on_loop(), pytest.raises(MustWait):
            decisions.log_decision(store, "on the loop")
        assert time.monotonic() - started < 1.0  # asked the lock once, waited for nothing
    assert _summaries(store) == ["before"]
    assert _busy_timeout(store) == BUSY_TIMEOUT_MS  # the pooled connection waits again off the loop


def test_a_write_on_the_loop_while_a_thread_of_this_process_writes_must_wait(store):
    with store._write_lock, on_loop(), pytest.raises(MustWait):
        decisions.log_decision(store, "on the loop")
    assert _summaries(store) == []


def test_a_write_on_the_loop_with_the_lock_free_is_written_there(store):
    with on_loop():
        decisions.log_decision(store, "on the loop")
    assert _summaries(store) == ["on the loop"]


def test_after_a_committed_write_a_second_write_of_the_same_call_waits_for_the_lock(store):
    with OtherWriter(store.root) as other:
        threading.Timer(0.3, other.release).start()
        with on_loop():
            changed()  # as after the call's first commit
            decisions.log_decision(store, "second write")
    assert _summaries(store) == ["second write"]


def test_a_commit_on_the_loop_marks_the_call_changed(store):
    with on_loop():
        decisions.log_decision(store, "first")
        may_wait("anything")  # no longer raises: the call cannot be run again


def test_opening_a_store_on_the_loop_must_wait_and_an_open_one_is_served_there(tmp_path):
    cache = StoreCache()
    try:
        root = tmp_path / "project"
        root.mkdir()
        with on_loop(), pytest.raises(MustWait):
            cache.get(root, create=True)
        assert not store_path_for(root).exists()  # nothing created on the loop
        opened = cache.get(root, create=True)  # on the worker thread
        with on_loop():
            assert cache.get(root, create=True) is opened
            assert cache.get(tmp_path / "no-store-here", create=False) is None  # one stat, nothing to wait for
    finally:
        cache.close()


# A call is a few writes; before each, another process may hold the lock. The pipeline's rule: run on
# the loop; on MustWait run the whole call again off the loop. Whatever the interleaving, every write
# of the call is in the store exactly once, and a call that raised MustWait left no trace.
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(contended=st.lists(st.booleans(), min_size=1, max_size=4))
def test_a_call_run_again_off_the_loop_writes_each_of_its_items_exactly_once(tmp_path_factory, contended):
    root = tmp_path_factory.mktemp("call")
    store = Store.open(root, create=True)
    assert store is not None
    try:
        summaries = [f"write {i}" for i in range(len(contended))]

        def call(on_loop_now: bool) -> None:
            for summary, busy in zip(summaries, contended, strict=True):
                if busy and on_loop_now:
                    with OtherWriter(root) as other:
                        threading.Timer(0.05, other.release).start()
                        decisions.log_decision(store, summary)
                else:
                    decisions.log_decision(store, summary)

        try:
            with on_loop():
                call(True)
        except MustWait:
            assert _summaries(store) == []  # raised only before the call's first commit
            call(False)
        assert _summaries(store) == sorted(summaries)
    finally:
        store.close()
