"""The daemon's command runner: the CLI imported once, a forked child for each shell command.

    homeport daemon run               the daemon; starts the runner beside itself, on a pipe
      homeport daemon commands        STATE_DIR/daemon/commands.sock (0600); has imported the CLI
        one child per command         the caller's stdin, stdout, stderr, working directory,
                                      environment, umask and arguments; runs `cli.main(argv)`

Why, and what a caller checks before it sends anything: `homeport.cli._thin`. The runner proves
itself with the daemon's registered secret (`registry.proof`: an HMAC of the caller's nonce and this
socket's address, for the daemon's pid), and serves only callers the kernel says run as this user.

A child is a fork of a single-threaded process: forking a process with threads can leave the child a
lock that another thread held forever. The daemon has threads, so the runner is a process of its own,
and it refuses a command (the caller then runs it itself) should anything it imported have started
one. It stops when the daemon's end of its stdin closes, however the daemon ended.

A child's own calls reach the daemon as any shell command's do (`ToolCall` through the core's owner
forwarding), so the daemon stays the one writer of its workspaces and the one that embeds.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import io
import json
import logging
import os
import select
import signal
import socket
import sys
import threading
import traceback
from typing import Any, NoReturn

import homeport
from homeport import __version__
from homeport.cli._thin import FORWARDED, HANDSHAKE_TIMEOUT_SECONDS, MAX_LINE
from homeport.registry.proof import connection_address, peer_credentials, proof_for, proof_key, valid_nonce

__all__ = ["PRELOADED", "preload", "serve_commands"]

log = logging.getLogger("homeport.daemon.commands")

# What a memory command imports beyond its command module, on its first call (found by comparing
# sys.modules before and after one): imported here once instead of in every child.
PRELOADED = (
    "homeport.core.tools",
    "homeport.core.runtime",
    "homeport.core.pipeline",
    "homeport.core.stores",
    "homeport.mesh.owner_client",
    "homeport.mesh.owner_http",
    "anyio._backends._asyncio",
    "h11",
    "click._textwrap",
    "rich.console",
    "rich.table",
    "rich._emoji_codes",
)
MAX_REQUEST = 4 * 1024 * 1024  # arguments and environment; a command's data goes through its stdin
_DESCRIPTORS = 4  # stdin, stdout, stderr, working directory


def serve_commands(listener: socket.socket, *, daemon_pid: int, secret: bytes, stop_fd: int = 0) -> None:
    """Serve the commands sent to `listener` until `stop_fd` reaches its end (the daemon's pipe).

    Call `preload` first, before listening: a caller that connects meanwhile would wait for it.
    """
    key = proof_key(secret)
    address = connection_address(listener.family, listener.getsockname())
    if address is None:
        raise ValueError("the command runner needs a unix socket")
    package = os.path.dirname(os.path.abspath(homeport.__file__))
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the children
    log.info("command runner pid %d for the daemon pid %d ready", os.getpid(), daemon_pid)
    while True:
        ready, _, _ = select.select([listener.fileno(), stop_fd], [], [])
        if stop_fd in ready and not os.read(stop_fd, 4096):
            return
        if listener.fileno() not in ready:
            continue
        try:
            connection, _ = listener.accept()
        except OSError:
            continue
        with connection:
            try:
                _serve_one(connection, listener, stop_fd, key, address, daemon_pid, package)
            except (OSError, ValueError) as exc:
                log.warning("a command was not run: %s", exc)


def preload() -> None:
    """Import what the forwarded commands run, and build every tool's argument model, once."""
    from homeport.cli.main import cli

    for name in sorted(FORWARDED & set(cli.lazy_commands)):
        cli.load(name)
    for module in PRELOADED:
        try:
            importlib.import_module(module)
        except ImportError:
            log.warning("the command runner could not preload %s", module)
    from homeport.core.catalog import CATALOG
    from homeport.errors import HomeportError

    for spec in CATALOG:
        # Each tool's argument model is built on its first call (about 10 ms): here, once for every child.
        with contextlib.suppress(HomeportError):
            spec.validate({})


def _serve_one(
    connection: socket.socket,
    listener: socket.socket,
    stop_fd: int,
    key: bytes,
    address: str,
    daemon_pid: int,
    package: str,
) -> None:
    connection.settimeout(HANDSHAKE_TIMEOUT_SECONDS)
    credentials = peer_credentials(connection)
    if credentials is not None and credentials[1] != os.geteuid():
        raise ValueError(f"a caller running as uid {credentials[1]} was refused")
    hello = json.loads(_read_line(connection))
    nonce = hello.get("nonce") if isinstance(hello, dict) else None
    if not isinstance(nonce, str) or not valid_nonce(nonce):
        raise ValueError("a caller sent no valid nonce")
    proof = proof_for(key, nonce, address, daemon_pid)
    _send(connection, {"pid": daemon_pid, "proof": proof, "version": __version__, "package": package})
    if hello.get("version") != __version__ or hello.get("package") != package:
        return  # the caller sees the difference and runs the command itself
    header, descriptors, _flags, _address = socket.recv_fds(connection, 8, _DESCRIPTORS)
    try:
        if len(descriptors) != _DESCRIPTORS:
            raise ValueError("a command came without its descriptors")
        header += _read_exactly(connection, 8 - len(header))
        length = int.from_bytes(header, "big")
        if length > MAX_REQUEST:
            raise ValueError(f"a command of {length} bytes was refused")
        request = _request(json.loads(_read_exactly(connection, length)))
        if threading.active_count() > 1:
            _send(connection, {"fallback": "the command runner has threads: it cannot fork safely"})
            return
        sys.stdout.flush()
        sys.stderr.flush()
        # The child starts with SIGINT blocked: the caller's Ctrl-C lands when the command can take it.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            if os.fork() == 0:
                _child(connection, listener, stop_fd, request, descriptors)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    finally:
        for descriptor in descriptors:
            os.close(descriptor)


def _request(value: Any) -> dict[str, Any]:
    """The command as sent, its types checked (a caller of this user, but a program that may be wrong)."""
    if not isinstance(value, dict):
        raise ValueError("a command is an object")
    argv, env, umask, streams = value.get("argv"), value.get("env"), value.get("umask"), value.get("streams")
    if not (isinstance(argv, list) and all(isinstance(a, str) for a in argv)):
        raise ValueError("argv is a list of strings")
    if not (isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
        raise ValueError("env maps strings to strings")
    if not isinstance(umask, int) or not 0 <= umask <= 0o777:
        raise ValueError("umask is a mode")
    if not (
        isinstance(streams, list)
        and len(streams) == 3
        and all(
            isinstance(s, list)
            and len(s) == 4
            and isinstance(s[0], str)
            and isinstance(s[1], str)
            and isinstance(s[2], bool)
            and isinstance(s[3], bool)
            for s in streams
        )
    ):
        raise ValueError("streams are three [encoding, errors, line_buffering, write_through]")
    return {"argv": argv, "env": env, "umask": umask, "streams": streams}


def _child(
    connection: socket.socket, listener: socket.socket, stop_fd: int, request: dict[str, Any], descriptors: list[int]
) -> NoReturn:
    """Become the caller's command: its descriptors, directory, environment; run it; report how it exited."""
    code = 1
    try:
        for name in ("SIGCHLD", "SIGTERM", "SIGHUP"):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        listener.close()
        with contextlib.suppress(OSError):
            os.close(stop_fd)
        for target, descriptor in enumerate(descriptors[:3]):
            os.dup2(descriptor, target)
        os.fchdir(descriptors[3])
        for descriptor in descriptors:
            os.close(descriptor)
        os.umask(request["umask"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.stdin, sys.stdout, sys.stderr = (
            _stream(fd, mode, *spec) for fd, mode, spec in zip((0, 1, 2), "rww", request["streams"], strict=True)
        )
        sys.argv = ["homeport", *request["argv"]]
        connection.settimeout(None)
        _send(connection, {"pid": os.getpid()})
        code = _invoke(request["argv"])
        atexit._run_exitfuncs()
        code = _flushed(code)
        _send(connection, {"exit": code})
    except BaseException:  # a child must never return into the runner's loop
        with contextlib.suppress(BaseException):
            traceback.print_exc()
            sys.stderr.flush()
    finally:
        os._exit(code)


def _stream(
    fd: int, mode: str, encoding: str, errors: str, line_buffering: bool, write_through: bool
) -> io.TextIOWrapper:
    """A standard stream on `fd` made as Python makes the caller's (newline "\\n" on POSIX)."""
    binary = open(fd, mode + "b", closefd=False)  # noqa: SIM115 - it lives as long as the process
    return io.TextIOWrapper(
        binary,
        encoding=encoding,
        errors=errors,
        newline="\n",
        line_buffering=line_buffering,
        write_through=write_through,
    )


def _invoke(argv: list[str]) -> int:
    """Run `homeport ARGV` as `homeport.cli.main.main` does and return the status the process would exit with."""
    from homeport.cli.main import cli

    try:
        try:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        except KeyboardInterrupt:  # pressed while the child was made: as click says an interrupt
            print("\nAborted!", file=sys.stderr)
            return 1
        cli.main(args=argv, prog_name="homeport")
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        traceback.print_exc()
        return 128 + signal.SIGINT
    except BaseException:  # printed as Python prints what ends a program
        traceback.print_exc()
        return 1
    return 0


def _flushed(code: int) -> int:
    """`code`, or 120 as Python exits when the standard streams cannot be flushed at the end."""
    failed = False
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            failed = True
    return 120 if failed and code == 0 else code


def _send(connection: socket.socket, message: dict[str, Any]) -> None:
    connection.sendall(json.dumps(message).encode("utf-8") + b"\n")


def _read_line(connection: socket.socket) -> bytes:
    """One line, read a byte at a time: the caller sends nothing more before it is answered, and what it
    sends next comes with descriptors that a read ahead would take."""
    data = bytearray()
    while not data.endswith(b"\n"):
        if len(data) > MAX_LINE:
            raise ValueError("a line too long")
        chunk = connection.recv(1)
        if not chunk:
            raise ValueError("the caller went away")
        data += chunk
    return bytes(data)


def _read_exactly(connection: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = connection.recv(min(size - len(data), 65536))
        if not chunk:
            raise ValueError("the caller went away")
        data += chunk
    return bytes(data)
