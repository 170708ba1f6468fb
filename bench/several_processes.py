"""One 2026-07-28 client against one `homeport serve --http` process, then spread at random over three.

All processes share one PostgreSQL store (a fresh database, dropped after). The client logs
decisions through a `use_workspace` handle (no roots round trip), then reads with a path argument
while declaring roots (one `InputRequiredResult` round trip per call, whose retry may land on
another process). Sequential calls; calls/s and p50/p95 latency per phase.

    python bench/several_processes.py --postgres postgresql://postgres@127.0.0.1:5432/test --calls 300
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
from _common import percentile
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ListRootsResult, Root

BANNER = re.compile(r"^homeport \S+:(\d+): MCP at ", re.M)


class RandomProcess(httpx2.AsyncBaseTransport):
    def __init__(self, ports: list[int]) -> None:
        self.ports, self.rng, self.inner = ports, random.Random(7), httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = self.rng.choice(self.ports)
        request.url = request.url.copy_with(port=port)
        request.headers["host"] = f"127.0.0.1:{port}"
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


@contextlib.contextmanager
def servers(count: int, url: str, base: Path) -> Iterator[list[int]]:
    procs, ports = [], []
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPORT_")}
    try:
        for n in range(count):
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            log = base / f"serve{n}.log"
            args = ["serve", "--http", "--port", str(port), "--store", url, "--allow-root", str(base)]
            args += ["--data-dir", str(base / f"data{n}")]
            with log.open("wb") as sink:
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-c", "from homeport.cli import main; main()", *args],
                        cwd=base,
                        env={**env, "HOMEPORT_STATE_DIR": str(base / f"state{n}")},
                        stdout=sink,
                        stderr=subprocess.STDOUT,
                    )
                )
            end = time.monotonic() + 30
            while not BANNER.search(log.read_text(errors="replace")):
                if time.monotonic() > end or procs[-1].poll() is not None:
                    raise RuntimeError(log.read_text(errors="replace"))
                time.sleep(0.05)
            ports.append(port)
        yield ports
    finally:
        for p in procs:
            p.terminate()
            p.wait(15)


async def phase(ports: list[int], project: Path, calls: int) -> dict[str, Any]:
    async def roots(_ctx: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=project.parent.as_uri())])

    out: dict[str, Any] = {}
    async with (
        httpx2.AsyncClient(transport=RandomProcess(ports), timeout=60) as http,
        Client(
            streamable_http_client(f"http://127.0.0.1:{ports[0]}/mcp", http_client=http), list_roots_callback=roots
        ) as client,
    ):
        handle = (await client.call_tool("use_workspace", {"workspace": str(project)})).structured_content
        assert handle is not None
        for name, tool, args in (
            ("write via handle", "log_decision", lambda n: {"workspace": handle["handle"], "summary": f"d {n}"}),
            ("read via path + roots round trip", "get_decisions", lambda n: {"workspace": str(project)}),
        ):
            took = []
            for n in range(calls):
                start = time.perf_counter()
                result = await client.call_tool(tool, args(n))
                took.append(time.perf_counter() - start)
                assert not result.is_error, result.content
            out[name] = {
                "calls/s": calls / sum(took),
                "p50 ms": percentile(took, 50) * 1e3,
                "p95 ms": percentile(took, 95) * 1e3,
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    import psycopg

    name = f"homeport_bench_{uuid.uuid4().hex[:10]}"
    admin = psycopg.connect(args.postgres, autocommit=True)
    admin.execute(f'CREATE DATABASE "{name}"')
    url = args.postgres.rsplit("/", 1)[0] + f"/{name}"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(os.path.realpath(tmp))
            with servers(3, url, base) as ports:
                for label, used in (("1 process", ports[:1]), ("3 processes, random", ports)):
                    project = base / label.split()[0]
                    (project / ".git").mkdir(parents=True)
                    for step, figures in anyio.run(phase, used, project, args.calls).items():
                        cells = ", ".join(f"{k} {v:.1f}" for k, v in figures.items())
                        print(f"{label:22} {step:34} {cells}")
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


if __name__ == "__main__":
    main()
