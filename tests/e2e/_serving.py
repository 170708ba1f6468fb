"""A `homeport serve --http` child process started with any flags, found by the banner it prints."""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ._support import clean_env, free_port, serve_args

BANNER = re.compile(r"^homeport \S+:(\d+): MCP at ", re.M)


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    log: Path
    port: int

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout=timeout)


def run_to_exit(args: list[str], *, cwd: Path | str, env: Mapping[str, str] | None = None, timeout: float = 120):
    """Run `homeport serve ARGS` expecting it to stop by itself (a refusal); returns the finished process."""
    return subprocess.run(
        [sys.executable, *serve_args(*args)],
        cwd=cwd,
        env=dict(env) if env is not None else clean_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@contextlib.contextmanager
def serving(
    args: list[str], *, cwd: Path, log: Path, env: Mapping[str, str] | None = None, deadline: float = 120
) -> Iterator[Served]:
    """`homeport serve --http ARGS` (on a free port unless ARGS name one), up once its banner is on stderr;
    stopped (SIGTERM, then SIGKILL) after."""
    port = [] if "--port" in args else ["--port", str(free_port())]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, *serve_args("--http", *port, *args)],
            cwd=cwd,
            env=dict(env) if env is not None else clean_env(),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        end = time.monotonic() + deadline
        while True:
            found = BANNER.search(log.read_text(errors="replace"))
            if found:
                break
            if process.poll() is not None or time.monotonic() > end:
                raise RuntimeError(f"no banner (exit {process.poll()}):\n{log.read_text(errors='replace')}")
            time.sleep(0.05)
        yield Served(process, log, int(found.group(1)))
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
