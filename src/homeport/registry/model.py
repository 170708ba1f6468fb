"""The registry's content and every decision about it, as pure functions (no files, no network).

    {"version": 1,
     "owners": {"/home/ada/src/api": {"endpoint": "http://127.0.0.1:28001", "pid": 4242,
                                      "started_at": 1764000000.0, "version": "0.1.0", "auth": false}},
     "ports":  {"/home/ada/src/api": 28001}}

`owners` maps a canonical directory to the live instance that serves it; `ports` remembers the
port each directory was last served on, and outlives its owner so that a restart gets it back.

An entry says where an owner might be, nothing more: it names no file to read (the owner's secret is
where Homeport keeps it, STATE_DIR/secrets/PID.key), and the owner proves itself before anything
of a call is sent to it (`registry.proof`). Older entries named their token file in
`token_ref`; that path is never read, it only says the owner requires an agent (`auth`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from homeport.errors import RegistryError

__all__ = [
    "FIRST_PORT",
    "LAST_PORT",
    "Owner",
    "RegistryState",
    "choose_port",
    "claim",
    "decode_state",
    "encode_state",
    "owner_for",
    "prune",
    "release",
]

# Below every kernel's ephemeral range (Linux 32768-60999, macOS and Windows 49152-65535): a port there
# may be held for a moment by any outgoing connection on the machine, and an owner restarting would lose
# its remembered port to it. Owners registered before this change keep the ports they remember.
FIRST_PORT = 28001
LAST_PORT = 32767
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Owner:
    """One running instance, as it registered itself."""

    endpoint: str
    pid: int
    started_at: float  # seconds since the epoch
    version: str
    auth: bool = False  # started with --auth: calls forwarded to it name their agent

    @property
    def port(self) -> int | None:
        return urlsplit(self.endpoint).port

    def to_json(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "pid": self.pid,
            "started_at": self.started_at,
            "version": self.version,
            "auth": self.auth,
        }

    @classmethod
    def from_json(cls, data: Any) -> Owner:
        """Raises: RegistryError: `data` is not an owner entry."""
        if not isinstance(data, dict):
            raise RegistryError(f"an owner entry is {type(data).__name__}, not an object")
        endpoint, pid, started, version, auth, token_ref = (
            data.get(k) for k in ("endpoint", "pid", "started_at", "version", "auth", "token_ref")
        )
        if not isinstance(endpoint, str) or not endpoint.startswith(("http://", "unix:")):
            raise RegistryError(f"an owner entry has no usable endpoint ({endpoint!r})")
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
            raise RegistryError(f"an owner entry has no usable pid ({pid!r})")
        if not isinstance(started, int | float) or isinstance(started, bool):
            raise RegistryError(f"an owner entry has no start time ({started!r})")
        if not isinstance(version, str) or not isinstance(auth, bool | None):
            raise RegistryError("an owner entry has a malformed version or auth flag")
        return cls(endpoint, pid, float(started), version, bool(auth) or token_ref is not None)


@dataclass(frozen=True)
class RegistryState:
    owners: Mapping[str, Owner] = field(default_factory=dict)
    ports: Mapping[str, int] = field(default_factory=dict)

    def instances(self) -> dict[tuple[int, str], tuple[Owner, list[str]]]:
        """Owners grouped by instance (pid, endpoint), each with the directories it owns, sorted."""
        grouped: dict[tuple[int, str], tuple[Owner, list[str]]] = {}
        for root, owner in sorted(self.owners.items()):
            grouped.setdefault((owner.pid, owner.endpoint), (owner, []))[1].append(root)
        return grouped


def encode_state(state: RegistryState) -> str:
    return (
        json.dumps(
            {
                "version": FORMAT_VERSION,
                "owners": {root: owner.to_json() for root, owner in sorted(state.owners.items())},
                "ports": dict(sorted(state.ports.items())),
            },
            indent=2,
        )
        + "\n"
    )


def decode_state(text: str) -> RegistryState:
    """Parse the registry file's text; an empty file is an empty registry.

    Raises:
        RegistryError: the text is not a registry (truncated, hand-edited, another format).
    """
    if not text.strip():
        return RegistryState()
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RegistryError(f"not JSON ({exc})") from exc
    if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION:
        raise RegistryError(f"not a version-{FORMAT_VERSION} registry")
    owners, ports = data.get("owners", {}), data.get("ports", {})
    if not isinstance(owners, dict) or not isinstance(ports, dict):
        raise RegistryError("owners and ports must be objects")
    for root, port in ports.items():
        if not isinstance(port, int) or isinstance(port, bool) or not 0 < port <= 65535:  # any TCP port
            raise RegistryError(f"the port remembered for {root} is not a port ({port!r})")
    return RegistryState({root: Owner.from_json(o) for root, o in owners.items()}, dict(ports))


def choose_port(
    *,
    requested: int | None,
    remembered: Iterable[int],
    held: Set[int],
    promised: Set[int],
    is_free: Callable[[int], bool],
    first: int = FIRST_PORT,
    last: int = LAST_PORT,
) -> int:
    """The port an instance listens on.

    `requested` (--port) wins. Else the first of `remembered` (the ports its directories had last
    time) that no live instance holds and the OS has free. Else the first free port from `first`
    upward that is neither held nor promised (remembered for another directory, so that project
    gets its port back when it restarts); promised ports are used only when nothing else is free.

    Raises:
        RegistryError: no port from `first` to `last` is free.
    """
    if requested is not None:
        return requested
    for port in remembered:
        if port not in held and is_free(port):
            return port
    for avoid in (held | promised, held):
        for port in range(first, last + 1):
            if port not in avoid and is_free(port):
                return port
    raise RegistryError(f"no free port from {first} to {last}; stop an instance or pass --port")


def prune(state: RegistryState, is_live: Callable[[Owner], bool]) -> RegistryState:
    """`state` without the owners that are not live; each instance is checked once, ports are kept."""
    verdicts: dict[tuple[int, str], bool] = {}
    owners = {}
    for root, owner in state.owners.items():
        key = (owner.pid, owner.endpoint)
        if key not in verdicts:
            verdicts[key] = is_live(owner)
        if verdicts[key]:
            owners[root] = owner
    return replace(state, owners=owners)


def claim(state: RegistryState, roots: Iterable[str], owner: Owner) -> RegistryState:
    """`state` with `owner` owning every one of `roots` and each root remembering its port."""
    roots = list(roots)
    owners = {**state.owners, **dict.fromkeys(roots, owner)}
    ports = dict(state.ports)
    if owner.port is not None:
        ports.update(dict.fromkeys(roots, owner.port))
    return RegistryState(owners, ports)


def release(state: RegistryState, pid: int) -> RegistryState:
    """`state` without the entries of the instance `pid`; the ports it used stay remembered."""
    return replace(state, owners={r: o for r, o in state.owners.items() if o.pid != pid})


def owner_for(state: RegistryState, root: str) -> tuple[str, Owner] | None:
    """The owned directory containing `root` (the deepest, so a project's own owner beats its folder's)."""
    best: tuple[str, Owner] | None = None
    for owned, owner in state.owners.items():
        if (root == owned or root.startswith(owned.rstrip("/") + "/")) and (best is None or len(owned) > len(best[0])):
            best = (owned, owner)
    return best
