"""`import_from`: bring the memory another server kept into the workspace's memory."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from homeport.core.catalog import CATALOG, WRITE_IDEMPOTENT, Scan
from homeport.core.pipeline import Call, LocalRequest
from homeport.core.tools import knowledge  # noqa: F401  (listed after the memory tools it imports into)
from homeport.errors import InvalidItemError
from homeport.store import Store
from homeport.store._importing import Progress
from homeport.store.import_basic_memory import import_basic_memory, read_project
from homeport.store.import_conport import find_database, import_conport, read_conport
from homeport.store.import_markdown import import_instructions, read_instructions
from homeport.store.import_memory_jsonl import import_graph, read_graph
from homeport.store.transfer import inside_workspace

__all__: list[str] = []


@CATALOG.tool(
    "memory",
    WRITE_IDEMPOTENT,
    "Import another tool's memory. kind=memory-jsonl: the reference MCP memory server's memory.jsonl "
    "(decision entities -> decisions, pattern/convention -> system patterns, others -> custom data by type, "
    "relations -> links). kind=conport: ConPort's context_portal/context.db or the directory holding it "
    "(contexts with history, decisions, progress, patterns, custom data, links). kind=markdown: CLAUDE.md, "
    "AGENTS.md, .cursorrules, .github/copilot-instructions.md or a directory holding them; one item per "
    "heading (rules -> system patterns, the rest -> custom data ProjectInstructions) with its source file:line. "
    "kind=basic-memory: a basic-memory project directory (decision notes -> decisions, [decision] observations "
    "-> decisions, [pattern]/[convention] -> system patterns, other notes -> custom data by folder, "
    "relations -> links). "
    "Running it again adds nothing (markdown: updates changed sections). Returns created, updated, unchanged "
    "and skipped (where, why); dry_run=true changes nothing.",
    create_store=False,
    scan=Scan.CONTENT,
)
def import_from(
    call: Call,
    kind: Literal["memory-jsonl", "conport", "markdown", "basic-memory"],
    source: Annotated[
        str,
        Field(description="The file or directory, inside the workspace (absolute, or relative to its root)."),
    ],
    dry_run: bool = False,
) -> dict[str, Any]:
    path = _source_path(call, source)
    texts, run = _READERS[kind](call, path)
    call.screen(texts)
    progress: Progress | None = getattr(call.request, "progress", None)
    if call.store is not None:
        return run(call.store, dry_run, progress)
    if dry_run:  # plan against an empty memory without creating the workspace's store
        with tempfile.TemporaryDirectory(prefix="homeport-dry-run-") as scratch:
            store = Store.open(Path(scratch), create=True)
            assert store is not None
            try:
                return run(store, True, progress)
            finally:
                store.close()
    assert call.workspace is not None
    store = call.runtime.store_for(call.workspace, write=True, create=True)
    assert store is not None
    call.store = store  # so the pipeline records a secret override in this store
    return run(store, False, progress)


Run = Callable[[Store, bool, "Progress | None"], dict[str, Any]]


def _memory_jsonl(call: Call, path: Path) -> tuple[Any, Run]:
    if not path.is_file():
        raise InvalidItemError(f"{path} is not a file; pass the memory server's memory.jsonl")
    graph = read_graph(path)
    return graph.texts(), lambda store, dry_run, progress: import_graph(
        store, graph, dry_run=dry_run, progress=progress
    )


def _conport(call: Call, path: Path) -> tuple[Any, Run]:
    database = find_database(path)
    if not database.is_file():
        raise InvalidItemError(
            f"{path} is neither ConPort's context.db nor a directory with context_portal/context.db in it; "
            "pass the workspace ConPort ran in, or its context_portal/context.db"
        )
    source = read_conport(database)
    return source.texts(), lambda store, dry_run, progress: import_conport(
        store, source, dry_run=dry_run, progress=progress
    )


def _markdown(call: Call, path: Path) -> tuple[Any, Run]:
    local = isinstance(call.request, LocalRequest)
    inside = path == call.root or call.root in path.parents
    base = call.root if inside else None
    found = read_instructions(path, base=base, within=None if local else call.root)
    return found.texts(), lambda store, dry_run, progress: import_instructions(
        store, found, dry_run=dry_run, progress=progress
    )


def _basic_memory(call: Call, path: Path) -> tuple[Any, Run]:
    local = isinstance(call.request, LocalRequest)
    project = read_project(path, within=None if local else call.root)
    return project.texts(), lambda store, dry_run, progress: import_basic_memory(
        store, project, dry_run=dry_run, progress=progress
    )


_READERS: dict[str, Callable[[Call, Path], tuple[Any, Run]]] = {
    "memory-jsonl": _memory_jsonl,
    "conport": _conport,
    "markdown": _markdown,
    "basic-memory": _basic_memory,
}


def _source_path(call: Call, source: str) -> Path:
    # An agent may only read files of its workspace; the local user at a shell may name any of theirs.
    if isinstance(call.request, LocalRequest):
        return Path(source).expanduser().absolute()
    try:
        return inside_workspace(call.root, source, source)
    except InvalidItemError:
        raise InvalidItemError(
            f"source {source!r} lies outside the workspace {call.root}; copy the file into it, or run "
            "`homeport import-from` in a shell, which reads any of your files"
        ) from None
