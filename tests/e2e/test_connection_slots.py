"""Issue 22 #6: one unauthenticated peer cannot take every connection slot of `homeport serve --http`.

The attack as reported: about 560 half-open connections (`POST /mcp HTTP/1.1\\r\\nHost: ...\\r\\n` and
nothing more), each re-opened when the server's header timeout closes it, made the server answer 503
to everyone, `/healthz` included, for as long as it went on. Here the hostile peer opens them from
127.0.0.2 and keeps them open, while a good client on 127.0.0.1 calls `/healthz` and a tool all along,
past one whole header timeout (10 s), and must be answered every time.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path

import httpx2
import pytest

from ._serving import serving
from ._support import http_client, make_project, where

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(180)]

HOSTILE = "127.0.0.2"
SLOTS = 560
ATTACK_SECONDS = 12.0  # past one 10 s header timeout, so every slot is closed and opened again at least once


def _loopback_alias_works() -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((HOSTILE, 0))
        except OSError:
            return False
    return True


class HalfOpenFlood:
    """SLOTS connections from HOSTILE that each send a request line and one header, then nothing; a slot
    the server closes is opened again (after a pause when it was refused at once, to keep the test's own
    CPU bounded), until `stop`. Runs its own event loop in a thread."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.opened = 0
        self.holding = 0
        self.peak = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=asyncio.run, args=(self._main(),), daemon=True)

    async def _slot(self) -> None:
        line = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n".encode()
        while not self.stopping.is_set():
            started = time.monotonic()
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", self.port, local_addr=(HOSTILE, 0))
            except OSError:
                await asyncio.sleep(0.2)
                continue
            self.opened += 1
            writer.write(line)
            self.holding += 1
            self.peak = max(self.peak, self.holding)
            try:
                while not self.stopping.is_set():
                    try:
                        if not await asyncio.wait_for(reader.read(4096), 0.5):
                            break  # closed by the server
                    except TimeoutError:
                        continue
            except OSError:
                pass
            finally:
                self.holding -= 1
                writer.close()
            if time.monotonic() - started < 1.0:
                await asyncio.sleep(0.2)

    async def _main(self) -> None:
        await asyncio.gather(*(self._slot() for _ in range(SLOTS)))

    def __enter__(self) -> HalfOpenFlood:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stopping.set()
        self.thread.join(30)


@pytest.mark.skipif(not _loopback_alias_works(), reason="127.0.0.2 cannot be bound here")
async def test_one_peer_holding_half_open_connections_does_not_starve_other_clients_or_healthz(tmp_path: Path) -> None:
    allow = tmp_path / "allow"
    project = make_project(allow / "p")
    with serving(["--allow-root", str(allow)], cwd=allow, log=tmp_path / "log") as served:
        statuses: list[int] = []
        calls = 0
        with HalfOpenFlood(served.port) as flood:
            deadline = time.monotonic() + 30
            while flood.opened < SLOTS and time.monotonic() < deadline:  # the flood is up before we look
                await asyncio.sleep(0.05)
            end = time.monotonic() + ATTACK_SECONDS
            async with httpx2.AsyncClient(timeout=30) as http:
                while time.monotonic() < end:
                    statuses.append((await http.get(f"{served.base}/healthz")).status_code)
                    # A new MCP client (new connections) each round, as separate agents would be.
                    async with http_client(
                        f"{served.base}/mcp", mode="auto", headers={"X-Workspace-Id": str(project)}
                    ) as client:
                        assert where(await client.call_tool("get_decisions", {})) == (str(project), "header")
                    calls += 1
            opened = flood.opened
        log = served.log_text()
    assert opened >= SLOTS, "the flood never opened its connections"
    assert statuses and set(statuses) == {200}, statuses
    assert calls >= 3
    assert "Traceback" not in log
