"""`homeport daemon start|stop|status|logs`: one background Homeport per user, on a unix socket.

    STATE_DIR/daemon/               mode 0700, checked to be the user's and that no other user can
                                    change it or a directory above it (`_trusted_files`)
    STATE_DIR/daemon/homeport.sock  Streamable HTTP at /mcp, /healthz (mode 0600)
    STATE_DIR/daemon/daemon.lock    held by the running daemon for its whole life (released by the kernel
                                    when it dies, so a SIGKILLed daemon's leftover socket never blocks a start)
    STATE_DIR/daemon/daemon.log     its log, rotated (RotatingFileHandler)
    STATE_DIR/daemon/commands.sock  its command runner (mode 0600): the shell's memory commands, run in
                                    children of a process that has imported the CLI once (`_command_runner`)

The daemon registers itself in the instance registry as the owner of its allowed roots, with the
endpoint `unix:STATE_DIR/daemon/homeport.sock`; every other `homeport serve` then forwards the calls
for those workspaces to it (the workspace in `X-Workspace-Id` on each request) and serves them
itself again once the daemon is stopped. Like any owner it proves itself on each new connection
before a front end sends it anything (`registry.proof`: the secret it registered with, and the
kernel's word that the socket's peer is its pid, of this user).
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import logging
import logging.handlers
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from homeport import __version__
from homeport._trusted_files import UntrustedPathError, check_directory
from homeport.cli._compose import dashboard_app, default_state_dir, domain_errors, serve_settings, shell_path
from homeport.cli._lazy import HelpfulGroup
from homeport.cli.ownership import state_dir_option
from homeport.errors import DaemonError, DaemonRunningError
from homeport.registry import InstanceRegistry
from homeport.registry.liveness import UNIX_SCHEME, healthz
from homeport.workspace import canonical_directory

__all__ = ["DaemonPaths", "daemon"]

START_DEADLINE_SECONDS = 30.0
STOP_DEADLINE_SECONDS = 15.0
LOG_MAX_BYTES = 5 * 1024 * 1024
LOG_BACKUPS = 3
# The Host header clients send over the socket (the SDK checks it; a socket has no host of its own).
SOCKET_HOST_URL = "http://localhost"
_SUN_PATH_MAX = 107  # sockaddr_un.sun_path holds 108 bytes with the final NUL on Linux (104 on macOS)


@dataclass(frozen=True)
class DaemonPaths:
    directory: Path

    @classmethod
    def under(cls, state_dir: Path | None) -> DaemonPaths:
        return cls((state_dir or default_state_dir()).expanduser().absolute() / "daemon")

    @property
    def socket(self) -> Path:
        return self.directory / "homeport.sock"

    @property
    def endpoint(self) -> str:
        return UNIX_SCHEME + str(self.socket)

    @property
    def commands_socket(self) -> Path:
        from homeport.cli._thin import COMMANDS_SOCKET

        return self.directory / COMMANDS_SOCKET

    @property
    def lock(self) -> Path:
        return self.directory / "daemon.lock"

    @property
    def log(self) -> Path:
        return self.directory / "daemon.log"

    def prepare(self) -> None:
        """Create the directory (0700) or check that an existing one is the user's and private, and that
        no other user can change a directory above it.

        Raises:
            DaemonError: it belongs to another user, others can write it or a directory above it, or the
                socket path is too long for the system.
        """
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = self.directory.lstat()
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            raise DaemonError(
                f"{self.directory} is not a directory of this user (uid {os.getuid()}); remove it or pass --state-dir"
            )
        try:
            check_directory(self.directory)
        except UntrustedPathError as exc:
            raise DaemonError(f"the daemon's directory cannot be trusted: {exc}; or pass --state-dir") from None
        if stat.S_IMODE(info.st_mode) & 0o077:
            self.directory.chmod(0o700)  # readable by others, and no one else can write it: just closed
        if len(os.fsencode(self.socket)) > _SUN_PATH_MAX:
            raise DaemonError(
                f"the socket path {self.socket} is longer than the system allows ({_SUN_PATH_MAX} bytes); "
                "pass a shorter --state-dir"
            )

    def health(self, timeout: float = 1.0) -> dict[str, Any] | None:
        """What the daemon's /healthz answers, or None when no daemon listens on the socket."""
        return healthz(self.endpoint, timeout) if self.socket.exists() else None


@click.group(cls=HelpfulGroup)
def daemon() -> None:
    """One background Homeport per user, serving every workspace under its roots on a unix socket.

    While it runs, every `homeport serve` (stdio or HTTP) hands the calls for those workspaces to
    it, so one process keeps their stores warm and is their only writer; when it is stopped they
    serve the calls themselves again.
    """


def _allow_root_option(fn: Any) -> Any:
    return click.option(
        "--allow-root",
        "allow_roots",
        multiple=True,
        type=click.Path(file_okay=False),
        help="Serve and own the workspaces inside this directory (repeatable). Default: the current "
        "directory; /, the home directory or a system directory is refused.",
    )(fn)


@daemon.command()
@_allow_root_option
@state_dir_option
@domain_errors
def start(allow_roots: tuple[str, ...], state_dir: Path | None) -> None:
    """Start the daemon in the background; print its pid and socket once it answers.

    Refused when a daemon is already running. Its log: STATE_DIR/daemon/daemon.log.
    """
    paths = DaemonPaths.under(state_dir)
    paths.prepare()
    running = paths.health()
    if running is not None:
        raise DaemonRunningError(
            f"the daemon is already running (pid {running.get('pid')}, socket {paths.socket}); "
            "`homeport daemon stop` stops it"
        )
    roots = [str(canonical_directory(shell_path(p) or p)) for p in allow_roots] or [os.getcwd()]
    pid = start_in_background(paths, roots)
    click.echo(f"homeport daemon pid {pid} on {paths.socket} (log {paths.log})")


def start_in_background(paths: DaemonPaths, roots: list[str]) -> int:
    """Start `homeport daemon run` owning `roots` and return its pid once it answers on its socket.

    Raises:
        DaemonError: it exited at start or did not answer in time (its log's tail is in the message).
    """
    args = [sys.executable, "-m", "homeport", "daemon", "run", "--state-dir", str(paths.directory.parent)]
    for root in roots:
        args += ["--allow-root", root]
    with paths.log.open("ab") as sink:
        os.chmod(paths.log, 0o600)
        # Its own directory as the working directory: the daemon has no current workspace (each
        # request names its own), and it keeps no project directory busy.
        process = subprocess.Popen(
            args,
            cwd=paths.directory,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=sink,
            start_new_session=True,
            close_fds=True,
        )
    deadline = time.monotonic() + START_DEADLINE_SECONDS
    while time.monotonic() < deadline:
        code = process.poll()
        if code is not None:
            raise DaemonError(f"the daemon exited at start (status {code}):\n{_tail(paths.log)}")
        health = paths.health()
        if health is not None and health.get("pid") == process.pid:
            return process.pid
        time.sleep(0.05)
    process.terminate()
    raise DaemonError(f"the daemon did not answer within {START_DEADLINE_SECONDS:g}s:\n{_tail(paths.log)}")


def autostart(directory: Path) -> None:
    """Start the daemon for the project around `directory` unless one is running: the shell's memory
    commands call this when the user opted in (HOMEPORT_DAEMON_AUTOSTART=1 in their own environment;
    a repository's config can never ask for it). It owns that project's root. A daemon that cannot
    start is said on stderr, and the command is served in its own process as without the opt-in.
    """
    paths = DaemonPaths.under(None)
    try:
        paths.prepare()
        if paths.health() is not None:
            return
        start_in_background(paths, [str(_project_around(directory))])
    except (DaemonError, OSError) as exc:
        if paths.health() is None:  # another command started it meanwhile: nothing to say
            click.echo(f"homeport: the daemon was not started ({exc}); served in this process", err=True)


def _project_around(directory: Path) -> Path:
    """The project `directory` is in (the nearest ancestor-or-self with .homeport/ or .git), else itself."""
    start = canonical_directory(directory)
    for candidate in (start, *start.parents):
        if (candidate / ".homeport").is_dir() or (candidate / ".git").exists():
            return candidate
    return start


@daemon.command()
@state_dir_option
@domain_errors
def stop(state_dir: Path | None) -> None:
    """Stop the daemon (SIGTERM: calls in flight finish first) and wait until it is gone.

    Only a daemon that proves it is the one registered (`registry.proof`) is signalled: a pid that
    whatever answers on the socket names is not enough.
    """
    from homeport.registry import Owner
    from homeport.registry.liveness import Proof, prove_owner

    paths = DaemonPaths.under(state_dir)
    health = paths.health()
    pid = health.get("pid") if health else None
    if not isinstance(pid, int) or isinstance(pid, bool):
        click.echo(f"the daemon is not running (no answer on {paths.socket})")
        return
    secret = InstanceRegistry(paths.directory.parent).owner_secret(pid)
    if prove_owner(Owner(paths.endpoint, pid, time.time(), __version__), secret) is not Proof.PROVEN:
        raise DaemonError(
            f"what answers on {paths.socket} names pid {pid} but does not prove it is the daemon registered "
            f"there; nothing was signalled. Stop that process yourself, remove {paths.socket}, and start again"
        )
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_DEADLINE_SECONDS
    while time.monotonic() < deadline:
        if not _running(pid):
            click.echo(f"stopped the daemon (pid {pid})")
            return
        time.sleep(0.05)
    raise DaemonError(f"the daemon (pid {pid}) is still running {STOP_DEADLINE_SECONDS:g}s after SIGTERM")


@daemon.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
@state_dir_option
@domain_errors
def status(as_json: bool, state_dir: Path | None) -> None:
    """Whether the daemon runs: pid, uptime, socket, workspaces open, calls served and failed.

    Exit status 3 when it is not running.
    """
    import json

    paths = DaemonPaths.under(state_dir)
    health = paths.health()
    if health is None:
        if as_json:
            click.echo(json.dumps({"running": False, "socket": str(paths.socket)}))
        else:
            click.echo(f"the daemon is not running (no answer on {paths.socket})")
        sys.exit(3)
    started = health.get("started_at")
    uptime = round(time.time() - started, 1) if isinstance(started, (int, float)) else None
    report = {
        "running": True,
        "pid": health.get("pid"),
        "uptime_seconds": uptime,
        "socket": str(paths.socket),
        "version": health.get("version"),
        "open_stores": health.get("open_stores"),
        "calls": health.get("calls"),
        "errors": health.get("errors"),
        "log": str(paths.log),
    }
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    for key, value in report.items():
        if key != "running":
            click.echo(f"{key + ':':<16}{value}")


@daemon.command()
@click.option("--lines", "-n", default=40, show_default=True, type=click.IntRange(min=1), help="How many lines.")
@state_dir_option
def logs(lines: int, state_dir: Path | None) -> None:
    """Print the end of the daemon's log."""
    click.echo(_tail(DaemonPaths.under(state_dir).log, lines))


@daemon.command(hidden=True)
@_allow_root_option
@state_dir_option
@domain_errors
def run(allow_roots: tuple[str, ...], state_dir: Path | None) -> None:
    """The daemon itself, in the foreground (what `start` runs in the background)."""
    from filelock import FileLock, Timeout

    from homeport.core import build_runtime
    from homeport.server import build_http_app, build_server
    from homeport.server.http_run import run_http

    paths = DaemonPaths.under(state_dir)
    paths.prepare()
    _log_to(paths.log)
    lock = FileLock(paths.lock, timeout=0, mode=0o600)
    try:
        lock.acquire()
    except Timeout:
        raise DaemonRunningError(f"another daemon holds {paths.lock}; `homeport daemon status` shows it") from None
    registry = InstanceRegistry(paths.directory.parent)
    secret_file = registry.mint_owner_secret()  # how it proves to front ends that it is the daemon registered
    atexit.register(registry.release)
    settings = serve_settings(
        transport="http",
        workspace=None,
        allow_roots=allow_roots,
        require_explicit_workspace=False,
        host="127.0.0.1",
        port=0,
        state_dir=paths.directory.parent,
    )
    # Its callers are this user's own front ends and shell commands (a socket only the user can reach,
    # and front ends that check the daemon's proof): a database account that reaches the host's files is
    # warned about, as over stdio, not refused as for the remote callers of `serve --http`.
    settings = dataclasses.replace(
        settings, public_urls=(SOCKET_HOST_URL,), owner_token_file=secret_file, allow_database_file_access=True
    )
    runtime = build_runtime(settings)
    try:
        with _listening(paths.socket) as sock:
            roots = [str(r) for r in runtime.resolver.settings.guard.allow_roots]
            owner = registry.own(
                roots, host="127.0.0.1", requested_port=None, version=__version__, endpoint=paths.endpoint
            )
            signal.signal(signal.SIGTERM, _exit_on_sigterm)
            app = build_http_app(build_server(runtime), runtime, dashboard=dashboard_app)
            log = logging.getLogger("homeport.daemon")
            log.info("daemon pid %d owns %s on %s", owner.pid, ", ".join(roots), paths.socket)
            with _command_runner(paths):
                run_http(app, sock, settings, lambda: log.info("daemon pid %d ready", owner.pid))
            registry.release(owner.pid)
            log.info("daemon pid %d stopped", owner.pid)
    finally:
        runtime.close()
        lock.release()


@daemon.command(hidden=True)
@click.option("--daemon-pid", type=int, required=True, help="The daemon whose secret proves the runner.")
@state_dir_option
@domain_errors
def commands(daemon_pid: int, state_dir: Path | None) -> None:
    """The daemon's command runner, on its stdin's pipe (what `run` starts beside itself)."""
    from homeport.cli._command_runner import preload, serve_commands

    paths = DaemonPaths.under(state_dir)
    paths.prepare()
    secret = InstanceRegistry(paths.directory.parent).owner_secret(daemon_pid)
    if secret is None:
        raise DaemonError(f"the daemon pid {daemon_pid} has no secret to prove its command runner with")
    preload()
    with _listening(paths.commands_socket) as sock:
        serve_commands(sock, daemon_pid=daemon_pid, secret=secret)


@contextlib.contextmanager
def _command_runner(paths: DaemonPaths) -> Iterator[None]:
    """`homeport daemon commands` beside this daemon, for as long as it runs: the runner stops when its
    stdin's pipe closes, which the kernel does too when the daemon is killed."""
    args = [sys.executable, "-m", "homeport", "daemon", "commands"]
    args += ["--state-dir", str(paths.directory.parent), "--daemon-pid", str(os.getpid())]
    with paths.log.open("ab") as sink:
        runner = subprocess.Popen(args, cwd=paths.directory, stdin=subprocess.PIPE, stdout=sink, stderr=sink)
    try:
        yield
    finally:
        assert runner.stdin is not None
        runner.stdin.close()
        try:
            runner.wait(timeout=STOP_DEADLINE_SECONDS)
        except subprocess.TimeoutExpired:
            runner.kill()
            runner.wait()


@contextlib.contextmanager
def _listening(path: Path) -> Iterator[socket.socket]:
    """A listening unix socket at `path` (mode 0600), removed again when the daemon stops.

    Called with the daemon lock held: a socket file found there is a dead daemon's and goes.
    """
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # created 0600: never a moment when another user could connect
    try:
        sock.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(2048)
    inode = path.stat().st_ino
    try:
        yield sock
    finally:
        sock.close()
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_ino == inode:
                path.unlink()


def _log_to(path: Path) -> None:
    handler = logging.handlers.RotatingFileHandler(path, maxBytes=LOG_MAX_BYTES, backupCount=LOG_BACKUPS)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)


def _exit_on_sigterm(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)


def _running(pid: int) -> bool:
    from homeport.registry import pid_running

    return pid_running(pid)


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return f"(no log at {path})"
