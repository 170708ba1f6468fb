"""Is a registered instance still the one that registered? It must prove it, not only answer.

A pid is public and can be reused by an unrelated process after a crash; a port or a socket path is
anyone's once its owner has died, and an impostor there can answer `/healthz` with the dead owner's
pid. So an owner is live only when the process at its endpoint proves that it holds the secret the
owner created at registration (`registry.proof`: a challenge on a new connection, answered with an
HMAC of it, and on a unix socket the kernel's word that the peer is the registered pid of this user).

An instance that has claimed its workspaces but is not listening yet counts as live for a short
start-up grace, as long as its pid runs and nothing at its endpoint answers. The grace ends early for
an instance this `Liveness` has already seen prove itself: it was listening, so silence now means it
stopped (a killed process can keep its pid for a moment while the kernel tears it down, and must not
pass for one still starting). Anything that answers and fails the proof is not live, whatever the grace.
"""

from __future__ import annotations

import enum
import http.client
import json
import os
import socket
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from homeport.registry.model import Owner
from homeport.registry.proof import (
    connection_address,
    new_nonce,
    peer_credentials,
    proof_key,
    proof_target,
    verify_proof,
)

__all__ = [
    "HEALTH_TIMEOUT_SECONDS",
    "STARTUP_GRACE_SECONDS",
    "UNIX_SCHEME",
    "Liveness",
    "Proof",
    "healthz",
    "healthz_pid",
    "pid_running",
    "prove_owner",
]

HEALTH_TIMEOUT_SECONDS = 1.0
STARTUP_GRACE_SECONDS = 30.0
_MAX_ANSWER = 64 * 1024

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


def _connection(endpoint: str, timeout: float) -> http.client.HTTPConnection | None:
    """An HTTP connection to a local endpoint (never through a proxy), not yet connected; None for an
    endpoint that is neither `http://` nor `unix:`."""
    if endpoint.startswith(UNIX_SCHEME):
        return _UnixConnection(endpoint[len(UNIX_SCHEME) :], timeout)
    if endpoint.startswith("http://"):
        parts = urlsplit(endpoint)
        return http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=timeout)
    return None


def _get_json(connection: http.client.HTTPConnection, target: str) -> object:
    connection.request("GET", target, headers={"Host": "localhost"} if isinstance(connection, _UnixConnection) else {})
    response = connection.getresponse()
    if response.status != 200:
        return None
    return json.loads(response.read(_MAX_ANSWER))


def healthz(endpoint: str, timeout: float = HEALTH_TIMEOUT_SECONDS) -> dict[str, object] | None:
    """What an endpoint's /healthz answers (`http://HOST:PORT` or `unix:/path/to.sock`), or None.

    A report, not a proof (see `prove_owner`); on a unix socket, only a peer of this user is heard.
    """
    connection = _connection(endpoint, timeout)
    if connection is None:
        return None
    try:
        connection.connect()
        assert connection.sock is not None
        credentials = peer_credentials(connection.sock)
        if credentials is not None and credentials[1] != os.geteuid():
            return None
        data = _get_json(connection, "/healthz")
    except (OSError, ValueError, http.client.HTTPException):
        return None
    finally:
        connection.close()
    return data if isinstance(data, dict) else None


def healthz_pid(endpoint: str, timeout: float = HEALTH_TIMEOUT_SECONDS) -> int | None:
    """The pid an endpoint's /healthz reports, or None if nothing Homeport-like answers. Not a proof."""
    data = healthz(endpoint, timeout)
    pid = data.get("pid") if isinstance(data, dict) else None
    return pid if isinstance(pid, int) and not isinstance(pid, bool) else None


class Proof(enum.Enum):
    PROVEN = "proven"  # the registered owner answered
    FAILED = "failed"  # something answered, and it is not the registered owner
    SILENT = "silent"  # nothing answers there (yet)


def prove_owner(owner: Owner, secret: bytes | None, timeout: float = HEALTH_TIMEOUT_SECONDS) -> Proof:
    """Ask the process at `owner.endpoint` to prove it is `owner` (holding `secret`); blocking.

    SILENT when nothing answers (refused, closed or timed out before an answer); FAILED when the peer is
    another process on a unix socket, or its answer does not prove it, or there is no secret to check
    it with.
    """
    connection = _connection(owner.endpoint, timeout)
    if connection is None:
        return Proof.FAILED
    try:
        try:
            connection.connect()
        except OSError:
            return Proof.SILENT
        sock = connection.sock
        assert sock is not None
        credentials = peer_credentials(sock)
        if credentials is not None and credentials != (owner.pid, os.geteuid()):
            return Proof.FAILED
        address = connection_address(sock.family, sock.getpeername())
        if secret is None or address is None:
            return Proof.FAILED
        nonce = new_nonce()
        try:
            answer = _get_json(connection, proof_target(nonce))
        except (OSError, http.client.HTTPException):
            return Proof.SILENT  # listening but not answering yet (starting), or gone meanwhile
        except ValueError:
            return Proof.FAILED  # an answer, and not JSON
        return Proof.PROVEN if verify_proof(proof_key(secret), nonce, address, owner.pid, answer) else Proof.FAILED
    except OSError:
        return Proof.SILENT
    finally:
        connection.close()


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
    """`Liveness(secret_of)(owner)`: the process at the owner's endpoint proves it is the owner, with the
    secret `secret_of(owner.pid)` gives (None: there is none), or the owner is still starting (nothing
    answers, its pid runs, and it has not proved itself to this `Liveness` before).

    Without `secret_of` (a report that has no state directory to read secrets from), an answer of
    /healthz with the owner's pid is taken as live: never use that for forwarding.
    """

    def __init__(
        self,
        secret_of: Callable[[int], bytes | None] | None = None,
        *,
        timeout: float = HEALTH_TIMEOUT_SECONDS,
        startup_grace: float = STARTUP_GRACE_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.secret_of = secret_of
        self.timeout = timeout
        self.startup_grace = startup_grace
        self.clock = clock
        self._listened: set[tuple[int, str]] = set()  # (pid, endpoint) seen proving itself

    def __call__(self, owner: Owner) -> bool:
        seen = (owner.pid, owner.endpoint)
        if self.secret_of is None:
            answered = healthz_pid(owner.endpoint, self.timeout)
            outcome = Proof.SILENT if answered is None else Proof.PROVEN if answered == owner.pid else Proof.FAILED
        else:
            outcome = prove_owner(owner, self.secret_of(owner.pid), self.timeout)
        if outcome is Proof.PROVEN:
            self._listened.add(seen)
            return True
        if outcome is Proof.FAILED or seen in self._listened:
            return False
        starting = self.clock() - owner.started_at < self.startup_grace
        return starting and pid_running(owner.pid)
