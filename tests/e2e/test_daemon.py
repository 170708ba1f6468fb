"""`homeport daemon start|stop|status` with real processes: the daemon on its unix socket, a stdio
`homeport serve` forwarding to it, and falling back to serving locally once it is stopped."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from homeport.registry.liveness import healthz, pid_running

from ._support import CLI_BOOT, clean_env, make_project, ok, stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(180)]

DEADLINE_S = 30.0


def homeport(state: Path, *args: str, cwd: Path, boot: str = CLI_BOOT) -> subprocess.CompletedProcess[str]:
    """`homeport ARGS` in `cwd` with the registry in `state`, run by the Python program `boot`."""
    return subprocess.run(
        [sys.executable, "-c", boot, *args],
        cwd=cwd,
        env=clean_env(HOMEPORT_STATE_DIR=str(state)),
        capture_output=True,
        text=True,
        timeout=DEADLINE_S + 10,
        check=False,
    )


def daemon_status(state: Path, cwd: Path) -> tuple[int, dict[str, object]]:
    done = homeport(state, "daemon", "status", "--json", cwd=cwd)
    return done.returncode, json.loads(done.stdout)


def wait_gone(pid: int) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while pid_running(pid):
        assert time.monotonic() < deadline, f"pid {pid} still running"
        time.sleep(0.05)


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    """(state dir, allowed root, a project in it); the daemon is stopped (killed if need be) afterwards."""
    # A short state path: a unix socket's path is limited to about 107 bytes.
    state = Path(os.path.realpath(tmp_path)) / "st"
    base = Path(os.path.realpath(tmp_path)) / "src"
    project = make_project(base / "app")
    yield state, base, project
    answer = healthz(f"unix:{state / 'daemon' / 'homeport.sock'}")
    if answer is not None and isinstance(answer.get("pid"), int):
        os.kill(answer["pid"], signal.SIGKILL)


def test_start_status_and_stop(setup) -> None:
    state, base, _project = setup
    started = homeport(state, "daemon", "start", "--allow-root", str(base), cwd=base)
    assert started.returncode == 0, started.stderr
    code, report = daemon_status(state, base)
    assert code == 0 and report["running"] is True
    pid = report["pid"]
    assert isinstance(pid, int) and f"pid {pid}" in started.stdout
    sock = state / "daemon" / "homeport.sock"
    assert report["socket"] == str(sock) and report["calls"] == 0 and report["errors"] == 0
    assert stat.S_ISSOCK(sock.stat().st_mode) and stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700
    # Registered as the owner of its allowed root, at its socket.
    listed = json.loads(homeport(state, "status", "--json", cwd=base).stdout)
    assert [(i["pid"], i["endpoint"], i["owns"], i["live"]) for i in listed["instances"]] == [
        (pid, f"unix:{sock}", [str(base)], True)
    ]

    stopped = homeport(state, "daemon", "stop", cwd=base)
    assert stopped.returncode == 0, stopped.stderr
    assert not pid_running(pid)
    code, report = daemon_status(state, base)
    assert code == 3 and report["running"] is False
    assert not sock.exists()
    assert json.loads((state / "registry.json").read_text())["owners"] == {}


def test_a_second_start_is_refused_while_the_daemon_runs(setup) -> None:
    state, base, _project = setup
    assert homeport(state, "daemon", "start", "--allow-root", str(base), cwd=base).returncode == 0
    first = daemon_status(state, base)[1]["pid"]
    again = homeport(state, "daemon", "start", "--allow-root", str(base), cwd=base)
    assert again.returncode == 1 and "already running" in again.stderr and f"pid {first}" in again.stderr
    assert daemon_status(state, base)[1]["pid"] == first


def test_a_stale_socket_from_a_killed_daemon_does_not_block_a_new_start(setup) -> None:
    state, base, _project = setup
    assert homeport(state, "daemon", "start", "--allow-root", str(base), cwd=base).returncode == 0
    killed = daemon_status(state, base)[1]["pid"]
    assert isinstance(killed, int)
    os.kill(killed, signal.SIGKILL)
    wait_gone(killed)
    assert (state / "daemon" / "homeport.sock").exists()  # left behind
    assert daemon_status(state, base)[0] == 3
    restarted = homeport(state, "daemon", "start", "--allow-root", str(base), cwd=base)
    assert restarted.returncode == 0, restarted.stderr
    code, report = daemon_status(state, base)
    assert code == 0 and report["pid"] not in (killed, None)
    owners = json.loads(homeport(state, "status", "--json", cwd=base).stdout)["instances"]
    assert [i["pid"] for i in owners] == [report["pid"]]


async def test_a_stdio_server_forwards_to_the_daemon_and_serves_locally_after_it_stops(setup) -> None:
    state, base, project = setup
    assert homeport(state, "daemon", "start", "--allow-root", str(base), cwd=base).returncode == 0
    pid = daemon_status(state, base)[1]["pid"]
    env = clean_env(HOMEPORT_STATE_DIR=str(state))
    async with stdio_client(cwd=base, mode="auto", args=("--allow-root", str(base)), env=env) as client:
        root = str(project)
        written = ok(await client.call_tool("log_decision", {"workspace": root, "summary": "via daemon"}))
        # The caller chose it by argument, and the result says so, and that the daemon served it (finding 12).
        assert written["workspace"]["root"] == root and written["workspace"]["source"] == "argument"
        assert written["workspace"]["served_by"]["pid"] == pid
        where = ok(await client.call_tool("where_am_i", {"workspace": root}))
        sock = state / "daemon" / "homeport.sock"
        assert where["served_by"] == {"process": "owner", "pid": pid, "endpoint": f"unix:{sock}", "owns": str(base)}
        code, report = daemon_status(state, base)
        assert code == 0 and report["calls"] == 1 and report["errors"] == 0 and report["open_stores"] == 1

        assert homeport(state, "daemon", "stop", cwd=base).returncode == 0
        after = ok(await client.call_tool("get_decisions", {"workspace": root}))
        assert after["workspace"]["source"] == "argument"  # served here, from the same store
        assert [d["summary"] for d in after["decisions"]] == ["via daemon"]
        where = ok(await client.call_tool("where_am_i", {"workspace": root}))
        assert where["served_by"]["process"] == "this"


async def test_a_stdio_server_started_with_no_daemon_serves_locally_while_the_daemon_runs(setup) -> None:
    state, base, project = setup
    assert homeport(state, "daemon", "start", "--allow-root", str(base), cwd=base).returncode == 0
    env = clean_env(HOMEPORT_STATE_DIR=str(state))
    args = ("--allow-root", str(base), "--no-daemon")
    async with stdio_client(cwd=base, mode="auto", args=args, env=env) as client:
        root = str(project)
        written = ok(await client.call_tool("log_decision", {"workspace": root, "summary": "here"}))
        assert written["workspace"]["source"] == "argument"
        where = ok(await client.call_tool("where_am_i", {"workspace": root}))
        assert where["served_by"]["process"] == "this"
    assert daemon_status(state, base)[1]["calls"] == 0


async def test_the_daemon_has_no_current_workspace_each_request_names_its_own(setup) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    state, base, project = setup
    other = make_project(base / "other")
    assert homeport(state, "daemon", "start", "--allow-root", str(base), cwd=project).returncode == 0
    transport = httpx2.AsyncHTTPTransport(uds=str(state / "daemon" / "homeport.sock"))
    async with (
        httpx2.AsyncClient(transport=transport, timeout=30) as http,
        Client(streamable_http_client("http://localhost/mcp", http_client=http)) as client,
    ):
        # Started from `project`, yet a call naming no workspace is not served there.
        unnamed = await client.call_tool("log_decision", {"summary": "where?"})
        assert unnamed.is_error
        assert not (project / ".homeport").exists()
        for root in (project, other):
            written = ok(await client.call_tool("log_decision", {"workspace": str(root), "summary": root.name}))
            assert written["workspace"]["root"] == str(root)


# Runs a shell command and prints, last, every module it loaded (also when the command exits).
_LOADED_BOOT = "import atexit, sys\natexit.register(lambda: print('\\n' + ' '.join(sorted(sys.modules))))\n" + CLI_BOOT


def test_a_shell_command_sent_to_the_daemon_loads_none_of_the_mcp_sdk(setup) -> None:
    """The daemon exists to make shell commands fast: their forwarding speaks the wire format itself,
    so the MCP SDK (its models alone take longer to import than the call takes) stays unloaded."""
    state, base, project = setup
    assert homeport(state, "daemon", "start", "--allow-root", str(base), cwd=base).returncode == 0
    done = homeport(state, "decisions", "add", "sent to the daemon", "--json", cwd=project, boot=_LOADED_BOOT)
    assert done.returncode == 0, done.stderr
    *printed, modules = done.stdout.rstrip("\n").split("\n")
    assert json.loads("\n".join(printed))["workspace"]["served_by"]["endpoint"].startswith("unix:")  # the daemon
    assert daemon_status(state, base)[1]["calls"] == 1
    loaded = modules.split()
    assert [m for m in loaded if m.split(".")[0] in ("mcp", "mcp_types", "httpx", "httpx2", "starlette")] == []


def test_shell_commands_use_the_daemon_and_work_locally_when_it_is_stopped_or_refused(setup) -> None:
    state, base, project = setup
    assert homeport(state, "daemon", "start", "--allow-root", str(base), cwd=base).returncode == 0
    added = homeport(state, "decisions", "add", "from the shell", "--json", cwd=project)
    assert added.returncode == 0, added.stderr
    # The daemon wrote it and counted the call; the result names the source the shell used, not the header.
    assert json.loads(added.stdout)["workspace"]["source"] == "cwd"
    assert json.loads(added.stdout)["workspace"]["served_by"]["endpoint"].startswith("unix:")
    assert daemon_status(state, base)[1]["calls"] == 1
    # An error from the daemon is the same one line and exit status as a local one.
    missing = homeport(state, "decisions", "delete", "424242", cwd=project)
    assert missing.returncode == 1 and "424242" in missing.stderr and "Traceback" not in missing.stderr
    # --no-daemon: this process opens the store itself.
    local = homeport(state, "decisions", "list", "--json", "--no-daemon", cwd=project)
    assert local.returncode == 0, local.stderr
    assert "served_by" not in json.loads(local.stdout)["workspace"]
    assert [d["summary"] for d in json.loads(local.stdout)["decisions"]] == ["from the shell"]
    assert daemon_status(state, base)[1]["calls"] == 2

    assert homeport(state, "daemon", "stop", cwd=base).returncode == 0
    after = homeport(state, "decisions", "list", "--json", cwd=project)
    assert after.returncode == 0, after.stderr
    assert "served_by" not in json.loads(after.stdout)["workspace"]
    assert [d["summary"] for d in json.loads(after.stdout)["decisions"]] == ["from the shell"]


def test_homeport_ui_forwards_its_calls_to_the_daemon_that_owns_the_project(setup) -> None:
    import re
    import threading

    import httpx2

    from homeport import __version__

    state, base, project = setup
    assert homeport(state, "daemon", "start", "--allow-root", str(base), cwd=base).returncode == 0
    added = homeport(state, "decisions", "add", "Use WAL", "--json", cwd=project)
    assert added.returncode == 0 and "served_by" in json.loads(added.stdout)["workspace"], added.stderr
    decision = json.loads(added.stdout)["id"]
    before = daemon_status(state, base)[1]["calls"]
    assert isinstance(before, int)
    ui = subprocess.Popen(
        [sys.executable, "-c", CLI_BOOT, "ui", "--no-browser", "--port", "0"],
        cwd=project,
        env=clean_env(HOMEPORT_STATE_DIR=str(state)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(ui.stdout.readline() if ui.stdout else ""), daemon=True)
        reader.start()
        reader.join(timeout=DEADLINE_S)
        found = re.match(r"homeport ui: (http://127\.0\.0\.1:\d+)/ui/", line[0] if line else "")
        assert found, (line, ui.poll())
        with httpx2.Client(base_url=found.group(1), timeout=30) as http:
            page = http.get("/ui/w", params={"ws": str(project)})
            assert page.status_code == 200 and "Use WAL" in page.text, page.text
            assert daemon_status(state, base)[1]["calls"] > before  # the page's reads went to the daemon
            item = http.get("/ui/item", params={"ws": str(project), "type": "decision", "id": decision})
            csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', item.text)
            assert item.status_code == 200 and csrf, item.text
            form = {"ws": str(project), "type": "decision", "id": str(decision), "csrf": csrf.group(1)}
            saved = http.post("/ui/edit", data={**form, "summary": "Use SQLite in WAL mode", "confirm": "1"})
            assert saved.status_code == 303, saved.text
            history = http.get(saved.headers["location"]).text.split('id="history"')[1].split("</section>")[0]
            # The daemon recorded the caller's own client, not the forwarding process.
            changed, created = history.split("<li>")[1:3]
            assert "homeport-dashboard" in changed and "update_decision" in changed, history
            assert f"homeport {__version__}" in created and "log_decision" in created, history  # the shell
            assert "homeport-forwarder" not in history
        # The daemon served the correction: a shell command it answers sees it.
        listed = homeport(state, "decisions", "list", "--json", cwd=project)
        assert "served_by" in json.loads(listed.stdout)["workspace"]
        # What a person sees: the source they used, not the header the daemon was sent (finding 12).
        shown = homeport(state, "decisions", "list", cwd=project).stdout.splitlines()[0]
        assert shown == f"workspace {project} (from the current directory)", shown
        assert [d["summary"] for d in json.loads(listed.stdout)["decisions"]] == ["Use SQLite in WAL mode"]
        assert daemon_status(state, base)[1]["errors"] == 0
    finally:
        ui.terminate()
        ui.communicate(timeout=60)
