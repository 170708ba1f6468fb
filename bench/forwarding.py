"""What forwarding costs: one call served locally, forwarded to the workspace's owner, or sent to the owner directly.

    python3 bench/forwarding.py            # 500 calls per path (in 5 rounds) after 50 warm-up calls
    python3 bench/forwarding.py --calls 100 --rounds 2
    python3 bench/forwarding.py --client   # the forwarding client alone, in one process (see below)

Three real processes in a temporary directory, one state directory: an owner
(`serve --http --own` of project `owned`), a stdio front end and an HTTP front end (`serve`
over the folder holding `owned` and `local`). Every path makes the same read,
`get_decisions(limit=10)` of a store holding 10 decisions, one call at a time:

    local          front end -> its own store (`local` has no owner)
    forwarded      front end -> owner over Streamable HTTP -> store
    direct         client -> owner over Streamable HTTP (the floor forwarding is measured against)

Reports p50 and p95 in ms per path and the forwarding overhead (forwarded p50 - direct p50).

`--client` measures the forwarding client alone (`mesh/owner_http.OwnerConnections`), in this
process against an in-process server that answers like an owner (the owner proof included, when the
code has it): a POST on a warm kept-alive connection, and the first POST on a new connection (with
the proof's extra round trip). CPU time of the whole process per POST, client and server: on a busy
machine, wall times swing with the load and CPU time much less. Run it with the code before and
after a change (PYTHONPATH=OTHER_CHECKOUT/src) to compare.
The paths take turns in rounds (`--rounds`), so a load that comes and goes touches each alike.
Beside the wall time, the CPU time per call of each server process (from /proc, Linux), which a
busy machine barely moves: the front end's CPU per forwarded call is what forwarding itself costs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from _common import (
    child_pids,
    environ_without_homeport,
    http_mcp_client,
    percentile,
    process_cpu_seconds,
    timed_calls,
    wait_healthy,
)
from mcp import Client, StdioServerParameters

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


Measured = tuple[dict[str, list[float]], dict[str, dict[str, float]]]


async def measure(calls: int, warmup: int, rounds: int) -> Measured:
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
            wait_healthy(front_url)
            stdio = StdioServerParameters(
                command=sys.executable, args=["-c", BOOT, "serve", "--allow-root", str(base)], cwd=str(base), env=env
            )
            results: dict[str, list[float]] = {}
            async with (
                Client(stdio) as front,
                http_mcp_client(endpoint, {"X-Workspace-Id": str(owned)}) as direct,
                http_mcp_client(front_url, {"X-Workspace-Id": str(owned)}) as front_owned,
                http_mcp_client(front_url, {"X-Workspace-Id": str(local)}) as front_local,
            ):
                for root in (owned, local):
                    for i in range(10):
                        await front.call_tool("log_decision", {"workspace": str(root), "summary": f"decision {i}"})
                where = (await front.call_tool("where_am_i", {"workspace": str(owned)})).structured_content
                assert where is not None and where["served_by"]["process"] == "owner", where

                def read(client: Client, args: dict[str, Any]) -> Callable[[], Awaitable[Any]]:
                    return lambda: client.call_tool("get_decisions", {"limit": 10, **args})

                stdio_pid = next(iter(child_pids(os.getpid()) - {owner.pid, front_http.pid}), None)
                # path -> (the call, the front end's pid or None)
                paths = {
                    "stdio front end, local": (read(front, {"workspace": str(local)}), stdio_pid),
                    "stdio front end, forwarded": (read(front, {"workspace": str(owned)}), stdio_pid),
                    "HTTP front end, local": (read(front_local, {}), front_http.pid),
                    "HTTP front end, forwarded": (read(front_owned, {}), front_http.pid),
                    "direct to the owner (HTTP)": (read(direct, {}), None),
                }
                cpu: dict[str, dict[str, float]] = {name: {"front": 0.0, "owner": 0.0} for name in paths}
                for n in range(rounds):
                    for name, (call, front_pid) in paths.items():
                        share = calls // rounds + (1 if n < calls % rounds else 0)
                        before = (process_cpu_seconds(front_pid) if front_pid else 0.0, process_cpu_seconds(owner.pid))
                        times = await timed_calls(call, share, warmup if n == 0 else 0)
                        cpu[name]["front"] += (process_cpu_seconds(front_pid) if front_pid else 0.0) - before[0]
                        cpu[name]["owner"] += process_cpu_seconds(owner.pid) - before[1]
                        results.setdefault(name, []).extend(times)
                per_call = {
                    name: {k: v * 1000 / len(results[name]) for k, v in spent.items()} for name, spent in cpu.items()
                }
            return results, per_call
        finally:
            for process in (owner, front_http):
                if process is not None:
                    process.terminate()
                    process.wait(timeout=30)


async def measure_client(calls: int, connections: int) -> dict[str, list[float]]:
    """CPU ms (whole process) per POST: warm (one kept-alive connection) and cold (a new connection each)."""
    import asyncio
    import inspect

    from homeport.mesh import owner_http

    answer = b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{},"isError":false}}'
    response = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
        len(answer),
        answer,
    )
    pid, secret = os.getpid(), b"bench secret"
    proving = "identity" in inspect.signature(owner_http.OwnerConnections).parameters
    extra: dict[str, Any] = {}
    if proving:
        from homeport.registry.proof import owner_address, proof_for, proof_key

        key = proof_key(secret)
        extra["identity"] = owner_http.OwnerIdentity(pid, key)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Cancelled when the server closes at the end: nothing left to answer.
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                if head.startswith(b"GET /owner-proof?nonce="):
                    nonce = head.split(b" ")[1].split(b"=")[1].decode()
                    here = owner_address(writer.get_extra_info("sockname"))
                    body = json.dumps({"pid": pid, "proof": proof_for(key, nonce, here, pid)}).encode()
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                    continue
                length = next(
                    int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")
                )
                await reader.readexactly(length)
                writer.write(response)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    headers = {"Content-Type": "application/json", "X-Workspace-Id": "/src/p"}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_decisions"}}).encode()

    def connections_() -> Any:
        return owner_http.OwnerConnections(headers=headers, host="127.0.0.1", port=port, **extra)

    results: dict[str, list[float]] = {"warm": [], "new connection": []}
    async with server:
        warm = connections_()
        for _ in range(50):
            await warm.post("/mcp", body, {})
        for _ in range(calls):
            started = time.process_time()
            await warm.post("/mcp", body, {})
            results["warm"].append((time.process_time() - started) * 1000)
        await warm.aclose()
        for _ in range(connections):
            cold = connections_()
            started = time.process_time()
            await cold.post("/mcp", body, {})
            results["new connection"].append((time.process_time() - started) * 1000)
            await cold.aclose()
    print(f"owner proof in this code: {'yes' if proving else 'no'}")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=500, help="measured calls per path (default 500)")
    parser.add_argument("--warmup", type=int, default=50, help="unmeasured calls per path first (default 50)")
    parser.add_argument("--rounds", type=int, default=5, help="turns the paths take (default 5)")
    parser.add_argument("--client", action="store_true", help="the forwarding client alone, in this process")
    options = parser.parse_args()
    if options.client:
        import statistics

        measured = anyio.run(measure_client, options.calls * 10, options.calls)
        print("| forwarding client, CPU ms per POST | p50 | mean | p95 |")
        print("|---|---|---|---|")
        for name, values in measured.items():
            row = f"{percentile(values, 50):.3f} | {statistics.fmean(values):.3f} | {percentile(values, 95):.3f}"
            print(f"| {name} ({len(values)}) | {row} |")
        return
    results, cpu = anyio.run(measure, options.calls, options.warmup, max(1, options.rounds))
    print(
        f"| path ({options.calls} calls of get_decisions(limit=10)) | p50 ms | p95 ms "
        "| front end CPU ms/call | owner CPU ms/call |"
    )
    print("|---|---|---|---|---|")
    for name, times in results.items():
        front = f"{cpu[name]['front']:.2f}" if "front end" in name else "-"
        print(
            f"| {name} | {percentile(times, 50):.2f} | {percentile(times, 95):.2f} | {front} "
            f"| {cpu[name]['owner']:.2f} |"
        )
    direct = percentile(results["direct to the owner (HTTP)"], 50)
    for front in ("stdio", "HTTP"):
        overhead = percentile(results[f"{front} front end, forwarded"], 50) - direct
        print(f"\nforwarding overhead, {front} front end: {overhead:+.2f} ms p50 over direct-to-owner")


if __name__ == "__main__":
    main()
