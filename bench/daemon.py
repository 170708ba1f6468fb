"""What the per-user daemon costs: a stdio server's call served locally, forwarded to the daemon over
its unix socket, or sent to the daemon's socket directly.

    python3 bench/daemon.py            # 500 calls per path after 50 warm-up calls
    python3 bench/daemon.py --calls 100

Real processes in a temporary directory: `homeport daemon start` owning project `owned`, and a
stdio `homeport serve` over the folder holding `owned` and `local`. Every path makes the same read,
`get_decisions(limit=10)` of a store holding 10 decisions, one call at a time:

    stdio, local            stdio server -> its own store (`local` is not the daemon's)
    stdio -> daemon         stdio server -> daemon over Streamable HTTP on the unix socket -> store
    direct to the daemon    client -> daemon's socket (the floor forwarding is measured against)
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from _common import environ_without_homeport, latency_table, percentile, timed_calls
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

BOOT = "from homeport.cli import main; main()"


def _project(path: Path) -> Path:
    (path / ".git").mkdir(parents=True)
    return path.resolve()


@contextlib.asynccontextmanager
async def _over_socket(sock: Path, root: Path) -> AsyncIterator[Client]:
    transport = httpx2.AsyncHTTPTransport(uds=str(sock))
    async with (
        httpx2.AsyncClient(transport=transport, headers={"X-Workspace-Id": str(root)}, timeout=30) as http,
        Client(streamable_http_client("http://localhost/mcp", http_client=http)) as client,
    ):
        yield client


async def measure(calls: int, warmup: int) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory(prefix="hp-daemon-") as tmp:
        base = Path(tmp, "src").resolve()
        owned, local = _project(base / "owned"), _project(base / "local")
        state = Path(tmp, "st")
        env = environ_without_homeport(state)
        cli = [sys.executable, "-c", BOOT, "daemon"]
        subprocess.run([*cli, "start", "--allow-root", str(owned)], cwd=owned, env=env, check=True)
        try:
            stdio = StdioServerParameters(
                command=sys.executable, args=["-c", BOOT, "serve", "--allow-root", str(base)], cwd=str(base), env=env
            )
            results: dict[str, list[float]] = {}
            async with Client(stdio) as front, _over_socket(state / "daemon" / "homeport.sock", owned) as direct:
                for root in (owned, local):
                    for i in range(10):
                        await front.call_tool("log_decision", {"workspace": str(root), "summary": f"decision {i}"})
                where = (await front.call_tool("where_am_i", {"workspace": str(owned)})).structured_content
                assert where is not None and where["served_by"]["endpoint"].startswith("unix:"), where

                def read(client: Client, args: dict[str, Any]) -> Callable[[], Awaitable[Any]]:
                    return lambda: client.call_tool("get_decisions", {"limit": 10, **args})

                results["stdio, local"] = await timed_calls(read(front, {"workspace": str(local)}), calls, warmup)
                results["stdio -> daemon"] = await timed_calls(read(front, {"workspace": str(owned)}), calls, warmup)
                results["direct to the daemon (socket)"] = await timed_calls(read(direct, {}), calls, warmup)
            return results
        finally:
            subprocess.run([*cli, "stop"], cwd=base, env=env, check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=500, help="measured calls per path (default 500)")
    parser.add_argument("--warmup", type=int, default=50, help="unmeasured calls per path first (default 50)")
    options = parser.parse_args()
    results = anyio.run(measure, options.calls, options.warmup)
    print(latency_table(results, f"{options.calls} calls of get_decisions(limit=10)"))
    overhead = percentile(results["stdio -> daemon"], 50) - percentile(results["direct to the daemon (socket)"], 50)
    print(f"\nforwarding overhead, stdio -> daemon: {overhead:+.2f} ms p50 over direct-to-daemon")


if __name__ == "__main__":
    main()
