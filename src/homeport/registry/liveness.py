"""Is a registered instance still the one that registered? Asked of its endpoint, not only its pid.

A pid alone can be reused by an unrelated process after a crash, and a port can be taken by
another server; the instance's own `/healthz` answering with the registered pid is the proof.
An instance that has claimed its workspaces but is not listening yet counts as live for a short
start-up grace, as long as its pid runs. The grace ends early for an instance this `Liveness` has
already seen answer: it was listening, so silence now means it stopped (a killed process can keep
its pid for a moment while the kernel tears it down, and must not pass for one still starting).
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable

from homeport.registry.model import Owner

__all__ = [
    "HEALTH_TIMEOUT_SECONDS",
    "STARTUP_GRACE_SECONDS",
    "UNIX_SCHEME",
    "Liveness",
    "healthz",
    "healthz_pid",
    "pid_running",
]

HEALTH_TIMEOUT_SECONDS = 1.0
STARTUP_GRACE_SECONDS = 30.0

# Loopback health checks must never go through a proxy named in the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


UNIX_SCHEME = "unix:"


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


def healthz(endpoint: str, timeout: float = HEALTH_TIMEOUT_SECONDS) -> dict[str, object] | None:
    """What an endpoint's /healthz answers (`http://HOST:PORT` or `unix:/path/to.sock`), or None."""
    try:
        if endpoint.startswith(UNIX_SCHEME):
            connection = _UnixConnection(endpoint[len(UNIX_SCHEME) :], timeout)
            try:
                connection.request("GET", "/healthz", headers={"Host": "localhost"})
                response = connection.getresponse()
                if response.status != 200:
                    return None
                data = json.loads(response.read(64 * 1024))
            finally:
                connection.close()
        elif endpoint.startswith("http://"):
            with _OPENER.open(endpoint.rstrip("/") + "/healthz", timeout=timeout) as answer:
                data = json.loads(answer.read(64 * 1024))
        else:
            return None
    except (OSError, ValueError, http.client.HTTPException):
        return None
    return data if isinstance(data, dict) else None


def healthz_pid(endpoint: str, timeout: float = HEALTH_TIMEOUT_SECONDS) -> int | None:
    """The pid an endpoint's /healthz reports, or None if nothing Homeport-like answers."""
    data = healthz(endpoint, timeout)
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
    """`Liveness()(owner)`: the endpoint answers with the owner's pid, or the owner is still starting
    (and has not answered this `Liveness` before)."""

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
        self._listened: set[tuple[int, str]] = set()  # (pid, endpoint) seen answering

    def __call__(self, owner: Owner) -> bool:
        answered = healthz_pid(owner.endpoint, self.timeout)
        seen = (owner.pid, owner.endpoint)
        if answered is not None:
            if live := answered == owner.pid:
                self._listened.add(seen)
            return live
        if seen in self._listened:
            return False
        starting = self.clock() - owner.started_at < self.startup_grace
        return starting and pid_running(owner.pid)
