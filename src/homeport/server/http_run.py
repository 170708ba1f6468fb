"""Run the HTTP app on uvicorn: bind first, time out slow clients, finish calls in flight on shutdown.

- The port is bound before anything is printed, so a taken port is one clear error, and
  `--port 0` reports the port it got.
- uvicorn closes idle keep-alive connections (`timeout_keep_alive`) but waits forever for the
  headers or body of a request; `TimedH11Protocol` gives each a deadline and answers 408, so a
  stalled client costs one connection for a bounded time while the event loop serves the others.
- On SIGTERM or Ctrl-C the listener closes at once (new connections are refused), requests
  being answered get `shutdown_grace_seconds` to finish, and only then are the SSE streams that
  stay open by design (legacy GET streams) ended: sse-starlette would otherwise end every stream,
  answered or not, on the first signal.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import signal
import socket
from collections.abc import Callable
from typing import Any

import h11
import uvicorn
from sse_starlette.sse import AppStatus
from uvicorn.protocols.http.h11_impl import H11Protocol

from homeport.core.settings import ServeSettings
from homeport.errors import ConfigError
from homeport.server.http_middleware import CallsInFlight

__all__ = ["TimedH11Protocol", "bind", "run_http"]

log = logging.getLogger("homeport.http")

# Connections at once (uvicorn answers 503 beyond): well below the usual 1024 descriptors, which
# the open stores share.
MAX_CONNECTIONS = 512


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


class TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for a request's headers and one for its body."""

    header_timeout = 10.0
    body_timeout = 30.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._waiting: str | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._expect("headers")

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
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
        super().connection_lost(exc)

    def _expect(self, what: str | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._waiting = what
        if what is not None:
            timeout = self.header_timeout if what == "headers" else self.body_timeout
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
        {"header_timeout": settings.header_timeout_seconds, "body_timeout": settings.body_timeout_seconds},
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
        AppStatus.should_exit = True  # now end the streams that stay open by design
        await super().shutdown(sockets)


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
