"""Is a registered instance still the one that registered? Asked of its endpoint, not only its pid.

A pid alone can be reused by an unrelated process after a crash, and a port can be taken by
another server; the instance's own `/healthz` answering with the registered pid is the proof.
An instance that has claimed its workspaces but is not listening yet counts as live for a short
start-up grace, as long as its pid runs.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable

from homeport.registry.model import Owner

__all__ = ["HEALTH_TIMEOUT_SECONDS", "STARTUP_GRACE_SECONDS", "Liveness", "healthz_pid", "pid_running"]

HEALTH_TIMEOUT_SECONDS = 1.0
STARTUP_GRACE_SECONDS = 30.0

# Loopback health checks must never go through a proxy named in the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def healthz_pid(endpoint: str, timeout: float = HEALTH_TIMEOUT_SECONDS) -> int | None:
    """The pid an HTTP endpoint's /healthz reports, or None if nothing Homeport-like answers."""
    if not endpoint.startswith("http://"):
        return None
    try:
        with _OPENER.open(endpoint.rstrip("/") + "/healthz", timeout=timeout) as response:
            data = json.loads(response.read(64 * 1024))
    except (OSError, ValueError):
        return None
    pid = data.get("pid") if isinstance(data, dict) else None
    return pid if isinstance(pid, int) and not isinstance(pid, bool) else None


def pid_running(pid: int) -> bool:
    """Whether `pid` is a running process; a zombie (killed, not yet reaped by its parent) is not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: running, though certainly not ours
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            # "pid (comm) state ...": comm may hold spaces and parentheses, the state follows the last ")".
            return stat.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return True  # no /proc (macOS): kill(pid, 0) is all there is


class Liveness:
    """`Liveness()(owner)`: the endpoint answers with the owner's pid, or the owner is still starting."""

    def __init__(
        self,
        *,
        timeout: float = HEALTH_TIMEOUT_SECONDS,
        startup_grace: float = STARTUP_GRACE_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.timeout = timeout
        self.startup_grace = startup_grace
        self.clock = clock

    def __call__(self, owner: Owner) -> bool:
        answered = healthz_pid(owner.endpoint, self.timeout)
        if answered is not None:
            return answered == owner.pid
        starting = self.clock() - owner.started_at < self.startup_grace
        return starting and pid_running(owner.pid)
