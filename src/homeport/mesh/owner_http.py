"""HTTP/1.1 to an owner on this machine (loopback or the daemon's unix socket): h11 over asyncio streams.

A forwarded call is one POST to a server on the same machine. httpx cost about 0.8 ms of CPU per
request here, h11 on a kept-alive asyncio stream about 0.3 ms, and the difference is most of what
forwarding adds to a call (`python3 bench/forwarding.py`). Owners are reached only on loopback or a
unix socket, so there is no TLS, proxy or redirect to handle; remote servers (a team server) keep
httpx.

Before a new connection carries anything of a call, the owner proves on it that it is the
registered owner (`registry.proof`: a nonce, answered with an HMAC under the owner's secret; on a unix
socket the kernel's peer credentials as well). A connection whose peer fails is closed and
`OwnerNotProvenError` raised: nothing of the call was sent. The proof is one round trip per new
connection; a kept-alive connection has proved itself already.

Connections are kept alive and reused one request at a time. One that sat idle longer than the
server keeps it (uvicorn: 5 s) is not reused; one that the server closed before answering a reused
request is replaced and the request sent once more (nothing of it was read: the server closes an
idle connection only between requests). Any other failure is the caller's to report.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from dataclasses import dataclass, field

import h11

from homeport.registry.proof import connection_address, new_nonce, peer_credentials, proof_target, verify_proof

__all__ = ["OwnerConnections", "OwnerIdentity", "OwnerNotProvenError", "OwnerResponse"]

CONNECT_SECONDS = 5.0
READ_SECONDS = 300.0  # a project-database query may take minutes
# An owner answers a proof at once; generous all the same, for an owner on a busy 2-core machine.
PROOF_SECONDS = 30.0
# Below uvicorn's keep-alive timeout (5 s), so a kept connection is never one the server is closing.
IDLE_SECONDS = 4.0
_CHUNK = 65536


@dataclass(frozen=True)
class OwnerResponse:
    status: int
    content_type: str
    body: bytes


@dataclass(frozen=True)
class OwnerIdentity:
    """Who must answer at the other end: the registered pid, and the key its proofs are made with."""

    pid: int
    key: bytes = field(repr=False)


class OwnerNotProvenError(Exception):
    """The peer did not prove it is the registered owner; nothing of the call was sent to it."""


@dataclass
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    http: h11.Connection = field(default_factory=lambda: h11.Connection(h11.CLIENT))
    idle_since: float = 0.0

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


class _StaleConnection(Exception):
    """A kept connection the server had closed: nothing of the request reached it."""


class OwnerConnections:
    """Kept-alive connections to one owner (`host`:`port`, or the unix socket `uds`), all sending `headers`."""

    def __init__(
        self,
        *,
        headers: dict[str, str],
        identity: OwnerIdentity,
        host: str = "",
        port: int = 0,
        uds: str | None = None,
    ) -> None:
        self.host, self.port, self.uds = host, port, uds
        self.identity = identity
        authority = "localhost" if uds else (f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
        self._host = ("Host", authority)  # all a proof request carries: nothing of any call
        self._headers = [self._host, *headers.items()]
        self._idle: list[_Connection] = []

    async def post(self, target: str, body: bytes, headers: dict[str, str]) -> OwnerResponse:
        """The owner's answer to a POST of `body` to `target`.

        Raises:
            OwnerNotProvenError: a new connection's peer did not prove it is the owner (nothing was sent).
            OSError, TimeoutError, h11.ProtocolError: the owner did not answer.
        """
        conn, reused = self._take()
        if conn is None:
            conn = await self._open()
        try:
            return await self._post(conn, target, body, headers)
        except _StaleConnection:
            if not reused:
                raise ConnectionResetError("the owner closed the connection before answering") from None
            return await self._post(await self._open(), target, body, headers)

    async def aclose(self) -> None:
        for conn in self._idle:
            conn.close()
        self._idle.clear()

    def _take(self) -> tuple[_Connection | None, bool]:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()
            if now - conn.idle_since < IDLE_SECONDS and not conn.reader.at_eof():
                return conn, True
            conn.close()
        return None, False

    async def _open(self) -> _Connection:
        """A new connection whose peer has proved it is the owner.

        Raises:
            OwnerNotProvenError: it did not (the connection is closed).
            OSError, TimeoutError: nothing answered.
        """
        if self.uds is not None:
            opening = asyncio.open_unix_connection(self.uds, limit=_CHUNK)
        else:
            opening = asyncio.open_connection(self.host, self.port, limit=_CHUNK)
        reader, writer = await asyncio.wait_for(opening, CONNECT_SECONDS)
        conn = _Connection(reader, writer)
        try:
            await self._prove(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    async def _prove(self, conn: _Connection) -> None:
        sock = conn.writer.get_extra_info("socket")
        expected = self.identity.pid
        if sock is not None:
            credentials = peer_credentials(sock)
            if credentials is not None and credentials != (expected, os.geteuid()):
                raise OwnerNotProvenError(
                    f"the socket's peer is pid {credentials[0]} of uid {credentials[1]}, not pid {expected} "
                    f"of uid {os.geteuid()}"
                )
        address = connection_address(sock.family, sock.getpeername()) if sock is not None else None
        if address is None:
            raise OwnerNotProvenError("the connection has no address to prove ownership on")
        nonce = new_nonce()
        try:
            status, _kind, body = await asyncio.wait_for(
                self._exchange(conn, "GET", proof_target(nonce), b"", [self._host]), PROOF_SECONDS
            )
        except _StaleConnection:
            raise OwnerNotProvenError("the peer closed the connection instead of proving itself") from None
        except (TimeoutError, h11.ProtocolError) as exc:
            raise OwnerNotProvenError(f"the peer gave no proof ({type(exc).__name__})") from None
        try:
            answer = json.loads(body) if status == 200 else None
        except ValueError:
            answer = None
        if not verify_proof(self.identity.key, nonce, address, expected, answer):
            raise OwnerNotProvenError(f"the peer's answer (HTTP {status}) does not prove it is pid {expected}")
        if not self._reusable(conn):
            raise ConnectionResetError("the owner closed the connection after proving itself")

    async def _post(self, conn: _Connection, target: str, body: bytes, headers: dict[str, str]) -> OwnerResponse:
        status, kind, content = await self._exchange(
            conn, "POST", target, body, [*self._headers, *headers.items(), ("Content-Length", str(len(body)))]
        )
        if self._reusable(conn):
            self._idle.append(conn)
        else:
            conn.close()
        return OwnerResponse(status, kind, content)

    @staticmethod
    def _reusable(conn: _Connection) -> bool:
        """Ready `conn` for its next request if both ends finished this one; whether it can be reused."""
        if conn.http.our_state is h11.DONE and conn.http.their_state is h11.DONE:
            conn.http.start_next_cycle()
            conn.idle_since = time.monotonic()
            return True
        return False

    async def _exchange(
        self, conn: _Connection, method: str, target: str, body: bytes, headers: list[tuple[str, str]]
    ) -> tuple[int, str, bytes]:
        http = conn.http
        try:
            request = h11.Request(method=method, target=target, headers=headers)
            sent = http.send(request) + (http.send(h11.Data(data=body)) if body else b"")
            conn.writer.write(sent + http.send(h11.EndOfMessage()))
            await conn.writer.drain()
            response: h11.Response | None = None
            chunks: list[bytes] = []
            while True:
                event = http.next_event()
                if event is h11.NEED_DATA:
                    data = await asyncio.wait_for(conn.reader.read(_CHUNK), READ_SECONDS)
                    if not data and response is None:
                        raise _StaleConnection
                    http.receive_data(data)
                elif isinstance(event, h11.Response):
                    response = event
                elif isinstance(event, h11.Data):
                    chunks.append(bytes(event.data))
                elif isinstance(event, h11.EndOfMessage):
                    break
                elif isinstance(event, h11.ConnectionClosed):
                    raise ConnectionResetError("the owner closed the connection mid-answer")
        except BaseException:
            conn.close()
            raise
        assert response is not None  # h11 yields the response before its body and end
        kind = next((v.decode("latin-1") for k, v in response.headers if k == b"content-type"), "")
        return response.status_code, kind.split(";")[0].strip(), b"".join(chunks)
