"""`homeport serve` over stdio as a raw pipe: lines the SDK cannot parse are answered, EOF and
Ctrl-C stop it at once, and its one start-up line on stderr says where calls will land."""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from ._support import clean_env, make_project, serve_args

pytestmark = pytest.mark.slow

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}


class Pipe:
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    def send(self, line: str | bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((line.encode() if isinstance(line, str) else line) + b"\n")
        self.process.stdin.flush()

    def receive(self, within: float = 60) -> dict[str, Any]:
        """The next line: as soon as it comes (the first waits for the server's start-up, slow on a busy machine)."""
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], within)
        assert ready, f"no answer within {within}s"
        return json.loads(self.process.stdout.readline())

    def stderr(self) -> str:
        assert self.process.stderr is not None
        return self.process.stderr.read().decode(errors="replace")


@contextmanager
def stdio(cwd: Path | str, *args: str, env: dict[str, str] | None = None, handshake: bool = True) -> Iterator[Pipe]:
    process = subprocess.Popen(
        [sys.executable, *serve_args(*args)],
        cwd=cwd,
        env=env if env is not None else clean_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    pipe = Pipe(process)
    try:
        if handshake:
            pipe.send(json.dumps(INIT))
            assert pipe.receive()["id"] == 1
            pipe.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        yield pipe
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()


@pytest.mark.parametrize(
    ("line", "code", "request_id"),
    [
        ("[" * 100_000, -32700, None),
        ('{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":"\\ud800"}}', -32700, 7),
        ('{"jsonrpc":"2.0","id":"a","method":"ping","params":{"x":"\\udfff\\ud800"}}', -32700, "a"),
        ('{"jsonrpc":"2.0","id":8,"method":"tools/list"', -32700, None),
        (b'{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":"\xff"}}', -32700, 9),
        ('{"jsonrpc":"2.0","id":10}', -32600, 10),
        ("[1, 2]", -32600, None),
    ],
    ids=["deep-nesting", "lone-surrogate", "reversed-pair", "truncated", "invalid-utf8", "no-method", "batch"],
)
def test_a_line_the_sdk_cannot_parse_is_answered_and_the_server_keeps_serving(
    tmp_path: Path, line: str | bytes, code: int, request_id: object
) -> None:
    with stdio(make_project(tmp_path / "p")) as pipe:
        pipe.send(line)
        answer = pipe.receive()
        pipe.send(json.dumps({"jsonrpc": "2.0", "id": 99, "method": "ping"}))
        after = pipe.receive()
    assert answer["error"]["code"] == code, answer
    assert answer["id"] == request_id
    assert after == {"jsonrpc": "2.0", "id": 99, "result": {}}


def test_a_broken_notification_is_not_answered(tmp_path: Path) -> None:
    with stdio(make_project(tmp_path / "p")) as pipe:
        pipe.send('{"jsonrpc":"2.0","method":"notifications/x","params":{"x":"\\ud800"}}')
        pipe.send(json.dumps({"jsonrpc": "2.0", "id": 99, "method": "ping"}))
        assert pipe.receive()["id"] == 99


def test_the_server_exits_promptly_when_stdin_closes_even_while_it_waits_on_the_client(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p")
    with stdio(project, handshake=False) as pipe:
        init = {**INIT, "params": {**INIT["params"], "capabilities": {"roots": {"listChanged": True}}}}
        pipe.send(json.dumps(init))
        pipe.receive()
        pipe.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "where_am_i", "arguments": {}}}
        pipe.send(json.dumps(call))
        assert pipe.receive()["method"] == "roots/list"  # the server now waits for an answer that never comes
        started = time.monotonic()
        assert pipe.process.stdin is not None
        pipe.process.stdin.close()
        code = pipe.process.wait(timeout=60)
        took = time.monotonic() - started
    assert code == 0
    assert took < 4.5  # not the 5 s it would wait for the roots (on a busy machine, exiting itself can take seconds)


def test_ctrl_c_stops_a_stdio_server_cleanly(tmp_path: Path) -> None:
    with stdio(make_project(tmp_path / "p")) as pipe:
        pipe.process.send_signal(signal.SIGINT)
        code = pipe.process.wait(timeout=60)
        err = pipe.stderr()
    assert code == 0, err
    assert "Traceback" not in err


def _first_line(cwd: Path | str, *args: str, env: dict[str, str] | None = None) -> str:
    with stdio(cwd, *args, env=env) as pipe:
        assert pipe.process.stdin is not None
        pipe.process.stdin.close()
        pipe.process.wait(timeout=60)
        return pipe.stderr()


def test_the_start_up_line_names_the_default_workspace_and_where_it_came_from(tmp_path: Path) -> None:
    hinted = make_project(tmp_path / "hinted")
    configured = make_project(tmp_path / "configured")
    cwd = make_project(tmp_path / "cwd")
    assert _first_line(cwd, env=clean_env(CLAUDE_PROJECT_DIR=str(hinted))) == (
        f"homeport: stdio; default workspace {hinted} (from CLAUDE_PROJECT_DIR) unless the client sends roots\n"
    )
    assert _first_line(cwd, "--workspace", str(configured)) == (
        f"homeport: stdio; default workspace {configured} (from --workspace/HOMEPORT_WORKSPACE)\n"
    )
    assert _first_line(cwd) == (
        f"homeport: stdio; default workspace {cwd} (from the current directory) unless the client sends roots\n"
    )


def test_the_start_up_line_says_when_there_is_no_default_and_why(tmp_path: Path) -> None:
    line = _first_line("/")
    assert line.startswith("homeport: stdio; no default workspace (the current directory / is the filesystem root)")
    assert "--workspace" in line
    assert line.count("\n") == 1


def test_quiet_prints_nothing_at_start(tmp_path: Path) -> None:
    assert _first_line(make_project(tmp_path / "p"), "--quiet") == ""
    assert _first_line(make_project(tmp_path / "q"), "-q") == ""
