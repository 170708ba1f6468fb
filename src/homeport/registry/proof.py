"""An owner proves who it is before a front end sends it anything of a call.

A registry entry, a port or a socket says where an owner might be; a pid is public, and a port or a
socket path is anyone's once its owner has died. What only the owner has is the secret it created
when it registered (STATE_DIR/secrets/PID.key, mode 0600, in a 0700 directory of the user's; never
in the registry file). So on each new connection, before anything else goes over it:

    front end                                             owner
      GET /owner-proof?nonce=N  (N: 32 random bytes, hex)   ->
                                                         <- {"pid": P, "proof": HMAC(K, N | A | P)}

where K is derived from the secret of the registered pid, A is the address of this connection (as
both ends see it: `tcp:IP:PORT` or `unix:PATH`) and P the registered pid. The front end computes the
same HMAC from the secret file and compares with `hmac.compare_digest`; anything else (no answer,
another pid, a wrong proof) fails the proof, and the call is not sent. On a unix socket the kernel
also names the peer (`SO_PEERCRED`): it must run as this user and be the registered pid.

One round trip per new connection: connections are kept alive and reused, so a warm call pays
nothing (`bench/forwarding.py`; results in bench/results/2026-11-27-owner-proof.md).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import socket
import struct
from collections.abc import Mapping

__all__ = [
    "PROOF_PATH",
    "connection_address",
    "new_nonce",
    "owner_address",
    "peer_credentials",
    "proof_for",
    "proof_key",
    "proof_target",
    "valid_nonce",
    "verify_proof",
]

PROOF_PATH = "/owner-proof"
_KEY_LABEL = b"homeport/owner-proof/v1"
_NONCE_BYTES = 32


def proof_key(secret: bytes) -> bytes:
    """The key proofs are made with, derived from an owner's secret (which is also its bearer token under
    --auth: a proof never shows the secret itself)."""
    return hmac.new(secret.strip(), _KEY_LABEL, hashlib.sha256).digest()


def new_nonce() -> str:
    return secrets.token_hex(_NONCE_BYTES)


def valid_nonce(nonce: str) -> bool:
    return len(nonce) == 2 * _NONCE_BYTES and all(c in "0123456789abcdef" for c in nonce)


def proof_target(nonce: str) -> str:
    return f"{PROOF_PATH}?nonce={nonce}"


def proof_for(key: bytes, nonce: str, address: str, pid: int) -> str:
    """The owner's answer to `nonce` on the connection at `address`, as the instance `pid`."""
    message = b"\n".join((_KEY_LABEL, nonce.encode("ascii"), address.encode("utf-8", "surrogateescape"), b"%d" % pid))
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def verify_proof(key: bytes, nonce: str, address: str, pid: int, answer: object) -> bool:
    """Whether `answer` (the owner's JSON) proves that the instance `pid`, holding `key`, answered `nonce`
    on the connection at `address`."""
    if not isinstance(answer, Mapping) or answer.get("pid") != pid:
        return False
    proof = answer.get("proof")
    if not isinstance(proof, str) or not proof.isascii():
        return False
    return hmac.compare_digest(proof.encode("ascii"), proof_for(key, nonce, address, pid).encode("ascii"))


def connection_address(family: int, address: object) -> str | None:
    """`tcp:IP:PORT` or `unix:PATH` for a socket address (the peer's, for a front end; its own, for an
    owner), or None for anything else."""
    if family == socket.AF_UNIX:
        if isinstance(address, bytes):
            address = os.fsdecode(address)
        return f"unix:{address}" if isinstance(address, str) and address else None
    if family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple) and len(address) >= 2:
        return f"tcp:{address[0]}:{int(address[1])}"
    return None


def owner_address(server: object) -> str | None:
    """What `connection_address` is for the owner's own end of a connection, from an ASGI scope's
    `server` ((host, port) over TCP, (path, None) on a unix socket)."""
    if not isinstance(server, (tuple, list)) or len(server) != 2:
        return None
    host, port = server
    if port is None:
        return connection_address(socket.AF_UNIX, host)
    return f"tcp:{host}:{int(port)}"


def peer_credentials(sock: socket.socket) -> tuple[int, int] | None:
    """(pid, uid) of the process at the other end of a unix socket, from the kernel; None where the
    system does not say (no SO_PEERCRED: not Linux)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None or sock.family != socket.AF_UNIX:
        return None
    raw = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", raw)
    return pid, uid
