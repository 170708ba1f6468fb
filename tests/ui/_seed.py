"""A seeded project for the dashboard's tests: every item type, two context versions, links two steps deep."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from homeport.core.runtime import Runtime
from homeport.store import Store, contexts, custom_data, decisions, links, patterns, progress

__all__ = ["make_project", "seed", "seed_store"]


def make_project(base: Path, name: str) -> Path:
    root = base / name
    (root / ".git").mkdir(parents=True)
    return root


def seed(runtime: Runtime, root: Path) -> dict[str, Any]:
    store = runtime.stores.get(root, create=True)
    assert store is not None
    return seed_store(store)


def seed_store(store: Store, *, many: bool = False) -> dict[str, Any]:
    """A small memory with every item type, two context versions and links two steps deep; `many`
    adds 120 older decisions, so the decisions are paginated."""
    if many:
        for n in range(120):
            decisions.log_decision(store, f"Earlier decision {n}", tags=["history"])
    wal = decisions.log_decision(
        store, "Use SQLite in WAL mode", rationale="Readers never block the writer.", tags=["storage", "db"]
    )
    pipeline = decisions.log_decision(
        store, "Every tool call takes one pipeline", rationale="No side path.", tags=["arch"]
    )
    task = progress.log_progress(store, "IN_PROGRESS", "Build the dashboard")
    progress.log_progress(store, "DONE", "Render the workspace page", parent_id=task["id"])
    progress.log_progress(store, "BLOCKED", "Screenshots in CI", parent_id=task["id"])
    progress.log_progress(store, "TODO", "Write the release notes")
    pattern = patterns.log_system_pattern(
        store, "One composition root", "Build settings once, pass them down.", tags=["arch"]
    )
    custom_data.log_custom_data(store, "ProjectGlossary", "WAL", "Write-ahead log: readers see a snapshot.")
    custom_data.log_custom_data(store, "limits", "max_body", {"bytes": 4194304})
    contexts.update_context(store, "product", content={"goal": "Project memory for **coding agents**."})
    contexts.update_context(store, "active", content={"focus": "Ship the dashboard", "open": "- screenshots\n- docs"})
    contexts.update_context(store, "active", patch={"focus": "Ship the dashboard this week"})
    links.link_items(store, "decision", wal["id"], "progress", task["id"], "implements")
    links.link_items(store, "progress", task["id"], "system_pattern", pattern["id"], "follows")
    links.link_items(store, "decision", pipeline["id"], "decision", wal["id"], "relates_to")
    return {"wal": wal, "pipeline": pipeline, "task": task, "pattern": pattern}
