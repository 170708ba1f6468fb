"""Helpers for the end-to-end tests: real `homeport serve` processes, stdio and HTTP.

Every server runs as a child process started with `python -c "from homeport.cli import main; main()"`
(works whether or not `homeport/__main__.py` exists) and an explicit environment from which every
variable that could name a workspace has been removed, so a test sees only the sources it sets.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

CLI_BOOT = "from homeport.cli import main; main()"
# Environment variables that are a workspace source (or change resolution) and must never leak in.
_SOURCE_VARS = ("CLAUDE_PROJECT_DIR", "WORKSPACE_FOLDER_PATHS")
# Hang guards, not deadlines: a start that takes 2 s alone took 20 s with other jobs on both cores.
HEALTH_DEADLINE_S = 120.0
STOP_DEADLINE_S = 10.0


# --------------------------------------------------------------------------------------------
# environment and projects


def clean_env(**extra: str) -> dict[str, str]:
    """A copy of os.environ without HOMEPORT_* and client workspace hints, plus `extra`.

    Unless `extra` names a HOME, the data directory is a scratch one: a server writes its deployment
    key there on the first handle, and a test run must leave the real home directory as it was.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPORT_") and k not in _SOURCE_VARS}
    if "HOME" not in extra:
        env["HOMEPORT_DATA_DIR"] = str(_scratch_data_dir())
    env.update(extra)
    return env


@functools.cache
def _scratch_data_dir() -> Path:
    path = Path(tempfile.mkdtemp(prefix="homeport-e2e-data-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def serve_args(*extra: str) -> list[str]:
    """Arguments for `sys.executable` that run `homeport serve *extra`."""
    return ["-c", CLI_BOOT, "serve", *extra]


def make_project(path: Path) -> Path:
    """A project directory (a git root: `.git/` inside) at `path`; returns its canonical path."""
    (path / ".git").mkdir(parents=True, exist_ok=True)
    return Path(os.path.realpath(path))


def store_file(root: Path) -> Path:
    return root / ".homeport" / "homeport.db"


# --------------------------------------------------------------------------------------------
# results


def ok(result: Any) -> dict[str, Any]:
    """The structured content of a successful tool result (fails with the error text otherwise)."""
    assert not result.is_error, f"tool failed: {_text(result)}"
    assert result.structured_content is not None, f"no structured content: {_text(result)}"
    return result.structured_content


def error_text(result: Any) -> str:
    """The text of a tool result that must be an error."""
    assert result.is_error, f"expected an error, got {result.structured_content!r}"
    return _text(result)


def _text(result: Any) -> str:
    return "\n".join(getattr(part, "text", "") for part in result.content)


def where(result: Any) -> tuple[str, str]:
    """(root, source) of a successful tool result."""
    ws = ok(result)["workspace"]
    return ws["root"], ws["source"]


# --------------------------------------------------------------------------------------------
# stdio


def stdio_client(
    *,
    cwd: Path | str,
    mode: str,
    args: tuple[str, ...] = (),
    env: Mapping[str, str] | None = None,
    list_roots_callback: Any = None,
) -> Client:
    """A Client over a real `homeport serve` stdio subprocess."""
    params = StdioServerParameters(
        command=sys.executable, args=serve_args(*args), cwd=str(cwd), env=dict(env) if env is not None else clean_env()
    )
    return Client(params, mode=mode, list_roots_callback=list_roots_callback)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# HTTP


@dataclass
class HttpServer:
    process: subprocess.Popen[bytes]
    port: int
    allow_root: Path
    cwd: Path
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def mcp_url(self) -> str:
        return f"{self.base}/mcp"

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_healthy(server: HttpServer) -> None:
    deadline = time.monotonic() + HEALTH_DEADLINE_S
    last: object = None
    with httpx2.Client(timeout=2.0) as http:
        while time.monotonic() < deadline:
            try:
                response = http.get(f"{server.base}/healthz")
                if response.status_code == 200:
                    return
                last = response.status_code
            except httpx2.TransportError as exc:
                last = exc
            # Wait on the process itself: returns early (and fails) if the server died.
            try:
                code = server.process.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                continue
            raise RuntimeError(f"homeport serve --http exited with {code}:\n{server.log_text()}")
    raise RuntimeError(f"homeport serve --http not healthy after {HEALTH_DEADLINE_S}s ({last!r}):\n{server.log_text()}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_DEADLINE_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_DEADLINE_S)


@contextlib.contextmanager
def running_http_server(
    *,
    allow_root: Path,
    cwd: Path,
    log: Path,
    env: Mapping[str, str] | None = None,
    extra: tuple[str, ...] = (),
) -> Iterator[HttpServer]:
    """`homeport serve --http --allow-root ALLOW *extra` on a free loopback port, healthy, stopped afterwards."""
    port = free_port()
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [
                sys.executable,
                *serve_args(
                    "--http", "--host", "127.0.0.1", "--port", str(port), "--allow-root", str(allow_root), *extra
                ),
            ],
            cwd=cwd,
            env=dict(env) if env is not None else clean_env(),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    server = HttpServer(process=process, port=port, allow_root=allow_root, cwd=cwd, log=log)
    try:
        _wait_healthy(server)
        yield server
    finally:
        _stop(process)


@contextlib.asynccontextmanager
async def http_client(url: str, *, mode: str, headers: Mapping[str, str] | None = None) -> AsyncIterator[Client]:
    """A Client over Streamable HTTP with its own httpx2 client (so headers are per client)."""
    async with (
        httpx2.AsyncClient(headers=dict(headers or {}), timeout=httpx2.Timeout(30, read=60)) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,  # type: ignore[arg-type]
    ):
        yield client


def refused_with_403(url: str, headers: Mapping[str, str]) -> dict[str, Any]:
    """The JSON-RPC error of a POST to `url` that must be answered 403 (a workspace the request chooses
    and its principal may not use): `message` and `data` (code, workspace, source, principal)."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    response = httpx2.post(url, json=initialize, headers={**accept, **headers}, timeout=60)
    assert response.status_code == 403, (response.status_code, response.text)
    error: dict[str, Any] = response.json()["error"]
    assert error["data"]["code"] == "workspace_access_denied"
    return error
