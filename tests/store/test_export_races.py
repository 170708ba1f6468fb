"""An export directory swapped for a symlink while `export` runs never leads a write out (issue 22, #8).

The export used to check the directory's real path, then write by path: a directory swapped for a
symlink to an outside directory between the two sent files there (12 files in 2,239 calls). Here
a thread swaps it back and forth as fast as it can while exports run, and the outside directory
must stay empty.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from test_transfer import new_store

from homeport.errors import HomeportError
from homeport.store import decisions
from homeport.store.transfer import export_memory

EXPORTS = 3000
DEADLINE_S = 40.0


class Swapper(threading.Thread):
    """Swaps `place` for a symlink to `outside` and back, until stopped."""

    def __init__(self, place: Path, outside: Path) -> None:
        super().__init__(daemon=True)
        self.place, self.outside, self.hold = place, outside, place.with_name(place.name + ".hold")
        self.stop = threading.Event()
        self.swaps = 0

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                os.rename(self.place, self.hold)
            except OSError:
                continue  # the export is creating it again
            try:
                os.symlink(self.outside, self.place, target_is_directory=True)
            except FileExistsError:
                pass  # the export made a new directory meanwhile
            else:
                self.swaps += 1
                os.unlink(self.place)
            try:
                os.rename(self.hold, self.place)
            except OSError:
                shutil.rmtree(self.hold)


@pytest.mark.parametrize("depth", ["exports", "exports/today"], ids=["the directory", "a parent of it"])
def test_an_export_directory_swapped_for_a_symlink_never_leads_a_write_outside(migrated_db, tmp_path, depth):
    root = tmp_path / "alpha"
    store = new_store(root, migrated_db)
    decisions.log_decision(store, "Use Stripe", rationale="cards")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "today").mkdir()
    (root / depth).mkdir(parents=True)
    swapper = Swapper(root / "exports", outside)
    written = refused = 0
    started = time.monotonic()
    swapper.start()
    try:
        for _ in range(EXPORTS):
            try:
                export_memory(store, root, output_dir=depth)
                written += 1
            except HomeportError:
                refused += 1
            leaked = [p for p in outside.rglob("*") if p.name != "today"]
            assert leaked == [], f"written outside the workspace after {written + refused} exports: {leaked}"
            if time.monotonic() - started > DEADLINE_S:
                break
    finally:
        swapper.stop.set()
        swapper.join(30)
        store.close()
    assert swapper.swaps > 0 and written > 0, (swapper.swaps, written, refused)
