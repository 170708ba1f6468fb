"""Run the HTTP app on uvicorn: bind first, time out slow clients, finish calls in flight on shutdown.

- The port is bound before anything is printed, so a taken port is one clear error, and
  `--port 0` reports the port it got.
- uvicorn closes idle keep-alive connections (`timeout_keep_alive`) but waits forever for the
  headers or body of a request; `TimedH11Protocol` gives each a deadline and answers 408, so a
  stalled client costs one connection for a bounded time while the event loop serves the others.
  A new connection must send its first byte sooner (`FIRST_BYTE_SECONDS`).
- Connection slots are shared (`MAX_CONNECTIONS`, then uvicorn answers 503 to everyone), so one
  peer may hold only so many: `MAX_PER_PEER` connections, of which `MAX_UNSENT_PER_PEER` have not
  yet sent a whole request head; a connection past either is answered 429 and closed at once. About
  560 half-open connections from one address, each opened again when its header timeout closed
  it, used to make the server answer 503 to every client, `/healthz` included, for as long as it
  went on. A peer is an IP address (an IPv6 /64, what one host is usually given); a unix socket,
  which only the user can reach, has no per-peer limit.
- On SIGTERM or Ctrl-C the listener closes at once (new connections are refused), requests
  being answered get `shutdown_grace_seconds` to finish, and only then are the SSE streams that
  stay open by design (legacy GET streams) ended: sse-starlette would otherwise end every stream,
  answered or not, on the first signal. A call still running on a worker thread then cannot be
  interrupted (a thread is not cancellable, and uvicorn would wait for it forever: an 8 MiB import
  still ran 120 s after SIGTERM); after `ABANDON_SECONDS` more, such calls are abandoned unanswered
  and the process exits. Nothing acknowledged is lost: an unanswered call was never acknowledged, and
  the transaction it had not committed is rolled back by the store (SQLite's journal, PostgreSQL's
  closed connection); the registry entry it leaves is pruned by the next reader.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any

import h11
import uvicorn
from sse_starlette.sse import AppStatus
from uvicorn.protocols.http.h11_impl import H11Protocol

from homeport.core.settings import ServeSettings
from homeport.errors import ConfigError
from homeport.server.http_middleware import CallsInFlight

__all__ = ["MAX_PER_PEER", "MAX_UNSENT_PER_PEER", "PeerCounts", "TimedH11Protocol", "bind", "peer_of", "run_http"]

log = logging.getLogger("homeport.http")

# Connections at once (uvicorn answers 503 beyond): well below the usual 1024 descriptors, which
# the open stores share.
MAX_CONNECTIONS = 512
# One peer's share of them, and of those still sending their first request head. Generous for a
# client's pool or a front end forwarding many agents' calls (they send their request at once); a
# quarter and an eighth of the slots, so that one address can never take them all.
MAX_PER_PEER = MAX_CONNECTIONS // 4
MAX_UNSENT_PER_PEER = MAX_CONNECTIONS // 8
# A new connection that sends nothing at all is closed sooner than one whose headers are slow.
FIRST_BYTE_SECONDS = 5.0
# After the grace, how long the calls still running get before they are abandoned and the process
# exits (uvicorn's own task cancellation takes 2 s of it).
ABANDON_SECONDS = 3.0


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port.

    Raises:
        ConfigError: the port is taken, or the address is not one of this machine's.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named explicitly: asyncio turns Nagle off (TCP_NODELAY) only on sockets that say so,
    # and with Nagle on every small response waits for a delayed ACK (about 40 ms per call).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"port {port} on {host} is taken (another server is listening there); pick another with "
                "--port N, or --port 0 for any free port"
            ) from None
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; check --host and --port") from None
    return sock


_408 = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
    b"content-length: %d\r\n\r\n%s"
)


_429 = (
    b"HTTP/1.1 429 Too Many Requests\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
    b"retry-after: 5\r\ncontent-length: %d\r\n\r\n%s"
)


def peer_of(transport: asyncio.BaseTransport) -> str | None:
    """The peer a connection counts against: its IP address, an IPv6 one by its /64; None off IP."""
    name = transport.get_extra_info("peername")
    if not isinstance(name, tuple) or not name or not isinstance(name[0], str):
        return None
    try:
        address = ipaddress.ip_address(name[0].split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        if not address.is_loopback:
            return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


class PeerCounts:
    """The connections each peer holds on one server, and how many have not yet sent a request head."""

    def __init__(self) -> None:
        self.open: dict[str, int] = {}
        self.unsent: dict[str, int] = {}

    def refusal(self, peer: str) -> str | None:
        """Why a new connection from `peer` is refused, or None (then it is counted)."""
        if self.open.get(peer, 0) >= MAX_PER_PEER:
            return f"{peer} already holds {MAX_PER_PEER} connections, the most one peer may"
        if self.unsent.get(peer, 0) >= MAX_UNSENT_PER_PEER:
            return (
                f"{peer} already holds {MAX_UNSENT_PER_PEER} connections that have not sent a whole request, "
                "the most one peer may; send the requests or close them"
            )
        self.open[peer] = self.open.get(peer, 0) + 1
        self.unsent[peer] = self.unsent.get(peer, 0) + 1
        return None

    def sent(self, peer: str) -> None:
        _decrement(self.unsent, peer)

    def closed(self, peer: str, *, unsent: bool) -> None:
        _decrement(self.open, peer)
        if unsent:
            _decrement(self.unsent, peer)


def _decrement(counts: dict[str, int], key: str) -> None:
    left = counts.get(key, 0) - 1
    if left > 0:
        counts[key] = left
    else:
        counts.pop(key, None)


class TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for a request's first byte, headers and body, and a limit
    on the connections each peer holds (`peers`, one per server)."""

    header_timeout = 10.0
    body_timeout = 30.0
    peers = PeerCounts()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._waiting: str | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._peer = peer_of(transport)
        self._unsent = self._peer is not None
        if self._peer is not None:
            why = self.peers.refusal(self._peer)
            if why is not None:
                self._peer = None  # never counted
                self._unsent = False
                log.info("refusing a connection: %s", why)
                text = f"too many connections: {why}\n".encode()
                transport.write(_429 % (len(text), text))
                transport.close()
                return
        self._expect("first byte")

    def data_received(self, data: bytes) -> None:
        if self._waiting == "first byte":
            self._expect("headers")
        super().data_received(data)
        if self._unsent and self.cycle is not None:  # the first request head is in
            self._unsent = False
            assert self._peer is not None
            self.peers.sent(self._peer)
        state = self.conn.their_state
        if state is h11.IDLE:
            if self._waiting is None:  # the first bytes of the next request on a kept-alive connection
                self._expect("headers")
        elif state is h11.SEND_BODY:
            if self._waiting != "body":
                self._expect("body")
        elif self._waiting is not None:
            self._expect(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self._expect(None)
        if self._peer is not None:
            self.peers.closed(self._peer, unsent=self._unsent)
            self._peer = None
        super().connection_lost(exc)

    def _expect(self, what: str | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._waiting = what
        if what is not None:
            timeout = {
                "first byte": min(FIRST_BYTE_SECONDS, self.header_timeout),
                "headers": self.header_timeout,
            }.get(what, self.body_timeout)
            self._deadline = self.loop.call_later(timeout, self._timed_out, what, timeout)

    def _timed_out(self, what: str, timeout: float) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        log.info("closing a connection from %s: no complete request %s within %gs", self.client, what, timeout)
        if self.cycle is None or not self.cycle.response_started:
            text = f"request {what} not received within {timeout:g}s\n".encode()
            self.transport.write(_408 % (len(text), text))
        self.transport.close()


def timed_protocol(settings: ServeSettings) -> type[TimedH11Protocol]:
    return type(
        "TimedH11Protocol",
        (TimedH11Protocol,),
        {
            "header_timeout": settings.header_timeout_seconds,
            "body_timeout": settings.body_timeout_seconds,
            "peers": PeerCounts(),
        },
    )


class _GracefulServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, calls: CallsInFlight, grace: float, on_ready: Callable[[], None]):
        super().__init__(config)
        self.calls = calls
        self.grace = grace
        self.on_ready = on_ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self.on_ready()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()  # refuse new connections from now on
        if self.calls.count:
            log.warning("stopping: waiting up to %gs for %d request(s) in flight", self.grace, self.calls.count)
        if not await self.calls.wait_idle(self.grace):
            log.warning("stopping: %d request(s) still running after %gs are cut", self.calls.count, self.grace)
            _abandon_after(ABANDON_SECONDS, self.calls)
        AppStatus.should_exit = True  # now end the streams that stay open by design
        await super().shutdown(sockets)


def _abandon_after(seconds: float, calls: CallsInFlight) -> None:
    """Exit the process in `seconds` if it is still stopping: calls on worker threads cannot be cut."""

    def abandon() -> None:
        log.warning(
            "stopping: %d call(s) still running are abandoned unanswered (none was acknowledged; what they had "
            "not committed is rolled back); exiting",
            calls.count,
        )
        logging.shutdown()
        sys.stderr.flush()
        os._exit(0)

    timer = threading.Timer(seconds, abandon)
    timer.daemon = True  # a process that ends by itself first is not held up by it
    timer.start()


def run_http(app: CallsInFlight, sock: socket.socket, settings: ServeSettings, on_ready: Callable[[], None]) -> None:
    """Serve `app` on the bound `sock` until SIGTERM or Ctrl-C, then stop gracefully."""
    AppStatus.enable_automatic_graceful_drain = False  # _GracefulServer.shutdown ends the streams itself
    AppStatus.should_exit = False
    config = uvicorn.Config(
        app,
        http=timed_protocol(settings),
        log_level="warning",
        lifespan="on",
        limit_concurrency=MAX_CONNECTIONS,
        timeout_graceful_shutdown=2,
    )
    server = _GracefulServer(config, app, settings.shutdown_grace_seconds, on_ready)
    # uvicorn re-raises the signal that stopped it once it is done; by then the stop was graceful,
    # so the re-raised one must not kill the process before the caller closes its stores.
    quiet: dict[int, Any] = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.run(sockets=[sock])
    finally:
        for sig, handler in quiet.items():
            signal.signal(sig, handler)
        sock.close()
