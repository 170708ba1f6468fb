"""Shared helpers of the bench scripts: percentiles, /proc readings, machine description, tables."""

from __future__ import annotations

import contextlib
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / "results"


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100]."""
    if not values:
        return float("nan")
    data = sorted(values)
    if len(data) == 1:
        return data[0]
    pos = (len(data) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def median(values: Iterable[float]) -> float:
    vals = [v for v in values if v == v]  # drop NaN
    return statistics.median(vals) if vals else float("nan")


# -- /proc ---------------------------------------------------------------------------------------


def proc_status_kb(pid: int, field: str) -> int | None:
    """A `VmXXX:` field of /proc/<pid>/status in kB (VmHWM = peak RSS, VmRSS = current RSS)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def child_pids(pid: int) -> set[int]:
    out: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out.update(int(x) for x in f.read().split())
        except (OSError, ValueError):
            continue
    return out


def descendants(pid: int) -> list[int]:
    found: list[int] = []
    todo = list(child_pids(pid))
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(child_pids(p))
    return found


def cpu_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine from /proc/stat."""
    with open("/proc/stat") as f:
        parts = [int(x) for x in f.readline().split()[1:]]
    idle = parts[3] + (parts[4] if len(parts) > 4 else 0)
    total = sum(parts[:8])
    return total - idle, total


def process_jiffies(pid: int | str) -> int:
    """utime + stime of one process (all its threads), 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, ValueError, IndexError):
        return 0


class OtherLoad:
    """CPU used by processes other than this one and `pids`, in cores, between start() and stop()."""

    def __init__(self) -> None:
        self.pids: list[int] = []
        self._busy = self._ours = 0
        self._t = 0.0

    def start(self, pids: list[int]) -> None:
        import time

        self.pids = pids
        self._busy, _ = cpu_jiffies()
        self._ours = process_jiffies("self") + sum(process_jiffies(p) for p in pids)
        self._t = time.monotonic()

    def stop(self) -> float:
        import time

        busy, _ = cpu_jiffies()
        ours = process_jiffies("self") + sum(process_jiffies(p) for p in self.pids)
        hz = os.sysconf("SC_CLK_TCK")
        seconds = max(time.monotonic() - self._t, 1e-6)
        return max(0.0, ((busy - self._busy) - (ours - self._ours)) / hz / seconds)


def wait_until_quiet(threshold: float = 0.3, max_wait: float = 120.0, sample: float = 1.0) -> float:
    """Wait (at most `max_wait` s) until the rest of the machine uses under `threshold` cores.

    Returns the last sample's load of other processes, in cores.
    """
    import time

    deadline = time.monotonic() + max_wait
    while True:
        probe = OtherLoad()
        probe.start([])
        time.sleep(sample)
        load = probe.stop()
        if load < threshold or time.monotonic() >= deadline:
            return load
        time.sleep(1.0)


def describe_exception(exc: BaseException) -> str:
    """The leaf exceptions of an exception group, else the exception itself, on one line."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(describe_exception(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


def open_fds(pid: int | str = "self") -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


# -- machine ---------------------------------------------------------------------------------------


def machine_description() -> dict[str, str]:
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = proc_meminfo_gib()
    try:
        import importlib.metadata as md

        mcp_version = md.version("mcp")
        homeport_version = md.version("homeport")
    except Exception:
        mcp_version = homeport_version = "?"
    try:
        commit = (
            subprocess.run(
                ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
            or "?"
        )
    except (OSError, subprocess.SubprocessError):
        commit = "?"
    return {
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "memory": f"{mem:.1f} GiB" if mem else "?",
        "os": f"{platform.system()} {platform.release()}",
        "python": f"{platform.python_implementation()} {platform.python_version()} ({sys.executable})",
        "mcp": mcp_version,
        "homeport": f"{homeport_version} (commit {commit})",
    }


def proc_meminfo_gib() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 1024 / 1024
    except (OSError, ValueError):
        return None
    return None


def machine_markdown(desc: dict[str, str]) -> str:
    return "\n".join(f"- **{k}**: {v}" for k, v in desc.items())


# -- tables ------------------------------------------------------------------------------------------


def md_table(header: Sequence[str], rows: Iterable[Sequence[str]], align: str | None = None) -> str:
    rows = [list(map(str, r)) for r in rows]
    align = align or ("l" + "r" * (len(header) - 1))
    sep = ["---:" if a == "r" else ":---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def latency_table(results: dict[str, list[float]], what: str) -> str:
    """p50 and p95 in ms of each path's timed calls (`timed_calls`), as a Markdown table."""
    rows = [(name, f"{percentile(t, 50):.2f}", f"{percentile(t, 95):.2f}") for name, t in results.items()]
    return md_table([f"path ({what})", "p50 ms", "p95 ms"], rows)


def fmt(value: float | None, digits: int = 2) -> str:
    if value is None or value != value:
        return "–"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.{digits}f}"


def ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or a != a or b != b or b == 0:
        return "–"
    r = a / b
    return f"{r:.2f}×" if r < 100 else f"{r:.0f}×"


async def timed_calls(call: Callable[[], Awaitable[Any]], calls: int, warmup: int) -> list[float]:
    """Milliseconds of each of `calls` sequential calls after `warmup` unmeasured ones; an error result stops it."""
    for _ in range(warmup):
        await call()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        result = await call()
        times.append((time.perf_counter() - start) * 1000)
        assert not result.is_error, result
    return times


def environ_without_homeport(state_dir: Path) -> dict[str, str]:
    """This process's environment minus every HOMEPORT_ setting, with a registry of the run's own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPORT_")}
    env["HOMEPORT_STATE_DIR"] = str(state_dir)
    return env


def process_cpu_seconds(pid: int) -> float:
    """utime + stime of one process in seconds (`process_jiffies`), 0.0 when it is gone."""
    return process_jiffies(pid) / os.sysconf("SC_CLK_TCK")


def wait_healthy(url: str, process: subprocess.Popen[bytes] | None = None, log: Path | None = None) -> None:
    """Until `url`/healthz answers 200 (at most 60 s, or until `process` exits); else exit naming `log`."""
    import httpx2

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (process is None or process.poll() is None):
        with contextlib.suppress(httpx2.TransportError):
            if httpx2.get(url + "/healthz").status_code == 200:
                return
        time.sleep(0.1)
    raise SystemExit(f"{url} did not start" + (f":\n{log.read_text()}" if log is not None else ""))


@contextlib.asynccontextmanager
async def http_mcp_client(url: str, headers: dict[str, str], mode: str = "auto") -> AsyncIterator[Any]:
    """An SDK client of the MCP endpoint at `url`/mcp sending `headers` on every request.

    `mode="auto"` speaks 2026-07-28 (a stateless request per call); `"legacy"` opens a 2025-era session.
    """
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http,
        Client(streamable_http_client(url + "/mcp", http_client=http), mode=mode) as client,
    ):
        yield client
