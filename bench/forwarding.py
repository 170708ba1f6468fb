"""What forwarding costs: one call served locally, forwarded to the workspace's owner, or sent to the owner directly.

    python3 bench/forwarding.py            # 500 calls per path after 50 warm-up calls
    python3 bench/forwarding.py --calls 100

Three real processes in a temporary directory, one state directory: an owner
(`serve --http --own` of project `owned`), a stdio front end and an HTTP front end (`serve`
over the folder holding `owned` and `local`). Every path makes the same read,
`get_decisions(limit=10)` of a store holding 10 decisions, one call at a time:

    local          front end -> its own store (`local` has no owner)
    forwarded      front end -> owner over Streamable HTTP -> store
    direct         client -> owner over Streamable HTTP (the floor forwarding is measured against)

Reports p50 and p95 in ms per path and the forwarding overhead (forwarded p50 - direct p50).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from _common import environ_without_homeport, percentile, timed_calls
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

BOOT = "from homeport.cli import main; main()"


def _project(path: Path) -> Path:
    (path / ".git").mkdir(parents=True)
    return path.resolve()


def _start(args: list[str], cwd: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as sink:
        return subprocess.Popen(
            [sys.executable, "-c", BOOT, "serve", *args], cwd=cwd, env=env, stdout=sink, stderr=subprocess.STDOUT
        )


def _wait_owner(state: Path, pid: int, log: Path) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError, KeyError, httpx2.TransportError):
            for entry in json.loads((state / "registry.json").read_text())["owners"].values():
                if entry["pid"] == pid and httpx2.get(entry["endpoint"] + "/healthz").json()["pid"] == pid:
                    return str(entry["endpoint"])
        time.sleep(0.1)
    raise SystemExit(f"the owner did not start:\n{log.read_text()}")


def _wait_http(url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx2.TransportError):
            if httpx2.get(url + "/healthz").status_code == 200:
                return
        time.sleep(0.1)
    raise SystemExit(f"{url} did not start")


@contextlib.asynccontextmanager
async def _http(url: str, headers: dict[str, str]) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http,
        Client(streamable_http_client(url + "/mcp", http_client=http)) as client,
    ):
        yield client


async def measure(calls: int, warmup: int) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory(prefix="homeport-forwarding-") as tmp:
        base = Path(tmp, "src").resolve()
        owned, local = _project(base / "owned"), _project(base / "local")
        state = Path(tmp, "state")
        env = environ_without_homeport(state)
        owner = _start(["--http", "--own", "--allow-root", str(owned)], owned, env, Path(tmp, "owner.log"))
        front_http = None
        try:
            endpoint = _wait_owner(state, owner.pid, Path(tmp, "owner.log"))
            port = int(endpoint.rsplit(":", 1)[1]) + 100
            front_http = _start(
                ["--http", "--port", str(port), "--allow-root", str(base)], base, env, Path(tmp, "front.log")
            )
            front_url = f"http://127.0.0.1:{port}"
            _wait_http(front_url)
            stdio = StdioServerParameters(
                command=sys.executable, args=["-c", BOOT, "serve", "--allow-root", str(base)], cwd=str(base), env=env
            )
            results: dict[str, list[float]] = {}
            async with (
                Client(stdio) as front,
                _http(endpoint, {"X-Workspace-Id": str(owned)}) as direct,
                _http(front_url, {"X-Workspace-Id": str(owned)}) as front_owned,
                _http(front_url, {"X-Workspace-Id": str(local)}) as front_local,
            ):
                for root in (owned, local):
                    for i in range(10):
                        await front.call_tool("log_decision", {"workspace": str(root), "summary": f"decision {i}"})
                where = (await front.call_tool("where_am_i", {"workspace": str(owned)})).structured_content
                assert where is not None and where["served_by"]["process"] == "owner", where

                def read(client: Client, args: dict[str, Any]) -> Callable[[], Awaitable[Any]]:
                    return lambda: client.call_tool("get_decisions", {"limit": 10, **args})

                results["stdio front end, local"] = await timed_calls(
                    read(front, {"workspace": str(local)}), calls, warmup
                )
                results["stdio front end, forwarded"] = await timed_calls(
                    read(front, {"workspace": str(owned)}), calls, warmup
                )
                results["HTTP front end, local"] = await timed_calls(read(front_local, {}), calls, warmup)
                results["HTTP front end, forwarded"] = await timed_calls(read(front_owned, {}), calls, warmup)
                results["direct to the owner (HTTP)"] = await timed_calls(read(direct, {}), calls, warmup)
            return results
        finally:
            for process in (owner, front_http):
                if process is not None:
                    process.terminate()
                    process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=500, help="measured calls per path (default 500)")
    parser.add_argument("--warmup", type=int, default=50, help="unmeasured calls per path first (default 50)")
    options = parser.parse_args()
    results = anyio.run(measure, options.calls, options.warmup)
    print(f"| path ({options.calls} calls of get_decisions(limit=10)) | p50 ms | p95 ms |")
    print("|---|---|---|")
    for name, times in results.items():
        print(f"| {name} | {percentile(times, 50):.2f} | {percentile(times, 95):.2f} |")
    direct = percentile(results["direct to the owner (HTTP)"], 50)
    for front in ("stdio", "HTTP"):
        overhead = percentile(results[f"{front} front end, forwarded"], 50) - direct
        print(f"\nforwarding overhead, {front} front end: {overhead:+.2f} ms p50 over direct-to-owner")


if __name__ == "__main__":
    main()
