"""HTTP/1.1 to an owner on this machine (loopback or the daemon's unix socket): h11 over asyncio streams.

A forwarded call is one POST to a server on the same machine. httpx cost about 0.8 ms of CPU per
request here, h11 on a kept-alive asyncio stream about 0.3 ms, and the difference is most of what
forwarding adds to a call (`python3 bench/forwarding.py`). Owners are reached only on loopback or a
unix socket, so there is no TLS, proxy or redirect to handle; remote servers (a team server) keep
httpx.

Connections are kept alive and reused one request at a time. One that sat idle longer than the
server keeps it (uvicorn: 5 s) is not reused; one that the server closed before answering a reused
request is replaced and the request sent once more (nothing of it was read: the server closes an
idle connection only between requests). Any other failure is the caller's to report.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field

import h11

__all__ = ["OwnerConnections", "OwnerResponse"]

CONNECT_SECONDS = 5.0
READ_SECONDS = 300.0  # a project-database query may take minutes
# Below uvicorn's keep-alive timeout (5 s), so a kept connection is never one the server is closing.
IDLE_SECONDS = 4.0
_CHUNK = 65536


@dataclass(frozen=True)
class OwnerResponse:
    status: int
    content_type: str
    body: bytes


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

    def __init__(self, *, headers: dict[str, str], host: str = "", port: int = 0, uds: str | None = None) -> None:
        self.host, self.port, self.uds = host, port, uds
        authority = "localhost" if uds else (f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
        self._headers = [("Host", authority), *headers.items()]
        self._idle: list[_Connection] = []

    async def post(self, target: str, body: bytes, headers: dict[str, str]) -> OwnerResponse:
        """The owner's answer to a POST of `body` to `target`.

        Raises:
            OSError, TimeoutError, h11.ProtocolError: the owner did not answer.
        """
        conn, reused = self._take()
        if conn is None:
            conn = await self._open()
        try:
            return await self._exchange(conn, target, body, headers)
        except _StaleConnection:
            if not reused:
                raise ConnectionResetError("the owner closed the connection before answering") from None
            return await self._exchange(await self._open(), target, body, headers)

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
        if self.uds is not None:
            opening = asyncio.open_unix_connection(self.uds, limit=_CHUNK)
        else:
            opening = asyncio.open_connection(self.host, self.port, limit=_CHUNK)
        reader, writer = await asyncio.wait_for(opening, CONNECT_SECONDS)
        return _Connection(reader, writer)

    async def _exchange(self, conn: _Connection, target: str, body: bytes, headers: dict[str, str]) -> OwnerResponse:
        http = conn.http
        try:
            request = h11.Request(
                method="POST",
                target=target,
                headers=[*self._headers, *headers.items(), ("Content-Length", str(len(body)))],
            )
            conn.writer.write(http.send(request) + http.send(h11.Data(data=body)) + http.send(h11.EndOfMessage()))
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
        if http.our_state is h11.DONE and http.their_state is h11.DONE:
            http.start_next_cycle()
            conn.idle_since = time.monotonic()
            self._idle.append(conn)
        else:
            conn.close()
        return OwnerResponse(response.status_code, kind.split(";")[0].strip(), b"".join(chunks))
