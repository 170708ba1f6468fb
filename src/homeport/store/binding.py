"""One store file, one workspace: the check behind `--store sqlite:///FILE`.

A project's own `.homeport/homeport.db` is its memory by where it lies. A file named on the command
line lies anywhere, and the same server entry may be started from another project: so the first
workspace that opens the file records its key in it (`store_workspace`), and every later opening
compares. A call for another workspace is refused with the name of the one the file holds; nothing
of it is written next to that workspace's memory.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import select

from homeport.errors import StoreHoldsOtherWorkspaceError
from homeport.store._common import now
from homeport.store.schema import store_workspace

if TYPE_CHECKING:
    from homeport.store.database import Store

__all__ = ["bind_workspace", "bound_workspace", "held_by_other"]


def bound_workspace(store: Store) -> str | None:
    """The key of the workspace whose memory the store file holds; None before its first use."""
    with store.read() as conn:
        return conn.execute(select(store_workspace.c.key).where(store_workspace.c.id == 1)).scalar_one_or_none()


def bind_workspace(store: Store, key: str) -> None:
    """Record `key` as the store file's workspace if it has none; refuse any other.

    Raises:
        StoreHoldsOtherWorkspaceError: the file already holds another workspace's memory.
    """
    held = bound_workspace(store)
    if held is None:
        with store.write() as conn:  # writers are serialised: the second of two first calls reads the first's row
            held = conn.execute(select(store_workspace.c.key).where(store_workspace.c.id == 1)).scalar_one_or_none()
            if held is None:
                conn.execute(store_workspace.insert().values(id=1, key=key, bound_at=now()))
                return
    if held != key:
        raise held_by_other(store.path, held, key)


def held_by_other(path: Path, held: str, key: str) -> StoreHoldsOtherWorkspaceError:
    """The refusal of a call for `key` to the store file at `path`, which holds the workspace `held`."""
    return StoreHoldsOtherWorkspaceError(
        f"the store file {path} holds the memory of the workspace {held}, not of {key}: a file named with "
        "--store holds one workspace. Give this project a server entry of its own (or its own "
        "--store sqlite:///FILE), or leave --store out so that each project keeps .homeport/homeport.db"
    )
