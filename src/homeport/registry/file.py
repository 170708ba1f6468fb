"""The registry file in the user's state directory, changed only under a lock and replaced whole.

    STATE_DIR/registry.json          the index: owners and remembered ports (mode 0600)
    STATE_DIR/registry.json.lock     the lock every read-modify-write holds (filelock)
    STATE_DIR/instances/PID.json     each running owner's own record, the source of a rebuild
    STATE_DIR/tokens/PID.token       the bearer token an owner started with --auth accepts from the
                                     user's other instances (mode 0600, in a 0700 directory)

A registry that cannot be parsed (truncated by a crash, edited by hand) never stops a server: it
is rebuilt from the instance records whose owners are live, with a warning.
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
from homeport.errors import RegistryError, WorkspaceOwnedError
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
        self.tokens = self.directory / "tokens"
        self.is_live = is_live or Liveness()

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
        token_ref: str | None = None,
        pid: int | None = None,
        is_free: Callable[[int], bool] | None = None,
        endpoint: str | None = None,
    ) -> Owner:
        """Register this process as the owner of `roots` and return its entry (with the port to listen on).

        With `endpoint` (a `unix:` socket) no port is chosen: the instance is reached there.

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
            owner = Owner(endpoint, pid, time.time(), version, token_ref)
            self._write_text(self.instances / f"{pid}.json", json.dumps({"owner": owner.to_json(), "roots": names}))
            self._save(claim(release(state, pid), names, owner))
        return owner

    def mint_owner_token(self, pid: int | None = None) -> Path:
        """A fresh secret for the instance `pid` (default: this process) in STATE_DIR/tokens/PID.token.

        An owner started with --auth accepts it as proof that a call comes from another Homeport
        instance of the same user (only that user can read the file), and registers the file as its
        `token_ref`. Removed with the instance's entries.

        Raises:
            RegistryError: as `read`.
        """
        pid = os.getpid() if pid is None else pid
        path = self.tokens / f"{pid}.token"
        with self._locked():
            self.tokens.mkdir(mode=_DIR_MODE, exist_ok=True)
            os.chmod(self.tokens, _DIR_MODE)  # a directory made by hand keeps no wider mode
            self._write_text(path, secrets.token_urlsafe(32) + "\n")
        return path

    def release(self, pid: int | None = None) -> None:
        """Remove every entry of the instance `pid` (default: this process); its ports stay remembered."""
        pid = os.getpid() if pid is None else pid
        with self._locked():
            state = self._load()
            self._save(release(state, pid))
            self._forget_instance(pid)

    def _forget_instance(self, pid: int) -> None:
        for path in (self.instances / f"{pid}.json", self.tokens / f"{pid}.token"):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    # -- the file

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            self.directory.mkdir(mode=_DIR_MODE, parents=True, exist_ok=True)
            self.instances.mkdir(mode=_DIR_MODE, exist_ok=True)
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
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return RegistryState()
        except UnicodeDecodeError as exc:
            return self._rebuild(f"not UTF-8 ({exc.reason})")
        except OSError as exc:
            raise RegistryError(f"cannot read {self.path} ({exc.strerror}); pass --state-dir") from exc
        try:
            return decode_state(text)
        except RegistryError as exc:
            return self._rebuild(exc.message)

    def _rebuild(self, why: str) -> RegistryState:
        log.warning("the registry %s is unreadable (%s); rebuilt from the live instances", self.path, why)
        state = RegistryState()
        for record in sorted(self.instances.glob("*.json")):
            try:
                data = json.loads(record.read_text(encoding="utf-8"))
                owner = Owner.from_json(data["owner"])
                roots = [r for r in data["roots"] if isinstance(r, str)]
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
