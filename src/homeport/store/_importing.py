"""What the importers of other tools' memory share: the summary they return and the one transaction.

Every importer writes in one transaction, rolled back for a dry run, and returns the same summary:
`created` by item type, `updated`, `unchanged`, `skipped` (each with where, what and why) and
`items`, so the shell renders any kind the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection

from homeport.errors import InvalidItemError
from homeport.store.database import Store

__all__ = ["CREATED_TYPES", "MAX_LISTED", "Progress", "Summary", "import_transaction"]

# (done, total): called as rows are written, so the shell can draw a progress bar on large sources.
Progress = Callable[[int, int], None]
# Items named one by one in the summary; the counts always cover all of them.
MAX_LISTED = 200
CREATED_TYPES = ("product_context", "active_context", "decision", "progress", "system_pattern", "custom_data", "link")


class _DryRun(Exception):
    pass


class Summary:
    """The summary an import returns, filled while it runs."""

    def __init__(self, kind: str, source: Path, *, dry_run: bool, progress: Progress | None, total: int) -> None:
        self.data: dict[str, Any] = {
            "source": str(source),
            "kind": kind,
            "dry_run": dry_run,
            "created": dict.fromkeys(CREATED_TYPES, 0),
            "updated": 0,
            "unchanged": 0,
            "skipped": [],
            "items": [],
        }
        self._progress, self._total, self._done = progress, total, 0

    def skip(self, where: str, item: str, reason: str) -> None:
        self.data["skipped"].append({"where": where, "item": item, "reason": reason})

    def count(self, item_type: str, action: str, item: dict[str, Any]) -> None:
        """Record one item's outcome: created (by type), updated or unchanged."""
        if action == "created":
            self.data["created"][item_type] += 1
        else:
            self.data[action] += 1
        self.listed(item_type, action, item)

    def listed(self, item_type: str, action: str, item: dict[str, Any]) -> None:
        """Name the item in `items`; past MAX_LISTED only counted, so a large source's result stays small."""
        if len(self.data["items"]) < MAX_LISTED:
            self.data["items"].append({"type": item_type, "action": action, **item})
        else:
            self.data["items_left_off"] = self.data.get("items_left_off", 0) + 1

    def step(self) -> None:
        self._done += 1
        if self._progress is not None:
            self._progress(self._done, self._total)

    @contextmanager
    def item(self, conn: Connection, where: str, item: str) -> Iterator[None]:
        """Write one item in a savepoint: one the store refuses (too large, empty, a bad tag) is undone and
        listed in `skipped` with the store's reason, and the rest of the import goes on."""
        conn.exec_driver_sql("SAVEPOINT import_item")
        try:
            yield
        except InvalidItemError as exc:
            conn.exec_driver_sql("ROLLBACK TO SAVEPOINT import_item")
            self.skip(where, item, str(exc))
        finally:
            conn.exec_driver_sql("RELEASE SAVEPOINT import_item")


def import_transaction(store: Store, summary: Summary, body: Callable[[Connection], None]) -> dict[str, Any]:
    """Run `body` in one write transaction, rolled back when the summary is a dry run; returns the summary."""
    try:
        with store.write() as conn:
            body(conn)
            if summary.data["dry_run"]:
                raise _DryRun
    except _DryRun:
        pass
    return summary.data
