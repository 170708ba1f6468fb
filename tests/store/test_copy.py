"""`homeport copy`: one workspace's memory from SQLite to PostgreSQL and back, identical, checked before commit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from homeport.store import Store, contexts, custom_data, decisions, links, patterns, progress
from homeport.store.transfer import _collect

pytestmark = pytest.mark.postgres
HOMEPORT = str(Path(sys.executable).parent / "homeport")


def _homeport(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HOMEPORT, *args], capture_output=True, text=True, timeout=120)


def _fill(store: Store) -> None:
    d = decisions.log_decision(store, "Copy memory between stores", rationale="teams move to PostgreSQL", tags=["db"])
    decisions.delete_decision(store, decisions.log_decision(store, "gone")["id"])  # ids with a gap
    parent = progress.log_progress(store, "TODO", "copy")
    progress.log_progress(store, "DONE", "verify", parent_id=parent["id"])
    p = patterns.log_system_pattern(store, "Checksums", "compare before commit", tags=["integrity"])
    custom_data.log_custom_data(store, "ProjectGlossary", "café", {"meaning": "a place", "n": [1, 2.5, None]})
    contexts.update_context(store, "product", content={"goal": "team memory"})
    contexts.update_context(store, "product", patch={"stage": "beta"})
    links.link_items(store, "decision", d["id"], "system_pattern", p["id"], "implements")


def test_a_workspace_goes_to_postgres_and_back_unchanged(tmp_path, store_postgres_url):
    (tmp_path / "shop").mkdir()
    original = Store.open(tmp_path / "shop", create=True)
    _fill(original)
    before = _collect(original)
    original.close()

    done = _homeport("copy", "--from", f"sqlite:{tmp_path / 'shop'}", "--to", store_postgres_url)
    assert done.returncode == 0, done.stderr
    assert "copied 8 items (1 decisions, 2 progress, 1 system_patterns, 1 custom_data, 2 product_context, 1 links)" in (
        done.stdout
    )
    assert "matches" in done.stdout

    again = _homeport("copy", "--from", f"sqlite:{tmp_path / 'shop'}", "--to", store_postgres_url)
    assert again.returncode == 1 and "already holds memory; pass --replace" in again.stderr
    assert (
        _homeport("copy", "--from", f"sqlite:{tmp_path / 'shop'}", "--to", store_postgres_url, "--replace").returncode
        == 0
    )

    (tmp_path / "back").mkdir()
    back = _homeport(
        "copy", "--from", store_postgres_url, "--key", str(tmp_path / "shop"), "--to", f"sqlite:{tmp_path / 'back'}"
    )
    assert back.returncode == 0, back.stderr
    returned = Store.open(tmp_path / "back", create=False)
    assert returned is not None
    assert _collect(returned) == before  # ids, uids, tags, links, every context version
    returned.close()


def test_copying_a_workspace_that_has_no_memory_says_so(tmp_path, store_postgres_url):
    done = _homeport("copy", "--from", store_postgres_url, "--key", "acme/none", "--to", f"sqlite:{tmp_path}")
    assert done.returncode == 1 and "holds no memory for acme/none" in done.stderr
