"""The registry file: lock, atomic replace, mode 0600, liveness by endpoint, corrupt files, races."""

from __future__ import annotations

import json
import logging
import os
import stat
import threading
import time
from pathlib import Path

import pytest

from homeport.errors import WorkspaceOwnedError
from homeport.registry import InstanceRegistry, Liveness, Owner

pytestmark = pytest.mark.timeout(60)


def registry(tmp_path: Path, live: set[int] | None = None) -> InstanceRegistry:
    """A registry whose liveness is a set of pids (None: every entry is live)."""
    return InstanceRegistry(tmp_path / "state", is_live=lambda o: live is None or o.pid in live)


def own(reg: InstanceRegistry, roots, pid, **kw):
    kw.setdefault("requested_port", None)
    kw.setdefault("is_free", lambda p: True)
    return reg.own(roots, host="127.0.0.1", version="0.1.0", pid=pid, **kw)


def test_the_first_owner_gets_28001_and_the_file_is_private(tmp_path):
    reg = registry(tmp_path)
    owner = own(reg, ["/src/api"], 10)
    assert owner.endpoint == "http://127.0.0.1:28001"
    assert stat.S_IMODE(os.stat(reg.path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(reg.directory).st_mode) == 0o700
    assert reg.owner_of("/src/api/lib") == ("/src/api", owner)


def test_a_second_owner_of_the_same_root_is_refused_naming_the_first(tmp_path):
    reg = registry(tmp_path)
    own(reg, ["/src/api"], 10)
    with pytest.raises(WorkspaceOwnedError) as refused:
        own(reg, ["/src/api"], 11)
    assert refused.value.code == "workspace_owned"
    assert "pid 10" in refused.value.message and "http://127.0.0.1:28001" in refused.value.message


def test_take_over_replaces_the_owner_on_another_port(tmp_path):
    reg = registry(tmp_path)
    own(reg, ["/src/api"], 10)
    second = own(reg, ["/src/api"], 11, take_over=True)
    assert second.port == 28002  # the first still listens on 28001
    assert reg.owner_of("/src/api") == ("/src/api", second)


def test_a_restarted_root_gets_its_port_back_and_another_root_does_not_take_it(tmp_path):
    live = {10, 11}
    reg = registry(tmp_path, live)
    own(reg, ["/src/api"], 10)
    own(reg, ["/src/web"], 11)
    reg.release(10)
    assert own(reg, ["/src/new"], 12).port == 28003  # 28001 is promised to /src/api
    live.add(13)
    assert own(reg, ["/src/api"], 13).port == 28001


def test_a_project_that_remembers_a_port_from_before_the_range_moved_keeps_it(tmp_path):
    # Owners took ports from 50001 until the range moved below the kernels' ephemeral ranges.
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "registry.json").write_text(json.dumps({"version": 1, "owners": {}, "ports": {"/src/api": 50001}}))
    (state / "registry.json").chmod(0o600)
    reg = registry(tmp_path, {10, 11})
    assert own(reg, ["/src/api"], 10).port == 50001
    assert own(reg, ["/src/web"], 11).port == 28001


def test_a_dead_owner_is_pruned_on_read_and_its_port_remembered(tmp_path):
    live = {10}
    reg = registry(tmp_path, live)
    own(reg, ["/src/api"], 10)
    live.clear()
    state = reg.read()
    assert state.owners == {}
    assert state.ports == {"/src/api": 28001}
    assert not (reg.instances / "10.json").exists()


def test_a_corrupt_registry_is_rebuilt_from_the_live_instances_with_a_warning(tmp_path, caplog):
    live = {10, 11}
    reg = registry(tmp_path, live)
    first = own(reg, ["/src/api"], 10)
    own(reg, ["/src/web"], 11)
    live.discard(11)
    reg.path.write_text('{"version": 1, "owners": {"/src/api": {"endpo', encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="homeport.registry"):
        state = reg.read()
    assert state.owners == {"/src/api": first}
    assert "rebuilt" in caplog.text
    json.loads(reg.path.read_text(encoding="utf-8"))  # written back whole


def test_binary_garbage_in_the_registry_never_crashes(tmp_path):
    reg = registry(tmp_path)
    reg.directory.mkdir(parents=True)
    reg.path.write_bytes(b"\xff\xfe\x00garbage")
    assert reg.read().owners == {}


def test_of_many_threads_racing_for_one_root_exactly_one_wins(tmp_path):
    reg = registry(tmp_path)
    results: dict[int, object] = {}
    barrier = threading.Barrier(8)

    def race(pid: int) -> None:
        barrier.wait()
        try:
            results[pid] = own(InstanceRegistry(reg.directory, is_live=lambda o: True), ["/src/api"], pid)
        except WorkspaceOwnedError as exc:
            results[pid] = exc

    threads = [threading.Thread(target=race, args=(pid,)) for pid in range(100, 108)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    winners = [r for r in results.values() if isinstance(r, Owner)]
    assert len(results) == 8 and len(winners) == 1
    assert reg.owner_of("/src/api") == ("/src/api", winners[0])


def test_liveness_needs_the_endpoint_to_answer_with_the_same_pid(tmp_path):
    # Our own pid is running, but nothing answers on the endpoint: live only during the start-up grace.
    owner = Owner("http://127.0.0.1:9", os.getpid(), time.time(), "0.1.0")
    assert Liveness(timeout=0.2)(owner)
    assert not Liveness(timeout=0.2, startup_grace=0)(owner)
    gone = Owner("http://127.0.0.1:9", 2**22 + 12345, time.time(), "0.1.0")
    assert not Liveness(timeout=0.2)(gone)


def test_an_owner_that_answered_once_and_then_stops_answering_is_not_live_even_while_young(healthz):
    # A killed owner's pid can still run for a moment while the kernel tears it down; the start-up
    # grace is for an owner not listening yet, not for one this process has already seen answer.
    owner = Owner(healthz.url, os.getpid(), time.time(), "0.1.0")
    liveness = Liveness(timeout=10)  # generous for the answer; the closed port below is refused at once
    assert liveness(owner)
    healthz.stop()
    assert not liveness(owner)  # it answered before: silence now means it is gone
    assert Liveness(timeout=10)(owner)  # never seen answering: still within its start-up grace


def test_a_killed_process_not_yet_reaped_is_not_running():
    import signal
    import subprocess
    import sys

    from homeport.registry import pid_running

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert pid_running(child.pid)
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while pid_running(child.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not pid_running(child.pid)  # a zombie until the wait below
    finally:
        child.kill()
        child.wait()


def test_an_owner_secret_is_private_never_named_by_the_entry_and_gone_with_its_owner(tmp_path):
    live = {10, 11}
    reg = registry(tmp_path, live)
    first, second = reg.mint_owner_secret(10), reg.mint_owner_secret(11)
    assert first == reg.secrets / "10.key"
    assert stat.S_IMODE(os.stat(first).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(first.parent).st_mode) == 0o700
    assert first.read_text().strip() != second.read_text().strip()
    assert reg.owner_secret(10) == first.read_bytes().strip()
    own(reg, ["/src/api"], 10, auth=True)
    own(reg, ["/src/web"], 11)
    assert reg.owner_of("/src/api")[1].auth and not reg.owner_of("/src/web")[1].auth
    assert str(first) not in reg.path.read_text() and first.read_text().strip() not in reg.path.read_text()
    reg.release(10)  # a clean exit
    assert not first.exists()
    live.discard(11)  # a crash: pruned on the next read, its secret with it
    assert reg.owner_of("/src/web") is None
    assert not second.exists()
