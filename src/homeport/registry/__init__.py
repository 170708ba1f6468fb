"""Which running instance owns which workspace, and on which port: one file per user, under a lock.

Names load on first use (PEP 562): the shell's thin path to the daemon (`homeport.cli._thin`) checks
the daemon's proof with `homeport.registry.proof` alone, and must not pay for the registry file's
lock and HTTP client to do so.
"""

from __future__ import annotations

from homeport._lazy import lazy_names

TYPE_CHECKING = False  # not typing's: the thin path imports no typing (see homeport.cli._thin)
if TYPE_CHECKING:
    from homeport.registry.file import InstanceRegistry, endpoint_for, port_is_free
    from homeport.registry.liveness import Liveness, healthz_pid, pid_running
    from homeport.registry.model import (
        FIRST_PORT,
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

__all__ = [
    "FIRST_PORT",
    "InstanceRegistry",
    "Liveness",
    "Owner",
    "RegistryState",
    "choose_port",
    "claim",
    "decode_state",
    "encode_state",
    "endpoint_for",
    "healthz_pid",
    "owner_for",
    "pid_running",
    "port_is_free",
    "prune",
    "release",
]

_HOME = {
    **dict.fromkeys(("InstanceRegistry", "endpoint_for", "port_is_free"), "homeport.registry.file"),
    **dict.fromkeys(("Liveness", "healthz_pid", "pid_running"), "homeport.registry.liveness"),
    **dict.fromkeys(
        (
            "FIRST_PORT",
            "Owner",
            "RegistryState",
            "choose_port",
            "claim",
            "decode_state",
            "encode_state",
            "owner_for",
            "prune",
            "release",
        ),
        "homeport.registry.model",
    ),
}

__getattr__, __dir__ = lazy_names(__name__, _HOME, __all__)
