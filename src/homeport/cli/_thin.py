"""The shell's memory commands answered through the running daemon, before click or the server loads.

Importing the CLI, SQLAlchemy and the tool models costs a memory command about 0.4 s of CPU before
it does anything, every time; a process that only opens a unix socket starts in a few tens of
milliseconds (bench/shell_commands.py; results in bench/results/2026-11-28-shell-commands.md).
So `homeport` first looks for the daemon's command runner, STATE_DIR/daemon/commands.sock, which
`homeport daemon run` starts beside itself (`homeport.cli._command_runner`): a process that has
imported the whole CLI once and forks a child for each command. The child is handed this process's
stdin, stdout, stderr and working directory (the descriptors themselves, over the socket), its
environment, umask and arguments, runs the very same click command, and reports its exit status,
which becomes this process's. What a command prints and how it exits are the same either way,
because the same code runs on the same descriptors; only the imports were paid for once.

Nothing of a command, neither its arguments nor the environment with its tokens, is sent before the
runner proves that it is the daemon's:

- the daemon's directory is this user's, private (0700), and no other user can change it or any
  directory above it (`_trusted_files`, as for the registry); the socket is this user's, mode 0600;
- the kernel names the peer (SO_PEERCRED): it runs as this user and is a child of the daemon pid it
  claims to serve;
- it answers a fresh nonce with the HMAC of the secret that daemon registered with
  (`registry.proof`, the proof every front end asks of an owner), for this socket's address;
- it runs the same version of Homeport from the same place as this process.

Anything else (no daemon, a runner still starting, a command not in `FORWARDED`, `--no-daemon`,
shell completion) and the command runs in this process as before, importing what it needs. Once a
command has been sent it is never run a second time here: a runner that dies meanwhile is said on
stderr with exit status 1.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
from io import BufferedReader, TextIOWrapper

__all__ = ["COMMANDS_SOCKET", "FORWARDED", "forwardable", "run_through_daemon", "state_dir"]

COMMANDS_SOCKET = "commands.sock"
# The commands whose whole work is a memory tool call: they answer in the time of that call. The
# others (serve, daemon, setup, doctor, ...) start servers, manage processes or are rare, and run
# in their own process as always.
FORWARDED = frozenset(
    {
        "activity",
        "batch",
        "context",
        "data",
        "decisions",
        "export",
        "glossary",
        "history",
        "import",
        "link",
        "links",
        "patterns",
        "progress",
        "purge",
        "ready",
        "restore",
        "schema",
        "search",
    }
)
HANDSHAKE_TIMEOUT_SECONDS = 2.0
MAX_LINE = 64 * 1024
_FALSE = {"", "0", "false", "f", "no", "n", "off"}  # what click reads as a false flag in the environment


class NotForwarded(Exception):
    """The command was not sent: run it in this process."""


def forwardable(argv: list[str], environ: os._Environ[str] | dict[str, str]) -> bool:
    """Whether `homeport ARGV` may be answered by the daemon's command runner."""
    if not argv or argv[0] not in FORWARDED or "_HOMEPORT_COMPLETE" in environ:
        return False
    if environ.get("HOMEPORT_NO_DAEMON", "").strip().lower() not in _FALSE:
        return False
    # `--no-daemon` asks for this process; `--` ends the options, so a value after it is an argument.
    options = argv[: argv.index("--")] if "--" in argv else argv
    return "--no-daemon" not in options


def state_dir(environ: os._Environ[str] | dict[str, str]) -> str:
    """The registry's directory, as `_compose.default_state_dir` finds it (absolute)."""
    chosen = environ.get("HOMEPORT_STATE_DIR")
    if not chosen:
        import platformdirs  # only when the environment does not say

        chosen = platformdirs.user_state_dir("homeport", appauthor=False)
    return os.path.abspath(os.path.expanduser(chosen))


def run_through_daemon(argv: list[str]) -> int | None:
    """Run `homeport ARGV` in the daemon's command runner and return its exit status; None when it was
    not sent (run it here)."""
    if not forwardable(argv, os.environ):
        return None
    try:
        runner = _proven_runner(state_dir(os.environ))
    except (NotForwarded, OSError, ValueError):
        return None
    sock, reader = runner
    with sock, reader:
        try:
            _send_command(sock, argv)
        except (NotForwarded, OSError):
            return None  # not sent whole: nothing runs
        return _wait_for_child(reader)


def _proven_runner(state: str) -> tuple[socket.socket, BufferedReader]:
    """A connection to the command runner that has proved it is the daemon's (and a reader of its
    lines), or NotForwarded."""
    from homeport import __version__
    from homeport._trusted_files import UntrustedPathError, check_directory

    directory = os.path.join(state, "daemon")
    path = os.path.join(directory, COMMANDS_SOCKET)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise NotForwarded("no command runner") from None
    import stat

    uid = os.geteuid()
    if not stat.S_ISSOCK(info.st_mode) or info.st_uid != uid or stat.S_IMODE(info.st_mode) & 0o077:
        raise NotForwarded(f"{path} is not this user's private socket")
    try:
        check_directory(directory, private=True)
    except UntrustedPathError as exc:
        raise NotForwarded(str(exc)) from None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(HANDSHAKE_TIMEOUT_SECONDS)
        sock.connect(path)
        reader = sock.makefile("rb")
        _prove(sock, reader, state, uid, __version__)
    except BaseException:
        sock.close()
        raise
    sock.settimeout(None)
    return sock, reader


def _prove(sock: socket.socket, reader: BufferedReader, state: str, uid: int, version: str) -> None:
    import homeport
    from homeport.registry.proof import connection_address, new_nonce, peer_credentials, proof_key, verify_proof

    credentials = peer_credentials(sock)
    if credentials is not None and credentials[1] != uid:
        raise NotForwarded("the peer runs as another user")
    nonce = new_nonce()
    here = os.path.dirname(os.path.abspath(homeport.__file__))
    _write_message(sock, {"nonce": nonce, "version": version, "package": here})
    answer = _read_message(reader)
    pid = answer.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool):
        raise NotForwarded("no daemon pid")
    if answer.get("version") != version or answer.get("package") != here:
        raise NotForwarded("the daemon runs another Homeport")
    if credentials is not None and _parent_of(credentials[0]) not in (pid, None):
        raise NotForwarded("the peer is not the daemon's command runner")
    secret = _daemon_secret(state, pid)
    address = connection_address(sock.family, sock.getpeername())
    if address is None or not verify_proof(proof_key(secret), nonce, address, pid, answer):
        raise NotForwarded("the command runner did not prove it is the daemon's")


def _daemon_secret(state: str, pid: int) -> bytes:
    """The secret the daemon `pid` registered with, read as the registry reads it (private, this user's)."""
    from homeport._trusted_files import UntrustedPathError, check_directory, read_trusted_bytes

    secrets_dir = os.path.join(state, "secrets")
    try:
        check_directory(secrets_dir, private=True)
        secret = read_trusted_bytes(os.path.join(secrets_dir, f"{pid}.key"), private=True)
    except (UntrustedPathError, OSError):
        raise NotForwarded("no trusted secret for the daemon") from None
    if not secret or not secret.strip():
        raise NotForwarded("no secret for the daemon")
    return secret


def _parent_of(pid: int) -> int | None:
    """The parent pid of `pid` from /proc, or None where there is no /proc to ask."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
            return int(stat_file.read().rsplit(b")", 1)[1].split()[1])
    except FileNotFoundError:
        return None if not os.path.isdir("/proc/self") else -1
    except (OSError, IndexError, ValueError):
        return -1


def _send_command(sock: socket.socket, argv: list[str]) -> None:
    """The command, with this process's stdin, stdout, stderr and working directory as descriptors."""
    umask = os.umask(0o022)
    os.umask(umask)
    streams = []
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        if not isinstance(stream, TextIOWrapper):
            raise NotForwarded("a standard stream is closed or replaced")
        streams.append([stream.encoding, stream.errors, stream.line_buffering, stream.write_through])
    try:
        cwd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        raise NotForwarded("the working directory cannot be opened") from None
    try:
        payload = json.dumps(
            {"argv": argv, "env": dict(os.environ), "umask": umask, "streams": streams},
            ensure_ascii=True,
        ).encode("ascii")
        sys.stdout.flush()
        sys.stderr.flush()
        socket.send_fds(sock, [len(payload).to_bytes(8, "big")], [0, 1, 2, cwd])
        sock.sendall(payload)
    finally:
        os.close(cwd)


def _wait_for_child(reader: BufferedReader) -> int | None:
    """The exit status the runner's child reports, or None when the runner made no child (nothing ran).

    Ctrl-C here is passed on to the child as SIGINT, also one pressed before the child said its pid.
    """
    import signal

    pid: int | None = None
    interrupted = False
    while True:
        try:
            message = _read_message(reader)
        except KeyboardInterrupt:
            interrupted = True
            if pid is not None:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGINT)
            continue
        except (OSError, ValueError):
            message = {}
        if pid is None:
            said = message.get("pid")
            if isinstance(said, int) and not isinstance(said, bool):
                pid = said
                if interrupted:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGINT)
                continue
            if interrupted:
                raise KeyboardInterrupt
            return None  # refused ("fallback") or gone before it made a child
        code = message.get("exit")
        if isinstance(code, int) and not isinstance(code, bool):
            return code
        sys.stderr.write(f"homeport: the daemon's command process (pid {pid}) ended without an exit status\n")
        return 1


def _write_message(sock: socket.socket, message: dict[str, object]) -> None:
    sock.sendall(json.dumps(message).encode("utf-8") + b"\n")


def _read_message(reader: BufferedReader) -> dict[str, object]:
    """One JSON object on one line; ValueError at the end of the stream, for a longer line or anything else."""
    line = reader.readline(MAX_LINE)
    if not line.endswith(b"\n"):
        raise ValueError("the stream ended" if not line else "a line too long")
    message = json.loads(line)
    if not isinstance(message, dict):
        raise ValueError("not an object")
    return message
