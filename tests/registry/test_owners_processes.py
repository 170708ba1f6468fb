"""`homeport serve --http --own` and `homeport status` as real processes sharing one state directory."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from homeport.registry.model import FIRST_PORT, LAST_PORT

from homeport.registry import port_is_free

CLI_BOOT = "from homeport.cli import main; main()"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

DEADLINE_S = 30.0


class Owner:
    def __init__(self, process: subprocess.Popen[bytes], log: Path) -> None:
        self.process = process
        self.log = log

    @property
    def pid(self) -> int:
        return self.process.pid

    def text(self) -> str:
        return self.log.read_text(errors="replace")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPORT_") and k != "CLAUDE_PROJECT_DIR"}
    return {**env, **extra}


def serve_args(*extra: str) -> list[str]:
    return ["-c", CLI_BOOT, "serve", *extra]


def make_project(path: Path) -> Path:
    (path / ".git").mkdir(parents=True)
    return path.resolve()


def start(state: Path, project: Path, log: Path, *extra: str) -> Owner:
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, *serve_args("--http", "--own", "--allow-root", str(project), *extra)],
            cwd=project,
            env=clean_env(HOMEPORT_STATE_DIR=str(state)),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    return Owner(process, log)


def status(state: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CLI_BOOT, "status", "--json", "--state-dir", str(state)],
        capture_output=True,
        text=True,
        check=True,
        env=clean_env(),
        timeout=DEADLINE_S,
    )
    return json.loads(out.stdout)


def registry(state: Path) -> dict:
    return json.loads((state / "registry.json").read_text(encoding="utf-8"))


def wait_serving(owner: Owner, state: Path) -> int:
    """The port `owner` registered, once its /healthz answers with its pid."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if owner.process.poll() is not None:
            raise AssertionError(f"owner exited with {owner.process.returncode}:\n{owner.text()}")
        with contextlib.suppress(OSError, ValueError, KeyError, httpx2.TransportError):
            entries = [o for o in registry(state)["owners"].values() if o["pid"] == owner.pid]
            if entries:
                health = httpx2.get(entries[0]["endpoint"] + "/healthz", timeout=1.0).json()
                if health["pid"] == owner.pid:
                    return int(entries[0]["endpoint"].rsplit(":", 1)[1])
        time.sleep(0.1)
    raise AssertionError(f"owner not serving after {DEADLINE_S}s:\n{owner.text()}")


def stop(owner: Owner, sig: int = signal.SIGTERM) -> None:
    if owner.process.poll() is None:
        owner.process.send_signal(sig)
    owner.process.wait(timeout=DEADLINE_S)


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "api")


@pytest.fixture
def owners() -> Iterator[list[Owner]]:
    started: list[Owner] = []
    yield started
    for owner in started:
        if owner.process.poll() is None:
            owner.process.kill()
            owner.process.wait(timeout=DEADLINE_S)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_restarted_owner_gets_its_port_back_and_a_clean_stop_leaves_no_entry(state, project, tmp_path, owners, sig):
    first = start(state, project, tmp_path / "1.log")
    owners.append(first)
    port = wait_serving(first, state)
    assert FIRST_PORT <= port <= LAST_PORT
    assert [i["owns"] for i in status(state)["instances"]] == [[str(project)]]
    stop(first, sig)
    assert registry(state)["owners"] == {}
    assert registry(state)["ports"] == {str(project): port}
    # Owners' ports lie below the kernel's ephemeral range, so no outgoing connection takes the port meanwhile;
    # an owner of another test running beside this one may (then moving on is right, and another test proves it).
    if not port_is_free(port):
        pytest.skip(f"port {port} was taken by another listener on this machine meanwhile")
    second = start(state, project, tmp_path / "2.log")
    owners.append(second)
    assert wait_serving(second, state) == port


def test_an_owner_whose_port_is_taken_moves_to_the_next_free_one_and_remembers_it(state, project, tmp_path, owners):
    first = start(state, project, tmp_path / "1.log")
    owners.append(first)
    port = wait_serving(first, state)
    stop(first)
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the old server's TIME_WAIT is no owner
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        second = start(state, project, tmp_path / "2.log")
        owners.append(second)
        moved = wait_serving(second, state)
    assert moved != port and FIRST_PORT <= moved <= LAST_PORT
    assert registry(state)["ports"] == {str(project): moved}


def test_the_entry_of_a_sigkilled_owner_is_pruned_on_read(state, project, tmp_path, owners):
    owner = start(state, project, tmp_path / "1.log")
    owners.append(owner)
    wait_serving(owner, state)
    stop(owner, signal.SIGKILL)
    assert str(project) in registry(state)["owners"]  # nobody cleaned up...
    report = status(state)
    assert [(i["pid"], i["live"]) for i in report["instances"]] == [(owner.pid, False)]
    assert registry(state)["owners"] == {}  # ...until the first read
    assert status(state)["instances"] == []


def test_of_two_owners_racing_for_one_project_exactly_one_wins_and_the_loser_names_it(state, project, tmp_path, owners):
    racers = [start(state, project, tmp_path / f"{n}.log") for n in range(2)]
    owners.extend(racers)
    deadline = time.monotonic() + DEADLINE_S
    while all(r.process.poll() is None for r in racers) and time.monotonic() < deadline:
        time.sleep(0.05)
    losers = [r for r in racers if r.process.poll() is not None]
    assert len(losers) == 1, [r.text() for r in racers]
    (loser,) = losers
    (winner,) = [r for r in racers if r is not loser]
    wait_serving(winner, state)
    assert loser.process.returncode != 0
    assert f"owned by pid {winner.pid}" in loser.text() and "--take-over" in loser.text()
    assert [i["pid"] for i in status(state)["instances"]] == [winner.pid]


def test_take_over_replaces_a_live_owner(state, project, tmp_path, owners):
    first = start(state, project, tmp_path / "1.log")
    owners.append(first)
    wait_serving(first, state)
    second = start(state, project, tmp_path / "2.log", "--take-over")
    owners.append(second)
    wait_serving(second, state)
    assert {o["pid"] for o in registry(state)["owners"].values()} == {second.pid}
    stop(first)  # the replaced owner's clean exit must not remove the new owner's entry
    assert {o["pid"] for o in registry(state)["owners"].values()} == {second.pid}


def test_a_corrupt_registry_file_does_not_stop_an_owner_or_status(state, project, tmp_path, owners):
    state.mkdir(parents=True)
    (state / "registry.json").write_bytes(b'{"version": 1, "owners": {"/x": {"endpo\x00\xff')
    owner = start(state, project, tmp_path / "1.log")
    owners.append(owner)
    wait_serving(owner, state)
    assert "rebuilt" in owner.text()
    assert [i["pid"] for i in status(state)["instances"]] == [owner.pid]
