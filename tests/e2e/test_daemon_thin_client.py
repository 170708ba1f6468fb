"""The shell's memory commands through the daemon's command runner (`homeport.cli._thin`): the same
output and exit status as in their own process, none of the CLI imported by the caller, and nothing of
a command (its arguments, its environment) sent to a socket that is not the daemon's."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from homeport.registry.liveness import healthz

from ._hostile import DEADLINE_S, OtherUser, other_user
from ._support import CLI_BOOT, clean_env, make_project

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

# The console script's own path (the thin client first) and the CLI alone (what ran before it).
THIN = CLI_BOOT
FULL = "from homeport.cli.main import main; main()"
# The caller's modules, printed on a file descriptor of their own when it exits.
_LOADED = (
    "import atexit, os, sys\n"
    "atexit.register(lambda: os.write(int(os.environ['LOADED_FD']), ' '.join(sorted(sys.modules)).encode()))\n"
    + CLI_BOOT
)
HEAVY = ("click", "rich", "sqlalchemy", "pydantic", "mcp", "anyio", "alembic", "homeport.core", "homeport.store")


def run(state: Path, boot: str, *args: str, cwd: Path, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", boot, *args],
        cwd=cwd,
        env=clean_env(HOMEPORT_STATE_DIR=str(state), **env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S + 10,
        check=False,
    )


def loaded_by(
    state: Path, *args: str, cwd: Path, prelude: str = ""
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run `homeport ARGS` as the console script does (after the Python `prelude`); what it printed and
    the modules it imported."""
    read, write = os.pipe()
    try:
        done = subprocess.run(
            [sys.executable, "-c", prelude + _LOADED, *args],
            cwd=cwd,
            env=clean_env(HOMEPORT_STATE_DIR=str(state), LOADED_FD=str(write)),
            pass_fds=(write,),
            capture_output=True,
            text=True,
            timeout=DEADLINE_S + 10,
            check=False,
        )
        os.close(write)
        write = -1
        with os.fdopen(read, "rb") as pipe:
            read = -1
            modules = set(pipe.read().decode().split())
    finally:
        for fd in (read, write):
            if fd >= 0:
                os.close(fd)
    return done, modules


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def wait_for(check: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(state dir, project) with the daemon running and its command runner listening; killed afterwards."""
    state = Path(os.path.realpath(tmp_path)) / "st"
    project = make_project(Path(os.path.realpath(tmp_path)) / "src" / "app")
    started = run(state, FULL, "daemon", "start", "--allow-root", str(project.parent), cwd=project)
    assert started.returncode == 0, started.stderr
    wait_for((state / "daemon" / "commands.sock").exists, "the command runner did not start")
    yield state, project
    answer = healthz(f"unix:{state / 'daemon' / 'homeport.sock'}")
    if answer is not None and isinstance(answer.get("pid"), int):
        os.kill(answer["pid"], signal.SIGKILL)


def test_a_memory_command_through_the_runner_imports_nothing_of_the_cli_or_the_server(daemon) -> None:
    state, project = daemon
    assert run(state, FULL, "decisions", "add", "Use WAL", "--tag", "db", cwd=project).returncode == 0
    done, modules = loaded_by(state, "decisions", "list", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "Use WAL" in done.stdout
    assert heavy(modules) == []
    # The very same command without the daemon's runner imports them: the check above can fail.
    done, modules = loaded_by(state, "decisions", "list", "--no-daemon", cwd=project)
    assert done.returncode == 0 and "Use WAL" in done.stdout
    assert {"click", "sqlalchemy"} <= set(heavy(modules))


COMMANDS = [
    ("decisions", "list"),
    ("decisions", "list", "--json"),
    ("decisions", "get", "1", "--json"),
    ("decisions", "get", "99"),  # an error: one line and exit 1
    ("decisions", "lst"),  # a usage error: exit 2
    ("decisions", "list", "--limit", "x"),
    ("decisions", "--help"),
    ("search", "WAL"),
    ("search", "WAL", "--json"),
    ("progress", "list"),
    ("patterns", "list"),
    ("context", "show", "product"),
    ("ready",),
    ("history", "decision", "1"),
    ("schema",),
]


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_command_prints_and_exits_the_same_through_the_runner_as_in_its_own_process(daemon, args) -> None:
    state, project = daemon
    if not (project / ".homeport").exists():
        first = run(state, FULL, "decisions", "add", "Use WAL", "--rationale", "readers never block", cwd=project)
        assert first.returncode == 0, first.stderr
    if args[0] == "search":  # the daemon embeds new items in the background: compare once it has
        wait_for(lambda: _embedded(state, project), "the daemon did not embed the decision")
    thin, full = run(state, THIN, *args, cwd=project), run(state, FULL, *args, cwd=project)
    assert (thin.returncode, thin.stdout, thin.stderr) == (full.returncode, full.stdout, full.stderr)


def _embedded(state: Path, project: Path) -> bool:
    found = run(state, FULL, "search", "WAL", "--json", cwd=project)
    return found.returncode == 0 and not json.loads(found.stdout).get("not_yet_embedded")


def test_text_output_is_the_same_with_the_daemon_and_without_it(daemon) -> None:
    state, project = daemon
    assert run(state, FULL, "decisions", "add", "Use WAL", "--tag", "db", cwd=project).returncode == 0
    for args in (("decisions", "list"), ("progress", "list"), ("decisions", "get", "7")):
        on = run(state, THIN, *args, cwd=project)
        off = run(state, THIN, *args, cwd=project, HOMEPORT_NO_DAEMON="1")
        assert (on.returncode, on.stdout, on.stderr) == (off.returncode, off.stdout, off.stderr), args


def test_the_command_gets_the_callers_stdin_directory_environment_and_umask(daemon) -> None:
    state, project = daemon
    items = json.dumps([{"summary": "from stdin"}, {"summary": "also from stdin"}])
    (project / "sub").mkdir()
    done = run(state, THIN, "batch", "decision", "-", "--json", cwd=project / "sub", stdin=items)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["workspace"]["root"] == str(project)  # found from the caller's directory
    listed = run(state, THIN, "decisions", "list", "--json", cwd=Path("/"), HOMEPORT_WORKSPACE=str(project))
    assert [d["summary"] for d in json.loads(listed.stdout)["decisions"]] == ["also from stdin", "from stdin"]
    # A project the daemon does not own is served in the runner's child, which writes the export itself.
    elsewhere = make_project(project.parent.parent / "elsewhere")
    out = elsewhere / "exported"
    done, modules = loaded_by(
        state, "export", "--output", str(out), cwd=elsewhere, prelude="import os; os.umask(0o077)\n"
    )
    assert done.returncode == 0, done.stderr
    assert heavy(modules) == []  # through the runner...
    assert out.is_dir() and oct(out.stat().st_mode & 0o777) == oct(0o700)  # ...with the caller's umask


def _children(pids: list[int] | int) -> list[int]:
    parents = {pids} if isinstance(pids, int) else set(pids)
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid in parents:
                found.append(int(entry.name))
    return found


def pid_of_runner(state: Path) -> list[int]:
    """The command runner: the daemon's child."""
    return _children(healthz(f"unix:{state / 'daemon' / 'homeport.sock'}")["pid"])


def test_a_command_interrupted_with_ctrl_c_is_interrupted_in_the_runner(daemon) -> None:
    state, project = daemon
    # `batch -` waits on stdin, which stays open: only the interrupt ends it.
    process = subprocess.Popen(
        [sys.executable, "-c", THIN, "batch", "decision", "-"],
        cwd=project,
        env=clean_env(HOMEPORT_STATE_DIR=str(state)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(lambda: _children(pid_of_runner(state)), "the command did not start in the runner")
    process.send_signal(signal.SIGINT)
    # Its stdin stays open until it has exited: an end of input would end `batch -` too.
    assert process.wait(timeout=DEADLINE_S) == 1
    assert process.stderr is not None and "Aborted!" in process.stderr.read()
    for pipe in (process.stdin, process.stdout, process.stderr):
        assert pipe is not None
        pipe.close()


# --------------------------------------------------------------------------------------------
# a socket that is not the daemon's runner

IMPOSTOR = r"""
import json, os, socket, sys

path, pid = sys.argv[1], int(sys.argv[2])
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(path)
server.listen(8)
print("READY", flush=True)
while True:
    conn, _ = server.accept()
    conn.settimeout(2.0)
    got = b""
    try:
        got += conn.recv(65536)
        fake = {"pid": pid, "proof": "0" * 64, "version": sys.argv[3], "package": sys.argv[4]}
        conn.sendall(json.dumps(fake).encode() + b"\n")
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            got += chunk
    except OSError:
        pass
    print(json.dumps(got.decode("utf-8", "replace")), flush=True)
    conn.close()
"""


def impostor(path: Path, pid: int, user: OtherUser) -> subprocess.Popen[str]:
    import homeport

    python = shutil.which("python3", path="/usr/bin:/bin:/usr/local/bin") or "python3"
    package = os.path.dirname(os.path.abspath(homeport.__file__))
    args = user.command(python, "-I", "-S", "-c", IMPOSTOR, str(path), str(pid), homeport.__version__, package)
    process = subprocess.Popen(
        args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "READY", process.stderr
    return process


def heard(process: subprocess.Popen[str]) -> str:
    process.kill()
    out, _ = process.communicate(timeout=DEADLINE_S)
    return out


def _take_the_runners_place(state: Path, bound: Path) -> None:
    """Move the impostor's socket to where the runner listens (the runner's own socket goes)."""
    runner = state / "daemon" / "commands.sock"
    runner.unlink()
    os.rename(bound, runner)
    runner.chmod(0o600)  # as private as the runner's: the checks that follow are the ones under test


def test_a_socket_of_another_user_in_the_runners_place_is_not_used(daemon) -> None:
    state, project = daemon
    with other_user() as user, tempfile.TemporaryDirectory(dir="/tmp") as scratch:
        if user.uid is None:
            pytest.skip("needs root to make another user")
        drop = Path(scratch)  # where the other user can bind a socket (on the file system of the state dir)
        drop.chmod(0o777)
        daemon_pid = healthz(f"unix:{state / 'daemon' / 'homeport.sock'}")["pid"]
        process = impostor(drop / "s", daemon_pid, user)
        try:
            _take_the_runners_place(state, drop / "s")
            for owner in ("theirs", "ours"):  # ours: the file chowned to us, the kernel still names its owner
                if owner == "ours":
                    os.chown(state / "daemon" / "commands.sock", os.geteuid(), os.getegid())
                done, modules = loaded_by(state, "decisions", "add", "marker-SECRET-arg", cwd=project)
                assert done.returncode == 0, done.stderr  # run in its own process instead
                assert "click" in modules
        finally:
            got = heard(process)
        assert "marker-SECRET-arg" not in got and "HOMEPORT_STATE_DIR" not in got


def test_a_socket_of_this_user_that_cannot_prove_itself_gets_no_command(daemon, tmp_path) -> None:
    state, project = daemon
    daemon_pid = healthz(f"unix:{state / 'daemon' / 'homeport.sock'}")["pid"]
    process = impostor(Path(os.path.realpath(tmp_path)) / "s", daemon_pid, OtherUser(None, None, None))
    try:
        _take_the_runners_place(state, Path(os.path.realpath(tmp_path)) / "s")
        done, modules = loaded_by(state, "decisions", "add", "marker-SECRET-arg", cwd=project)
        assert done.returncode == 0, done.stderr
        assert "click" in modules
    finally:
        got = heard(process)
    assert "nonce" in got  # it was asked to prove itself...
    assert "marker-SECRET-arg" not in got and "HOMEPORT_STATE_DIR" not in got  # ...and told nothing more


def test_the_runner_is_not_used_from_a_directory_other_users_can_write(daemon) -> None:
    state, project = daemon
    directory = state / "daemon"
    directory.chmod(0o733)
    try:
        _done, modules = loaded_by(state, "decisions", "list", cwd=project)
        assert "click" in modules  # not sent: run (or refused) in its own process
    finally:
        directory.chmod(0o700)


def test_the_runner_stops_with_the_daemon(daemon) -> None:
    state, project = daemon
    pid = healthz(f"unix:{state / 'daemon' / 'homeport.sock'}")["pid"]
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not (state / "daemon" / "commands.sock").exists(), "the runner outlived the daemon")
    done, modules = loaded_by(state, "decisions", "list", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "click" in modules
