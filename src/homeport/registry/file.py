"""The registry file in the user's state directory, changed only under a lock and replaced whole.

    STATE_DIR/registry.json          the index: owners and remembered ports (mode 0600)
    STATE_DIR/registry.json.lock     the lock every read-modify-write holds (filelock)
    STATE_DIR/instances/PID.json     each running owner's own record, the source of a rebuild
    STATE_DIR/secrets/PID.key        each owner's secret, made when it registers (mode 0600, in a 0700
                                     directory): it proves itself with it (`registry.proof`), and an
                                     owner started with --auth accepts it as the bearer token of the
                                     user's other instances

A registry that cannot be parsed (truncated by a crash, edited by hand, a FIFO or a symlink in its
place) never stops a server: it is rebuilt from the instance records whose owners are live, with a
warning.

Every file here says where to send a user's calls, or is a secret: the directory is used only when it
is the user's own and no other user can change it or a directory above it (`_trusted_files`, as
OpenSSH checks ~/.ssh); otherwise every method raises `UntrustedStateError`, which names the
directory and the chmod/chown that fixes it. Files are opened without following symlinks or blocking.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import socket
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from homeport._replace import replace_file
from homeport._trusted_files import UntrustedPathError, check_directory, read_trusted_bytes
from homeport.errors import RegistryError, UntrustedStateError, WorkspaceOwnedError
from homeport.registry.liveness import Liveness
from homeport.registry.model import (
    Owner,
    RegistryState,
    choose_port,
    claim,
    decode_state,
    encode_state,
    owner_for,
    prune,
    release,
)

__all__ = ["InstanceRegistry", "endpoint_for", "port_is_free"]

log = logging.getLogger("homeport.registry")

_FILE_MODE = 0o600
_DIR_MODE = 0o700
LOCK_TIMEOUT_SECONDS = 15.0


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server could listen on `port` now (with SO_REUSEADDR, as uvicorn binds)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def endpoint_for(host: str, port: int) -> str:
    """The URL other local processes reach a server at; a wildcard bind is reached over loopback."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    return f"http://{'[' + host + ']' if ':' in host else host}:{port}"


class InstanceRegistry:
    """The registry in `directory`. Every method takes the lock; none keeps state between calls."""

    def __init__(self, directory: Path, *, is_live: Callable[[Owner], bool] | None = None) -> None:
        self.directory = Path(directory)
        self.path = self.directory / "registry.json"
        self.instances = self.directory / "instances"
        self.secrets = self.directory / "secrets"
        self.is_live = is_live or Liveness(self.owner_secret)

    # -- reading

    def read(self) -> RegistryState:
        """The live owners and the remembered ports; dead owners are pruned from the file as well.

        Raises:
            RegistryError: the state directory cannot be used (permissions), or its lock is held too long.
        """
        with self._locked():
            return self._load_live()

    def survey(self) -> tuple[list[tuple[Owner, list[str], bool]], RegistryState]:
        """Every registered instance with its directories and whether it is live; the dead are then pruned.

        Returns the instances as found (for `homeport status`) and the state after pruning.

        Raises:
            RegistryError: as `read`.
        """
        with self._locked():
            found = self._load()
            live = self._load_live(found)
        return [
            (owner, roots, (pid, endpoint) in live.instances())
            for (pid, endpoint), (owner, roots) in found.instances().items()
        ], live

    def peek(self) -> RegistryState:
        """The registry as the file has it: no lock, no pruning, nothing written (for reports such as
        `homeport doctor`). The same checks as every read: a FIFO is not waited on, a symlink not followed.

        Raises:
            UntrustedStateError: another user could change the state directory or the file.
            RegistryError: the file is not a registry (the message says why; the next `read` rebuilds it).
        """
        try:
            check_directory(self.directory)
            raw = read_trusted_bytes(self.path)
        except FileNotFoundError:
            return RegistryState()
        except UntrustedPathError as exc:
            raise UntrustedStateError(f"{exc}; nothing in it was read") from None
        except OSError as exc:
            raise RegistryError(f"cannot read {self.path} ({exc.strerror})") from exc
        if raw is None:
            return RegistryState()
        try:
            return decode_state(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise RegistryError(f"not UTF-8 ({exc.reason})") from None

    def owner_of(self, root: Path | str) -> tuple[str, Owner] | None:
        """The live instance that owns `root` (the deepest owned directory containing it), or None."""
        return owner_for(self.read(), str(root))

    # -- changing

    def own(
        self,
        roots: Iterable[Path | str],
        *,
        host: str,
        requested_port: int | None,
        version: str,
        take_over: bool = False,
        auth: bool = False,
        pid: int | None = None,
        is_free: Callable[[int], bool] | None = None,
        endpoint: str | None = None,
    ) -> Owner:
        """Register this process as the owner of `roots` and return its entry (with the port to listen on).

        With `endpoint` (a `unix:` socket) no port is chosen: the instance is reached there. `auth`: the
        instance requires an agent on each call (--auth). Its secret (`mint_owner_secret`) is made first.

        Decided under the lock, so of two instances racing for one root exactly one wins.

        Raises:
            WorkspaceOwnedError: another live instance owns one of `roots` and `take_over` is off.
            RegistryError: no port is free, or the state directory is unusable.
        """
        names = [str(r) for r in roots]
        pid = os.getpid() if pid is None else pid
        free = is_free or (lambda port: port_is_free(port, host))
        with self._locked():
            state = self._load_live()
            taken = {r: state.owners[r] for r in names if r in state.owners and state.owners[r].pid != pid}
            if taken and not take_over:
                raise WorkspaceOwnedError(_owned_message(taken))
            if endpoint is None:
                port = choose_port(
                    requested=requested_port,
                    remembered=[state.ports[r] for r in names if r in state.ports],
                    held={o.port for o in state.owners.values() if o.pid != pid and o.port is not None},
                    promised={p for r, p in state.ports.items() if r not in names},
                    is_free=free,
                )
                endpoint = endpoint_for(host, port)
            owner = Owner(endpoint, pid, time.time(), version, auth)
            self._write_text(self.instances / f"{pid}.json", json.dumps({"owner": owner.to_json(), "roots": names}))
            self._save(claim(release(state, pid), names, owner))
        return owner

    def secret_path(self, pid: int) -> Path:
        return self.secrets / f"{pid}.key"

    def mint_owner_secret(self, pid: int | None = None) -> Path:
        """A fresh secret for the instance `pid` (default: this process) in STATE_DIR/secrets/PID.key.

        The owner proves with it that it is the instance registered (`registry.proof`), and, started
        with --auth, accepts it as proof that a call comes from another Homeport instance of the same
        user (only that user can read the file). Removed with the instance's entries.

        Raises:
            RegistryError: as `read`.
        """
        pid = os.getpid() if pid is None else pid
        path = self.secret_path(pid)
        with self._locked():
            self._write_text(path, secrets.token_urlsafe(32) + "\n")
        return path

    def owner_secret(self, pid: int) -> bytes | None:
        """The secret of the instance `pid`, or None when it has none that can be trusted (a file missing,
        or one that another user could have written or read: ignored, with a warning naming the fix)."""
        path = self.secret_path(pid)
        try:
            check_directory(self.secrets, private=True)
            secret = read_trusted_bytes(path, private=True)
        except FileNotFoundError:
            return None
        except UntrustedPathError as exc:
            log.warning("ignored the owner secret %s: %s", path, exc)
            return None
        except OSError as exc:
            log.warning("cannot read the owner secret %s (%s)", path, exc.strerror or exc)
            return None
        return secret.strip() if secret and secret.strip() else None

    def release(self, pid: int | None = None) -> None:
        """Remove every entry of the instance `pid` (default: this process); its ports stay remembered."""
        pid = os.getpid() if pid is None else pid
        with self._locked():
            state = self._load()
            self._save(release(state, pid))
            self._forget_instance(pid)

    def _forget_instance(self, pid: int) -> None:
        for path in (self.instances / f"{pid}.json", self.secret_path(pid)):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    # -- the file

    def check(self) -> None:
        """Create the state directory (0700) and its subdirectories if need be, and make sure that no other
        user can change them (see the module).

        Raises:
            UntrustedStateError: they are another user's, or others can write them or a directory above.
        """
        try:
            self.directory.mkdir(mode=_DIR_MODE, parents=True, exist_ok=True)
            check_directory(self.directory)
            for sub in (self.instances, self.secrets):
                sub.mkdir(mode=_DIR_MODE, exist_ok=True)
                check_directory(sub, private=sub == self.secrets)
        except UntrustedPathError as exc:
            raise UntrustedStateError(
                f"the state directory {self.directory} cannot be trusted: {exc}; "
                "nothing in it was read (pass --state-dir to use another)"
            ) from None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            self.check()
            lock_file = self.path.with_name(self.path.name + ".lock")
            with FileLock(lock_file, timeout=LOCK_TIMEOUT_SECONDS, mode=_FILE_MODE):
                yield
        except Timeout as exc:
            raise RegistryError(
                f"could not lock {self.path} within {LOCK_TIMEOUT_SECONDS:g}s; another homeport process holds it"
            ) from exc
        except PermissionError as exc:
            raise RegistryError(
                f"cannot use the state directory {self.directory} ({exc.strerror}); pass --state-dir"
            ) from exc

    def _load_live(self, state: RegistryState | None = None) -> RegistryState:
        state = self._load() if state is None else state
        live = prune(state, self.is_live)
        if live.owners != state.owners:
            gone = sorted({o.pid for o in state.owners.values()} - {o.pid for o in live.owners.values()})
            for pid in gone:
                self._forget_instance(pid)
            self._save(live)
        return live

    def _load(self) -> RegistryState:
        try:
            raw = read_trusted_bytes(self.path)
        except UntrustedPathError as exc:
            return self._rebuild(f"{exc.problem}")
        except OSError as exc:
            raise RegistryError(f"cannot read {self.path} ({exc.strerror}); pass --state-dir") from exc
        if raw is None:
            return RegistryState()
        try:
            return decode_state(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            return self._rebuild(f"not UTF-8 ({exc.reason})")
        except RegistryError as exc:
            return self._rebuild(exc.message)

    def _rebuild(self, why: str) -> RegistryState:
        log.warning("the registry %s is unreadable (%s); rebuilt from the live instances", self.path, why)
        state = RegistryState()
        for record in sorted(self.instances.glob("*.json")):
            try:
                raw = read_trusted_bytes(record)
                if raw is None:
                    continue
                data = json.loads(raw)
                owner = Owner.from_json(data["owner"])
                roots = [r for r in data["roots"] if isinstance(r, str)]
            except UntrustedPathError as exc:
                log.warning("ignored the instance record %s: %s", record, exc)
                continue
            except (OSError, ValueError, KeyError, TypeError, RegistryError):
                continue
            if self.is_live(owner):
                state = claim(state, roots, owner)
        self._save(state)
        return state

    def _save(self, state: RegistryState) -> None:
        self._write_text(self.path, encode_state(state))

    def _write_text(self, path: Path, text: str) -> None:
        replace_file(path, text, _FILE_MODE)


def _owned_message(taken: dict[str, Owner]) -> str:
    parts = [
        f"{root} is owned by pid {o.pid} at {o.endpoint} (started {_ago(o.started_at)})" for root, o in taken.items()
    ]
    return "; ".join(parts) + "; stop that instance, serve without --own, or pass --take-over to replace it"


def _ago(started_at: float) -> str:
    seconds = max(0, int(time.time() - started_at))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m ago" if seconds >= 3600 else f"{seconds}s ago"
