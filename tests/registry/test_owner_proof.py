"""Owners prove who they are (`registry.proof`): the proof itself, liveness by proof, and a front end's
connections (`mesh.owner_http`) that send nothing of a call to a peer that has not proved it is the owner."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from homeport.errors import OwnerUnprovenError
from homeport.mesh.forwarding import Forwarder
from homeport.mesh.owner_http import OwnerConnections, OwnerIdentity, OwnerNotProvenError
from homeport.registry import InstanceRegistry, Liveness, Owner
from homeport.registry.proof import new_nonce, owner_address, proof_for, proof_key, valid_nonce, verify_proof

pytestmark = pytest.mark.timeout(60)

KEY = proof_key(b"the owner's secret")
ADDRESS = "tcp:127.0.0.1:50001"


# -- the proof


def test_a_proof_holds_for_its_nonce_address_pid_and_key_only() -> None:
    nonce = new_nonce()
    assert valid_nonce(nonce) and not valid_nonce(nonce.upper()) and not valid_nonce(nonce[:-2])
    answer = {"pid": 7, "proof": proof_for(KEY, nonce, ADDRESS, 7)}
    assert verify_proof(KEY, nonce, ADDRESS, 7, answer)
    assert not verify_proof(proof_key(b"another secret"), nonce, ADDRESS, 7, answer)
    assert not verify_proof(KEY, new_nonce(), ADDRESS, 7, answer)
    assert not verify_proof(KEY, nonce, "tcp:127.0.0.1:50002", 7, answer)  # relayed from another endpoint
    assert not verify_proof(KEY, nonce, ADDRESS, 8, {**answer, "pid": 8})
    for forged in (None, [], {"pid": 7}, {"pid": 7, "proof": 1}, {"pid": True, "proof": answer["proof"]}, "x"):
        assert not verify_proof(KEY, nonce, ADDRESS, 7, forged)


def test_the_owner_and_the_front_end_name_one_connection_alike() -> None:
    assert owner_address(("127.0.0.1", 50001)) == ADDRESS
    assert owner_address(("/run/h.sock", None)) == "unix:/run/h.sock"
    assert owner_address(None) is None


# -- peers: an owner that knows the key, and an impostor that only knows the pid


@dataclass
class Peer:
    port: int
    requests: list[bytes] = field(default_factory=list)  # every request as it arrived, head and body

    def posts(self) -> list[bytes]:
        return [r for r in self.requests if r.startswith(b"POST")]

    def proofs(self) -> list[bytes]:
        return [r for r in self.requests if r.startswith(b"GET /owner-proof")]


def _answer(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


@contextlib.asynccontextmanager
async def peer(*, pid: int, key: bytes | None, unix: Path | None = None) -> AsyncIterator[Peer]:
    """A server posing as owner `pid`: with `key` it proves it; without, it answers as an impostor
    would (the pid, a made-up proof). Every POST gets a tool result."""
    seen = Peer(0)
    open_writers: set[asyncio.StreamWriter] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        open_writers.add(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")), 0
                )
                seen.requests.append(head + await reader.readexactly(length))
                if head.startswith(b"GET /owner-proof?nonce="):
                    nonce = head.split(b" ")[1].split(b"=")[1].decode()
                    here = owner_address(writer.get_extra_info("sockname") if unix is None else (str(unix), None))
                    proof = proof_for(key, nonce, here, pid) if key is not None else "0" * 64
                    writer.write(_answer(json.dumps({"pid": pid, "proof": proof}).encode()))
                else:
                    writer.write(_answer(b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}'))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            open_writers.discard(writer)

    if unix is not None:
        server = await asyncio.start_unix_server(handle, str(unix))
    else:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        seen.port = server.sockets[0].getsockname()[1]
    async with server:
        try:
            yield seen
        finally:
            # Close the connections still open before the loop ends: a transport the loop drops unclosed
            # warns when collected, inside whichever test runs then (filterwarnings = error).
            for writer in list(open_writers):
                writer.close()
            await asyncio.gather(*(w.wait_closed() for w in list(open_writers)), return_exceptions=True)


HEADERS = {"X-Workspace-Id": "/src/secret-project", "Authorization": "Bearer the-owner-token"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_an_owner_proves_itself_once_per_connection_and_then_gets_the_calls() -> None:
    async with peer(pid=4242, key=KEY) as owner:
        conns = OwnerConnections(headers=HEADERS, identity=OwnerIdentity(4242, KEY), host="127.0.0.1", port=owner.port)
        for _ in range(3):
            assert (await conns.post("/mcp", b'{"summary": "canary"}', {})).status == 200
        await conns.aclose()
    assert len(owner.proofs()) == 1 and len(owner.posts()) == 3
    assert b"secret-project" not in owner.proofs()[0] and b"Authorization" not in owner.proofs()[0]


@pytest.mark.anyio
@pytest.mark.parametrize("impostor_key", [None, proof_key(b"a secret of its own")])
async def test_an_impostor_that_knows_the_pid_gets_nothing_of_the_call(impostor_key) -> None:
    async with peer(pid=4242, key=impostor_key) as impostor:
        conns = OwnerConnections(
            headers=HEADERS, identity=OwnerIdentity(4242, KEY), host="127.0.0.1", port=impostor.port
        )
        with pytest.raises(OwnerNotProvenError, match="does not prove it is pid 4242"):
            await conns.post("/mcp", b'{"summary": "canary"}', {})
    assert impostor.posts() == []
    assert not any(b"canary" in r or b"secret-project" in r or b"owner-token" in r for r in impostor.requests)


@pytest.mark.anyio
async def test_on_a_unix_socket_the_kernel_must_name_the_registered_pid_of_this_user(tmp_path) -> None:
    sock = Path(os.path.realpath(tmp_path)) / "o.sock"
    async with peer(pid=os.getpid(), key=KEY, unix=sock) as owner:  # this process: SO_PEERCRED names it
        conns = OwnerConnections(headers=HEADERS, identity=OwnerIdentity(os.getpid(), KEY), uds=str(sock))
        assert (await conns.post("/mcp", b"{}", {})).status == 200
        await conns.aclose()
        # It knows the key, yet the socket's peer is not the pid registered: refused before any proof.
        other = OwnerConnections(headers=HEADERS, identity=OwnerIdentity(os.getpid() + 1, KEY), uds=str(sock))
        with pytest.raises(OwnerNotProvenError, match=f"peer is pid {os.getpid()}"):
            await other.post("/mcp", b'{"summary": "canary"}', {})
    assert len(owner.posts()) == 1 and len(owner.proofs()) == 1


# -- liveness and forwarding, with a registered entry whose pid runs


@pytest.fixture
def running_pid() -> Iterator[int]:
    """A running process that is not this one: the pid an impostor claims."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        yield child.pid
    finally:
        child.kill()
        child.wait()


@contextlib.contextmanager
def serving_in_a_thread(pid: int, key: bytes | None) -> Iterator[Peer]:
    """`peer` on an event loop of its own, for blocking code (liveness) to ask."""
    started = threading.Event()
    holder: dict[str, Any] = {}

    async def main() -> None:
        holder["stop"], holder["loop"] = asyncio.Event(), asyncio.get_running_loop()
        async with peer(pid=pid, key=key) as seen:
            holder["peer"] = seen
            started.set()
            await holder["stop"].wait()

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    assert started.wait(30)
    try:
        yield holder["peer"]
    finally:
        holder["loop"].call_soon_threadsafe(holder["stop"].set)
        thread.join(30)


@pytest.fixture
def impostor(running_pid) -> Iterator[Peer]:
    with serving_in_a_thread(running_pid, None) as seen:
        yield seen


def test_an_impostor_answering_with_the_registered_pid_is_not_live_even_while_the_owner_would_be_starting(
    tmp_path, running_pid, impostor
) -> None:
    reg = InstanceRegistry(tmp_path / "state")
    reg.mint_owner_secret(running_pid)
    owner = Owner(f"http://127.0.0.1:{impostor.port}", running_pid, time.time(), "0.1.0")
    assert Liveness(timeout=5.0)(owner)  # the report-only check (no secrets) is fooled ...
    assert not Liveness(reg.owner_secret, timeout=5.0)(owner)  # ... the proof is not
    assert not Liveness(lambda pid: None, timeout=5.0)(owner)  # nor is anyone without a secret to check with


def test_an_owner_that_proves_itself_is_live(tmp_path, running_pid) -> None:
    reg = InstanceRegistry(tmp_path / "state")
    secret = reg.mint_owner_secret(running_pid).read_bytes()
    with serving_in_a_thread(running_pid, proof_key(secret)) as owner_peer:
        owner = Owner(f"http://127.0.0.1:{owner_peer.port}", running_pid, time.time() - 3600, "0.1.0")
        assert Liveness(reg.owner_secret, timeout=5.0)(owner)


@pytest.mark.anyio
async def test_forwarding_to_an_impostor_fails_with_owner_unproven_sends_nothing_and_prunes_it(
    tmp_path, running_pid, impostor
) -> None:
    reg = InstanceRegistry(tmp_path / "state", is_live=lambda o: True)  # as if it had been live at the last read
    reg.mint_owner_secret(running_pid)
    entry = reg.own(
        ["/src/p"],
        host="127.0.0.1",
        requested_port=None,
        version="0.1.0",
        pid=running_pid,
        endpoint=f"http://127.0.0.1:{impostor.port}",
        auth=True,
    )
    reg.is_live = Liveness(reg.owner_secret, timeout=5.0)  # from now on, as in a front end
    forwarder = Forwarder(reg)
    try:
        with pytest.raises(OwnerUnprovenError, match="Nothing of the call was sent") as caught:
            await forwarder.forward("/src/p", entry, Path("/src/p"), "log_decision", {"summary": "canary"}, agent="ada")
    finally:
        forwarder.close()
    assert str(running_pid) in caught.value.message and entry.endpoint in caught.value.message
    assert impostor.posts() == [] and not any(b"canary" in r or b"Authorization" in r for r in impostor.requests)
    assert reg.owner_of("/src/p") is None  # pruned
