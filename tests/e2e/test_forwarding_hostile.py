"""Forwarding with a hostile peer (issue 22): an impostor on a dead owner's port or socket, a state
directory another user can write, a FIFO for the registry. Real processes: `serve --http --own`,
`homeport daemon`, a stdio `homeport serve`, the shell; the impostor runs as another local user.

What must hold whatever the peer does: no call content (arguments, token, client info) reaches
anyone who has not proved to be the registered owner, and no write is acknowledged that is not stored.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

from homeport.registry.liveness import healthz, pid_running

from ._hostile import OtherUser, hostile_listener, other_user
from ._support import CLI_BOOT, clean_env, error_text, make_project, ok, serve_args, stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(180)]

DEADLINE_S = 30.0
# What a user's file holds that must never leave the machine's owner (a stand-in for ~/.ssh/id_ed25519).
USER_SECRET = "TOPSECRET-ed25519-a1b2c3"


@pytest.fixture(scope="module")
def hostile_user() -> Iterator[OtherUser]:
    with other_user() as user:
        yield user


@dataclass
class RunningOwner:
    process: subprocess.Popen[bytes]
    endpoint: str

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def port(self) -> int:
        return int(self.endpoint.rsplit(":", 1)[1])


def _registered(state: Path, pid: int) -> str | None:
    with contextlib.suppress(OSError, ValueError):
        for entry in json.loads((state / "registry.json").read_text(encoding="utf-8"))["owners"].values():
            if entry["pid"] == pid:
                return str(entry["endpoint"])
    return None


def start_owner(state: Path, root: Path, log: Path) -> RunningOwner:
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, *serve_args("--http", "--own", "--allow-root", str(root))],
            cwd=root,
            env=clean_env(HOMEPORT_STATE_DIR=str(state)),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text(errors="replace")
        endpoint = _registered(state, process.pid)
        if endpoint:
            with contextlib.suppress(httpx2.TransportError, ValueError):
                if httpx2.get(endpoint + "/healthz", timeout=1.0).json().get("pid") == process.pid:
                    return RunningOwner(process, endpoint)
        time.sleep(0.1)
    process.kill()
    raise AssertionError(f"owner of {root} not serving:\n{log.read_text(errors='replace')}")


def kill(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=DEADLINE_S)


def front_end(state: Path, project: Path, *args: str):
    """A stdio `homeport serve` started in `project`."""
    return stdio_client(cwd=project, mode="auto", args=args, env=clean_env(HOMEPORT_STATE_DIR=str(state)))


def stored_decisions(project: Path) -> list[str]:
    """The summaries in the project's own store, read from its file (not through any server)."""
    path = project / ".homeport" / "homeport.db"
    if not path.exists():
        return []
    with contextlib.closing(sqlite3.connect(path)) as db:
        return [row[0] for row in db.execute("SELECT summary FROM decisions ORDER BY id")]


def assert_acknowledged_only_if_stored(result, project: Path, summary: str) -> None:
    if result.is_error:
        assert result.structured_content["error"]["code"] in ("owner_unproven", "owner_unavailable"), error_text(result)
        assert summary not in stored_decisions(project)
    else:
        assert summary in stored_decisions(project), f"acknowledged but not stored: {ok(result)}"


# -- finding 2: an impostor on a dead owner's port


async def test_an_impostor_on_a_dead_owners_port_receives_nothing_and_the_call_is_served_here(
    tmp_path, hostile_user
) -> None:
    state, project = tmp_path / "state", make_project(tmp_path / "src" / "p")
    owner = start_owner(state, project, tmp_path / "owner.log")
    kill(owner.process)
    with hostile_listener(owner.port, owner.pid, hostile_user) as impostor:
        assert httpx2.get(owner.endpoint + "/healthz").json()["pid"] == owner.pid  # the pid is public
        async with front_end(state, project) as client:
            result = await client.call_tool("log_decision", {"summary": "canary"})
            where = ok(await client.call_tool("where_am_i", {}))
        assert impostor.heard("canary") == []
        assert [r for r in impostor.seen() if r["method"] == "POST"] == []
    written = ok(result)
    assert written["workspace"]["root"] == str(project) and "served_by" not in written["workspace"]
    assert stored_decisions(project) == ["canary"]
    assert where["served_by"]["process"] == "this"
    assert _registered(state, owner.pid) is None  # pruned: it could not prove it is the owner


async def test_an_impostor_that_takes_the_port_of_an_owner_a_front_end_was_using_gets_nothing(
    tmp_path, hostile_user
) -> None:
    state, project = tmp_path / "state", make_project(tmp_path / "src" / "p")
    owner = start_owner(state, project, tmp_path / "owner.log")
    try:
        async with front_end(state, project) as client:
            first = ok(await client.call_tool("log_decision", {"summary": "before"}))
            assert first["workspace"]["served_by"]["pid"] == owner.pid  # forwarded: the owner answered
            kill(owner.process)
            with hostile_listener(owner.port, owner.pid, hostile_user) as impostor:
                results = [await client.call_tool("log_decision", {"summary": f"canary {n}"}) for n in range(2)]
                assert impostor.heard("canary") == [] and impostor.heard("before") == []
                assert [r for r in impostor.seen() if r["method"] == "POST"] == []
    finally:
        if owner.process.poll() is None:
            kill(owner.process)
    for n, result in enumerate(results):
        assert_acknowledged_only_if_stored(result, project, f"canary {n}")
    # The impostor cannot prove it is the owner: nothing was sent, so the call is served here at once,
    # and so is the next one.
    assert not results[0].is_error and not results[1].is_error, [error_text(r) for r in results if r.is_error]
    assert _registered(state, owner.pid) is None


def test_the_shell_sends_nothing_to_an_impostor_on_a_dead_owners_port_and_stores_the_write_here(
    tmp_path, hostile_user
) -> None:
    state, project = tmp_path / "state", make_project(tmp_path / "src" / "p")
    owner = start_owner(state, project, tmp_path / "owner.log")
    kill(owner.process)
    with hostile_listener(owner.port, owner.pid, hostile_user) as impostor:
        done = subprocess.run(
            [sys.executable, "-c", CLI_BOOT, "decisions", "add", "canary"],
            cwd=project,
            env=clean_env(HOMEPORT_STATE_DIR=str(state)),
            capture_output=True,
            text=True,
            timeout=DEADLINE_S,
        )
        assert impostor.heard("canary") == [] and [r for r in impostor.seen() if r["method"] == "POST"] == []
    assert done.returncode == 0, done.stderr
    assert stored_decisions(project) == ["canary"]


# -- finding 2, the daemon: an impostor on a dead daemon's socket


async def test_an_impostor_on_a_dead_daemons_socket_receives_nothing_and_the_call_is_served_here(tmp_path) -> None:
    state = Path(os.path.realpath(tmp_path)) / "st"  # short: a socket path is limited to ~107 bytes
    project = make_project(Path(os.path.realpath(tmp_path)) / "src" / "app")
    env = clean_env(HOMEPORT_STATE_DIR=str(state))
    started = subprocess.run(
        [sys.executable, "-c", CLI_BOOT, "daemon", "start", "--allow-root", str(project.parent)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S + 10,
    )
    assert started.returncode == 0, started.stderr
    sock = state / "daemon" / "homeport.sock"
    daemon_pid = healthz(f"unix:{sock}")["pid"]
    os.kill(daemon_pid, signal.SIGKILL)
    deadline = time.monotonic() + DEADLINE_S
    while pid_running(daemon_pid):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    sock.unlink()  # the impostor is a process of the same user here: only it can enter the 0700 directory
    with hostile_listener(str(sock), daemon_pid, OtherUser(None, None, None)) as impostor:
        assert healthz(f"unix:{sock}") is not None  # answers, with the dead daemon's pid
        async with front_end(state, project) as client:
            result = await client.call_tool("log_decision", {"summary": "canary"})
            where = ok(await client.call_tool("where_am_i", {}))
        assert impostor.heard("canary") == []
        assert [r for r in impostor.seen() if r["method"] == "POST"] == []
    ok(result)
    assert stored_decisions(project) == ["canary"]
    assert where["served_by"]["process"] == "this"


# -- finding 3: a state directory that another user can write


def _plant(state: Path, project: Path, endpoint: str, pid: int, user: OtherUser, token_file: Path) -> None:
    """What a planter who can write `state` leaves there: an entry sending `project`'s calls to itself,
    and a `token_ref` naming a file of the victim's."""
    entry = {"endpoint": endpoint, "pid": pid, "started_at": time.time(), "version": "0.1.0"}
    registry = {
        "version": 1,
        "owners": {str(project): {**entry, "token_ref": str(token_file)}},
        "ports": {str(project): int(endpoint.rsplit(":", 1)[1])},
    }
    path = state / "registry.json"
    path.write_text(json.dumps(registry), encoding="utf-8")
    if user.uid is not None:
        os.chown(path, user.uid, user.gid)


def _hostile_state(tmp_path: Path, how: str, user: OtherUser) -> Path:
    if how == "owned by another user":
        if user.uid is None:
            pytest.skip("needs root to create another user")
        state = tmp_path / "state"
        state.mkdir(mode=0o755)
        os.chown(state, user.uid, user.gid)
    elif how == "writable by everyone":
        state = tmp_path / "state"
        state.mkdir()
        state.chmod(0o777)
    else:  # its parent is writable by everyone (and not sticky): the state directory can be swapped
        shared = tmp_path / "shared"
        shared.mkdir()
        shared.chmod(0o777)
        state = shared / "state"
        state.mkdir(mode=0o700)
    return state


@pytest.mark.parametrize("how", ["owned by another user", "writable by everyone", "parent writable by everyone"])
async def test_a_registry_in_a_state_directory_another_user_can_write_sends_nothing_anywhere(
    tmp_path, hostile_user, how
) -> None:
    tmp_path.chmod(0o755)  # the other user may reach what is planted for it
    project = make_project(tmp_path / "src" / "p")
    state = _hostile_state(tmp_path, how, hostile_user)
    secret = tmp_path / "id_ed25519"
    secret.write_text(USER_SECRET + "\n", encoding="utf-8")
    secret.chmod(0o600)
    port = _free_port()
    with hostile_listener(port, None, hostile_user) as planter:
        _plant(state, project, f"http://127.0.0.1:{port}", planter.pid, hostile_user, secret)
        async with front_end(state, project, "--agent", "ada") as client:
            result = await client.call_tool("log_decision", {"summary": "canary"})
        assert planter.heard(USER_SECRET) == []
        assert planter.heard("canary") == []
        assert [r for r in planter.seen() if r["method"] == "POST"] == []
    ok(result)
    assert stored_decisions(project) == ["canary"]


def test_homeport_status_refuses_a_state_directory_another_user_can_write_and_names_the_fix(
    tmp_path, hostile_user
) -> None:
    state = _hostile_state(tmp_path, "writable by everyone", hostile_user)
    done = subprocess.run(
        [sys.executable, "-c", CLI_BOOT, "status", "--state-dir", str(state)],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert done.returncode != 0
    assert str(state) in done.stderr and "chmod" in done.stderr


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# -- finding 21: a FIFO in place of registry.json


def test_a_fifo_in_place_of_the_registry_does_not_hang_a_command(tmp_path) -> None:
    state, project = tmp_path / "state", make_project(tmp_path / "src" / "p")
    state.mkdir(mode=0o700)
    os.mkfifo(state / "registry.json")
    done = subprocess.run(
        [sys.executable, "-c", CLI_BOOT, "decisions", "add", "x"],
        cwd=project,
        env=clean_env(HOMEPORT_STATE_DIR=str(state)),
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,  # it finishes in about a second; before the fix it hung for good
    )
    assert done.returncode == 0, done.stderr
    assert stored_decisions(project) == ["x"]
    assert "registry.json" in done.stderr


def test_daemon_stop_signals_nothing_that_does_not_prove_it_is_the_daemon(tmp_path) -> None:
    state = Path(os.path.realpath(tmp_path)) / "st"
    (state / "daemon").mkdir(parents=True, mode=0o700)
    sock = state / "daemon" / "homeport.sock"
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        # A process of the user's on the daemon's socket, naming another of the user's processes as the daemon.
        with hostile_listener(str(sock), bystander.pid, OtherUser(None, None, None)):
            done = subprocess.run(
                [sys.executable, "-c", CLI_BOOT, "daemon", "stop"],
                env=clean_env(HOMEPORT_STATE_DIR=str(state)),
                capture_output=True,
                text=True,
                timeout=DEADLINE_S,
            )
        assert bystander.poll() is None, "daemon stop killed a process on the word of whatever answered the socket"
        assert done.returncode != 0 and "prove" in done.stderr
    finally:
        bystander.kill()
        bystander.wait()
