"""Running a call on the server's event loop, and the steps that must not wait there.

Over HTTP, a memory call on a SQLite store runs on the event loop instead of a worker thread:
with 32 clients, the hop to a thread and the threads' contention with the loop for the GIL cost
more CPU than the call itself (bench/results/2026-11-27-loop-calls.md). Nothing may wait on the
loop, since every other client waits with it. So every step that could wait (opening a store, a
write lock another writer holds, the model for search by meaning, the project's own files) asks
`may_wait()` first. On the loop, before the call has changed anything, that raises `MustWait`
and the pipeline runs the whole call again on a worker thread. A call that has already committed
a write cannot be run twice: it waits where it is, as it would on a thread.

    with on_loop():       # the pipeline, around one call
        ...
        may_wait("...")   # a step that could wait: raises MustWait, or returns and the step waits
        ...
        changed()         # a write committed: from here on the call is never run again

Outside `on_loop` (a worker thread, stdio, the shell) `may_wait` and `changed` do nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

__all__ = ["MustWait", "changed", "may_wait", "on_loop", "on_the_loop"]


class MustWait(BaseException):
    """A step of a call on the event loop would wait, and the call has changed nothing yet: run it on a thread.

    A BaseException, so that no `except Exception` between the step and the pipeline (a tool's own
    handler, the store's error mapping) can turn it into an answer.
    """


class _LoopCall:
    __slots__ = ("changed",)

    def __init__(self) -> None:
        self.changed = False


_CALL: ContextVar[_LoopCall | None] = ContextVar("homeport_loop_call", default=None)


@contextlib.contextmanager
def on_loop() -> Iterator[None]:
    """Run the block as one call on the event loop (the pipeline catches `MustWait` around it)."""
    token = _CALL.set(_LoopCall())
    try:
        yield
    finally:
        _CALL.reset(token)


def on_the_loop() -> bool:
    """Whether this code runs inside `on_loop` (a step may then try without waiting first)."""
    return _CALL.get() is not None


def may_wait(what: str) -> None:
    """Called before a step that could wait for `what`.

    Raises:
        MustWait: on the loop, and the call has changed nothing yet.
    """
    call = _CALL.get()
    if call is not None and not call.changed:
        raise MustWait(what)


def changed() -> None:
    """A write of this call committed: it must not be run again, so later steps wait instead of raising."""
    call = _CALL.get()
    if call is not None:
        call.changed = True
