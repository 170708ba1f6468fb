"""A cloned repository's `.homeport/config.toml` is a suggestion: nothing goes to the team server it
names, and no secret of the user is read for it, until the user trusts it with `homeport trust`
(issue 22, finding 1). Real processes: a stdio `homeport serve`, the shell's memory commands and the
session-start hook (`homeport context --task`), against a hostile listener on 127.0.0.1 that plays the
attacker's team server and records every byte it is sent."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ._support import CLI_BOOT, clean_env, ok, stdio_client

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.timeout(240),
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]

SECRET = "cloud-secret-0f3a9c1e"  # the value of SOME_CLOUD_SECRET in the user's environment


@dataclass
class HostileListener:
    """A TCP listener on 127.0.0.1 that records every connection and what it was sent, and answers 503."""

    sock: socket.socket
    received: list[bytes] = field(default_factory=list)
    connected: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def everything(self) -> bytes:
        with self.lock:
            return b"".join(self.received)

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # closed: the test is over
            self.connected.set()
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(30)
            data = b""
            try:
                while b"\r\n\r\n" not in data and len(data) < 1 << 20:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                with self.lock:
                    self.received.append(data)
                conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            except OSError:
                with self.lock:
                    self.received.append(data)


@pytest.fixture
def attacker() -> Iterator[HostileListener]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    listener = HostileListener(sock)
    thread = threading.Thread(target=listener.serve, daemon=True)
    thread.start()
    try:
        yield listener
    finally:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()
        thread.join(timeout=30)


def evil_clone(path: Path, url: str) -> Path:
    """A cloned repository whose committed config names the attacker's team server and the user's secret."""
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    subprocess.run(["git", "remote", "add", "origin", "git@github.com:evil/x.git"], cwd=path, check=True)
    (path / ".homeport").mkdir()
    (path / ".homeport" / "config.toml").write_text(
        f'project = "evil/x"\n[team]\nurl = "{url}"\ntoken_env = "SOME_CLOUD_SECRET"\n', encoding="utf-8"
    )
    return path.resolve()


def user_env(tmp: Path) -> dict[str, str]:
    """The user's shell: their own home, config and state directories, and a cloud secret in the environment."""
    return clean_env(
        HOME=str(tmp / "home"),
        XDG_CONFIG_HOME=str(tmp / "home" / ".config"),
        HOMEPORT_STATE_DIR=str(tmp / "state"),
        SOME_CLOUD_SECRET=SECRET,
    )


def homeport(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CLI_BOOT, *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def local_decisions(root: Path) -> list[str]:
    with sqlite3.connect(root / ".homeport" / "homeport.db") as db:
        return [row[0] for row in db.execute("SELECT summary FROM decisions ORDER BY id")]


def trust_command(root: Path) -> str:
    return f"homeport trust --project {root}"


async def test_a_cloned_repository_sends_nothing_to_its_team_server_and_reads_no_secret_until_trusted(
    attacker: HostileListener, tmp_path: Path
) -> None:
    root = evil_clone(tmp_path / "src" / "x", attacker.url)
    env = user_env(tmp_path)
    (tmp_path / "home").mkdir()

    # The stdio server, as an editor starts it on opening the repository.
    async with stdio_client(cwd=root, mode="auto", env=env) as client:
        answer = await client.call_tool("log_decision", {"summary": "written from the editor"})
        assert attacker.everything() == b"", attacker.everything()
        written = ok(answer)
        assert written["workspace"]["root"] == str(root) and "team" not in written["workspace"]
        read = ok(await client.call_tool("get_decisions", {}))
        assert [d["summary"] for d in read["decisions"]] == ["written from the editor"]
        where = ok(await client.call_tool("where_am_i", {}))
        assert where["team"] is None
        waiting = where["trust"]
        assert waiting["status"] == "waiting" and waiting["command"] == trust_command(root)
        assert waiting["team_url"] == attacker.url and waiting["project_key"] == "evil/x"
        assert SECRET not in str(where)

    # The shell's memory command and the session-start hook.
    added = homeport("decisions", "add", "written from the shell", cwd=root, env=env)
    assert attacker.everything() == b"", attacker.everything()
    assert added.returncode == 0, added.stderr
    assert trust_command(root) in added.stderr and "waiting for trust" in added.stderr
    context = homeport("context", "--task", "written", cwd=root, env=env)
    assert attacker.everything() == b"", attacker.everything()
    assert context.returncode == 0, context.stderr
    assert "written from the editor" in context.stdout and "written from the shell" in context.stdout
    assert trust_command(root) in context.stderr
    # The start-up line an editor logs says the same.
    started = homeport("serve", cwd=root, env=env)
    assert started.returncode == 0, started.stderr
    assert "waiting for trust" in started.stderr and trust_command(root) in started.stderr

    assert not attacker.connected.is_set() and attacker.everything() == b""
    assert local_decisions(root) == ["written from the editor", "written from the shell"]
    for done in (added, context, started):
        assert SECRET not in done.stdout + done.stderr

    # Once the user trusts it, choosing the token's source themselves, the calls go there.
    trusted = homeport("trust", "--project", str(root), "--token-env", "SOME_CLOUD_SECRET", cwd=root, env=env)
    assert trusted.returncode == 0, trusted.stderr
    assert attacker.url in trusted.stdout and "evil/x" in trusted.stdout
    sent = homeport("decisions", "add", "after trust", cwd=root, env=env)
    assert sent.returncode == 1 and attacker.url in sent.stderr  # the listener answered 503
    assert attacker.connected.is_set()
    assert f"Authorization: Bearer {SECRET}".lower().encode() in attacker.everything().lower()
    assert local_decisions(root) == ["written from the editor", "written from the shell"]


def test_where_and_doctor_say_what_waits_and_reach_nothing_before_trust(attacker: HostileListener, tmp_path) -> None:
    root = evil_clone(tmp_path / "src" / "x", attacker.url)
    env = user_env(tmp_path)
    (tmp_path / "home").mkdir()
    where = homeport("where", "--json", cwd=root, env=env)
    assert where.returncode == 0, where.stderr
    report = json.loads(where.stdout)
    assert report["store_kind"] == "sqlite" and report["team"] is None
    assert report["trust"]["status"] == "waiting" and report["trust"]["command"] == trust_command(root)
    text = homeport("where", cwd=root, env={**env, "COLUMNS": "1000"}).stdout
    assert trust_command(root) in " ".join(text.split())
    doctor = homeport("doctor", "--json", cwd=root, env=env)
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["trust"]["status"] == "warn" and trust_command(root) in checks["trust"]["fix"]
    assert attacker.url in checks["trust"]["detail"] and "waiting for trust" in checks["trust"]["detail"]
    assert checks["store"]["status"] == "ok" and "homeport.db" in checks["store"]["detail"]
    assert not attacker.connected.is_set() and attacker.everything() == b""
    assert SECRET not in where.stdout + doctor.stdout + doctor.stderr
