"""Liveness of an owner at a `unix:` endpoint (the per-user daemon): its socket's /healthz must name its pid."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from homeport.registry import InstanceRegistry, Liveness, Owner
from homeport.registry.liveness import healthz, healthz_pid

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def short_dir(tmp_path: Path) -> Path:
    return Path(os.path.realpath(tmp_path))


@contextlib.contextmanager
def _answering(path: Path, body: bytes, status: str = "200 OK") -> Iterator[None]:
    """A unix socket at `path` answering every request with `body` (until the fixture ends)."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(8)
    server.settimeout(0.2)
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(4096)
                head = f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
                conn.sendall(head.encode() + b"connection: close\r\n\r\n" + body)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()


def test_a_unix_endpoint_is_live_only_while_its_socket_answers_with_the_owners_pid(short_dir: Path) -> None:
    path = short_dir / "d.sock"
    owner = Owner(f"unix:{path}", os.getpid(), time.time() - 3600, "0.1.0")
    assert healthz(owner.endpoint, 0.5) is None and not Liveness(timeout=0.5)(owner)  # no socket at all
    with _answering(path, json.dumps({"status": "ok", "pid": os.getpid()}).encode()):
        assert healthz_pid(owner.endpoint, 10) == os.getpid()  # generous: a busy machine answers late, not never
        assert Liveness(timeout=10)(owner)
        # A reused pid does not fool it: the socket names another process.
        assert not Liveness(timeout=10)(Owner(owner.endpoint, os.getpid() + 1, owner.started_at, "0.1.0"))
    # The socket file left behind by a dead daemon: nothing listens, so not live.
    assert path.exists() and healthz(owner.endpoint, 0.5) is None and not Liveness(timeout=0.5)(owner)


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b'{"pid": true}'])
def test_a_socket_answering_something_else_is_not_an_owner(short_dir: Path, body: bytes) -> None:
    path = short_dir / "x.sock"
    with _answering(path, body):
        assert healthz_pid(f"unix:{path}", 1.0) is None


def test_an_owner_at_a_socket_is_registered_without_choosing_a_port(short_dir: Path) -> None:
    reg = InstanceRegistry(short_dir / "state", is_live=lambda o: True)
    endpoint = f"unix:{short_dir / 'd.sock'}"
    owner = reg.own(["/src"], host="127.0.0.1", requested_port=None, version="0.1.0", pid=4242, endpoint=endpoint)
    assert owner.endpoint == endpoint and owner.port is None
    assert reg.owner_of("/src/api") == ("/src", owner)
    assert reg.read().ports == {}
