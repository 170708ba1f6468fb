"""Where a workspace's store lives: known without loading SQLAlchemy (`homeport where` needs only this)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["STORE_DIRNAME", "STORE_FILENAME", "store_path_for"]

STORE_DIRNAME = ".homeport"
STORE_FILENAME = "homeport.db"


def store_path_for(root: Path) -> Path:
    """The store file of the workspace at `root` (it may not exist yet)."""
    return root / STORE_DIRNAME / STORE_FILENAME
