"""Which running instance owns which workspace, and on which port: one file per user, under a lock."""

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
