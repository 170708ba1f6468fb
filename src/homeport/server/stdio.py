"""MCP over stdin/stdout: one JSON-RPC message per line, every line answered or passed on.

The SDK's stdio transport hands a line it cannot parse to the server as an exception, which
answers nothing, so a client that sent deeply nested JSON or an escaped lone surrogate waits
forever. Here such a line gets a JSON-RPC error at once (-32700 for text that is not JSON the
SDK accepts, -32600 for JSON that is no message), with the request's id when it can be read.

stdin is read by a daemon thread, so neither EOF nor Ctrl-C waits on a blocked read: the server
stops as soon as stdin closes. As in the SDK, the wire moves to private descriptors while
serving and fd 0/1 point at the null device and stderr, so a stray print cannot corrupt it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp.types as types
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server import MCPServer
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from homeport.core.runtime import Runtime
from homeport.errors import HomeportError, WorkspaceError
from homeport.workspace import CallInputs, Source

__all__ = ["describe_default_workspace", "rejection", "roots_change_the_default", "serve_stdio"]

# Small answers are written straight to the pipe (it holds 64 KiB); bigger ones from a worker thread.
_INLINE_WRITE_BYTES = 16 * 1024


def serve_stdio(mcp: MCPServer, on_initialize: Callable[[dict[str, Any]], None] | None = None) -> None:
    """Serve `mcp` on this process's stdin/stdout until stdin closes (Ctrl-C raises KeyboardInterrupt).

    `on_initialize(params)` sees the client's `initialize` request (2025 era) before the SDK answers it.
    """
    anyio.run(_serve, mcp, on_initialize)


async def _serve(mcp: MCPServer, on_initialize: Callable[[dict[str, Any]], None] | None = None) -> None:
    lowlevel = mcp._lowlevel_server  # the SDK's own run_stdio_async drives the same object
    with _claimed_wire() as (wire_in, wire_out):
        read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)

        async def deliver(line: bytes) -> None:
            try:
                message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except ValidationError as exc:
                answer = rejection(line, exc)
                if answer is not None:
                    await write_send.send(SessionMessage(answer))
                return
            if on_initialize is not None and _is_initialize(message):
                assert isinstance(message, types.JSONRPCRequest)
                on_initialize(message.params or {})
            await read_send.send(SessionMessage(message))

        async def write_all() -> None:
            async with write_receive:
                async for item in write_receive:
                    data = item.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
                    if len(data) <= _INLINE_WRITE_BYTES:
                        _write(wire_out, data)
                    else:
                        await anyio.to_thread.run_sync(_write, wire_out, data)

        token = anyio.lowlevel.current_token()
        threading.Thread(
            target=_read_lines, args=(wire_in, deliver, read_send, token), name="homeport-stdin", daemon=True
        ).start()

        async def stop_on_signal(scope: anyio.CancelScope) -> None:
            # Ctrl-C or SIGTERM ends the input as EOF would; a second one stops at once.
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    read_send.close()
                    break
                async for _ in signals:
                    scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(write_all)
            tg.start_soon(stop_on_signal, tg.cancel_scope)
            await lowlevel.run(read_receive, write_send, lowlevel.create_initialization_options())
            tg.cancel_scope.cancel()


def _is_initialize(message: Any) -> bool:
    return isinstance(message, types.JSONRPCRequest) and message.method == "initialize"


def _read_lines(wire_in: IO[bytes], deliver: Any, read_send: MemoryObjectSendStream[Any], token: Any) -> None:
    try:
        for line in iter(wire_in.readline, b""):
            if line.strip():
                anyio.from_thread.run(deliver, line, token=token)
        anyio.from_thread.run(read_send.aclose, token=token)
    except (anyio.RunFinishedError, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError, RuntimeError):
        return  # the server stopped first


def _write(wire_out: IO[bytes], data: bytes) -> None:
    wire_out.write(data)
    wire_out.flush()


def rejection(line: bytes, exc: ValidationError) -> types.JSONRPCError | None:
    """The answer to a line the SDK could not take as a message; None for a broken response or
    notification, which JSON-RPC never answers."""
    parse_error = any(e["type"] == "json_invalid" for e in exc.errors(include_url=False))
    try:
        parsed = json.loads(line.decode("utf-8", "replace"))  # only to find the id to answer
    except RecursionError:  # nested past Python's own limit: the top level is still read
        parsed = _top_level(line)
    except ValueError:
        parsed = None
    request_id = None
    if isinstance(parsed, dict):
        if "result" in parsed or "error" in parsed or ("method" in parsed and "id" not in parsed):
            return None
        candidate = parsed.get("id")
        if isinstance(candidate, (str, int)) and not isinstance(candidate, bool):
            request_id = candidate
    first = exc.errors(include_url=False)[0]
    if parse_error:
        error = types.ErrorData(
            code=types.PARSE_ERROR, message=f"Parse error: {first['msg'].removeprefix('Invalid JSON: ')}"
        )
    else:
        error = types.ErrorData(
            code=types.INVALID_REQUEST,
            message="Invalid request: not a JSON-RPC 2.0 request or notification "
            f"({'.'.join(map(str, first['loc'])) or 'message'}: {first['msg']})",
        )
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)


# A JSON string (escapes included) or a bracket: what a scan of the top level steps over and counts.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _top_level(line: bytes) -> dict[str, Any] | None:
    """The keys of the top-level object of `line` with their values, where a value is a scalar, without
    parsing what is nested: a line nested past Python's recursion limit still names its id, and its
    answer must carry it (a client matches answers to requests by id, and waits forever otherwise)."""
    found: dict[str, Any] = {}
    depth = 0
    decoder = json.JSONDecoder()
    for token in _TOKEN.finditer(line):
        text = token.group()
        if text in (b"{", b"["):
            depth += 1
            if depth == 1 and text == b"[":
                return None  # a batch
        elif text in (b"}", b"]"):
            depth -= 1
        elif depth == 1:
            rest = line[token.end() :].lstrip()
            if not rest.startswith(b":"):
                continue  # a value, not a key
            try:
                key = json.loads(text)
                value, _ = decoder.raw_decode(rest[1:].lstrip().decode("utf-8", "replace"))
            except (ValueError, RecursionError):
                value = ...  # an object or a list: present, but not a scalar
            found[key] = value
    return found if found else None


@contextlib.contextmanager
def _claimed_wire() -> Iterator[tuple[IO[bytes], IO[bytes]]]:
    """The wire on private descriptors; fd 0 reads the null device and fd 1 writes to stderr meanwhile."""
    wire_in_fd, wire_out_fd = os.dup(0), os.dup(1)  # not inheritable: children never see the wire
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    # closefd=False: the reader thread may still block on its descriptor after the server stops.
    wire_in = os.fdopen(wire_in_fd, "rb", closefd=False)
    wire_out = os.fdopen(wire_out_fd, "wb", closefd=False)
    try:
        yield wire_in, wire_out
    finally:
        with contextlib.suppress(OSError, ValueError):
            wire_out.flush()
        os.dup2(wire_out_fd, 1)
        os.dup2(wire_in_fd, 0)


def describe_default_workspace(runtime: Runtime) -> str:
    """Which workspace a call that names none would use, and why (the stdio start-up line)."""
    s = runtime.settings
    try:
        workspace = runtime.resolve(CallInputs(), write=False)
    except WorkspaceError:
        cwd = s.cwd
        why = runtime.resolver.settings.guard.denied.reason(cwd, as_cwd=True) if cwd else None
        because = f"the current directory {cwd} is {why}" if why == "the filesystem root" else why
        return (
            f"no default workspace ({because or 'no source names one'}); each call needs the workspace "
            "argument or client roots, or restart with --workspace DIR"
        )
    origin = workspace.source.said
    if workspace.source is Source.CLIENT_ENV:  # which of the client's variables
        origin = "CLAUDE_PROJECT_DIR" if s.client_env.get("CLAUDE_PROJECT_DIR") else "WORKSPACE_FOLDER_PATHS"
    project = "" if workspace.is_project else "; not a project yet (no .homeport/ or git repository)"
    # Roots come before the client's environment and the directory: a client that sends them wins.
    unless = " unless the client sends roots" if workspace.source in _BELOW_ROOTS else ""
    return f"default workspace {workspace.root} (from {origin}){unless}{project}{_trust_note(runtime, workspace.root)}"


_BELOW_ROOTS = frozenset({Source.CLIENT_ENV, Source.CWD})


def roots_change_the_default(runtime: Runtime, params: dict[str, Any]) -> str | None:
    """What a client's `initialize` changes about the default workspace: with roots declared, a call that
    names none uses them, not the client's environment or the directory; None when nothing changes."""
    capabilities = params.get("capabilities")
    if not isinstance(capabilities, dict) or capabilities.get("roots") is None:
        return None
    try:
        workspace = runtime.resolve(CallInputs(), write=False)
    except WorkspaceError:
        return "the client sends roots: a call that names no workspace uses them"
    if workspace.source not in _BELOW_ROOTS:
        return None
    return f"the client sends roots: a call that names no workspace uses them, not {workspace.root}"


def _trust_note(runtime: Runtime, root: Path) -> str:
    """What the project's config asks for that waits for the user's trust (`homeport trust`), if anything."""
    if runtime.team is None:
        return ""
    try:
        waiting = runtime.team.waiting(root)
    except HomeportError as exc:
        return f"; its team configuration cannot be used: {exc.message}"
    return "" if waiting is None else f"; {waiting.line()}"
