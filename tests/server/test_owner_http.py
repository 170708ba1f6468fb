"""The kept-alive HTTP/1.1 client to owners on this machine, against a raw asyncio server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator

import pytest

from homeport.mesh.owner_http import OwnerConnections, OwnerIdentity
from homeport.registry.proof import owner_address, proof_for, proof_key

pytestmark = pytest.mark.anyio

# The owner these servers pose as: they answer its proof (`registry.proof`) on each new connection.
KEY = proof_key(b"the owner's secret")
IDENTITY = OwnerIdentity(os.getpid(), KEY)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
CHUNKED = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
)


@contextlib.asynccontextmanager
async def server(
    answers: list[bytes | None], *, close_after_each: bool = False
) -> AsyncIterator[tuple[int, list[int]]]:
    """Answers each request read with the next of `answers` (None: close without answering)."""
    accepted: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(1)
        try:
            while answers:
                head = await reader.readuntil(b"\r\n\r\n")
                if head.startswith(b"GET /owner-proof?nonce="):
                    writer.write(_proof(head, writer.get_extra_info("sockname")))
                    continue
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                )
                await reader.readexactly(length)
                answer = answers.pop(0)
                if answer is None:
                    break
                writer.write(answer)
                await writer.drain()
                if close_after_each:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    async with srv:
        yield port, accepted


def _proof(head: bytes, sockname: tuple[str, int]) -> bytes:
    nonce = head.split(b" ", 2)[1].split(b"=", 1)[1].decode()
    body = json.dumps({"pid": os.getpid(), "proof": proof_for(KEY, nonce, owner_address(sockname), os.getpid())})
    return f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}".encode()


async def test_requests_reuse_one_kept_alive_connection() -> None:
    async with server([OK, OK, OK]) as (port, accepted):
        conns = OwnerConnections(headers={"X-Workspace-Id": "/p"}, identity=IDENTITY, host="127.0.0.1", port=port)
        for _ in range(3):
            answer = await conns.post("/mcp", b"{}", {})
            assert (answer.status, answer.content_type, answer.body) == (200, "application/json", b"{}")
        assert len(accepted) == 1
        await conns.aclose()


async def test_a_connection_the_server_closed_while_idle_is_replaced_and_the_request_sent_again() -> None:
    async with server([OK, OK], close_after_each=True) as (port, accepted):
        conns = OwnerConnections(headers={}, identity=IDENTITY, host="127.0.0.1", port=port)
        assert (await conns.post("/mcp", b"{}", {})).status == 200
        await asyncio.sleep(0.05)  # the server has closed it; the client may not have noticed yet
        assert (await conns.post("/mcp", b"{}", {})).status == 200
        assert len(accepted) == 2
        await conns.aclose()


async def test_a_fresh_connection_closed_without_an_answer_is_an_error_not_a_retry() -> None:
    async with server([None, OK]) as (port, accepted):
        conns = OwnerConnections(headers={}, identity=IDENTITY, host="127.0.0.1", port=port)
        with pytest.raises(ConnectionError):
            await conns.post("/mcp", b"{}", {})
        assert len(accepted) == 1  # sent once: whether it ran is unknown, so it is not sent again


async def test_a_chunked_event_stream_answer_is_read_whole() -> None:
    async with server([CHUNKED]) as (port, _accepted):
        conns = OwnerConnections(headers={}, identity=IDENTITY, host="127.0.0.1", port=port)
        answer = await conns.post("/mcp", b"{}", {})
        assert (answer.content_type, answer.body) == ("text/event-stream", b"hello world")
        await conns.aclose()


async def test_nobody_listening_is_an_os_error() -> None:
    async with server([]) as (port, _accepted):
        pass
    with pytest.raises(OSError):
        await OwnerConnections(headers={}, identity=IDENTITY, host="127.0.0.1", port=port).post("/mcp", b"{}", {})
