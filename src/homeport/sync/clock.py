"""Hybrid logical clocks: wall time, a counter and a replica id, as one string that sorts in time order.

A clock is `<milliseconds since 1970, 13 digits>.<counter, 6 digits>.<replica id>`. A replica hands out
clocks that always grow, whatever its wall clock does (a clock set back does not make a later edit
older), and one that has seen a clock from another replica hands out only larger ones afterwards
(`witness`): an edit made after reading a value always beats that value, even when the machine that
made it runs minutes behind. Between concurrent edits the larger clock wins, which is the later edit
when the wall clocks agree; the replica id breaks the tie and makes every clock unique.
(Kulkarni et al., "Logical Physical Clocks", 2014.)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime

__all__ = ["HybridClock", "parse_clock", "stamp_millis"]

_COUNTER_DIGITS = 6


def parse_clock(clock: str) -> tuple[int, int, str]:
    millis, counter, replica = clock.split(".", 2)
    return int(millis), int(counter), replica


def stamp_millis(stamp: str | None) -> int:
    """Milliseconds of an ISO 8601 stamp as the store writes them (0 for None or an unreadable one)."""
    if not stamp:
        return 0
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return 0


@dataclass
class HybridClock:
    """The clock of one replica: the last (millis, counter) it handed out or witnessed."""

    replica: str
    millis: int = 0
    counter: int = 0

    @classmethod
    def load(cls, replica: str, last: str | None) -> HybridClock:
        if not last:
            return cls(replica)
        millis, counter, _ = parse_clock(last)
        return cls(replica, millis, counter)

    @property
    def last(self) -> str:
        return self._format(self.millis, self.counter)

    def tick(self, physical: int | None = None) -> str:
        """A new clock, larger than every one handed out or witnessed; `physical` (ms) is when the edit was made."""
        wall = _now() if physical is None else physical
        if wall > self.millis:
            self.millis, self.counter = wall, 0
        else:
            self._bump()
        return self.last

    def witness(self, clock: str) -> None:
        """Remember a clock another replica handed out: every later `tick` is larger."""
        millis, counter, _ = parse_clock(clock)
        if (millis, counter) > (self.millis, self.counter):
            self.millis, self.counter = millis, counter

    def _bump(self) -> None:
        self.counter += 1
        if self.counter >= 10**_COUNTER_DIGITS:  # a million clocks in one millisecond: borrow the next one
            self.millis, self.counter = self.millis + 1, 0

    def _format(self, millis: int, counter: int) -> str:
        return f"{millis:013d}.{counter:0{_COUNTER_DIGITS}d}.{self.replica}"


def _now() -> int:
    return time.time_ns() // 1_000_000
