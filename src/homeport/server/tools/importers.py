"""`import_from`: bring the memory another server kept into the workspace's memory."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from homeport.errors import InvalidItemError
from homeport.server.catalog import CATALOG, WRITE_IDEMPOTENT, Scan
from homeport.server.pipeline import Call, LocalRequest
from homeport.server.tools import knowledge  # noqa: F401  (listed after the memory tools it imports into)
from homeport.store import Store
from homeport.store.import_memory_jsonl import import_graph, read_graph
from homeport.store.transfer import inside_workspace

__all__: list[str] = []


@CATALOG.tool(
    "memory",
    WRITE_IDEMPOTENT,
    "Import another memory server's data. kind=memory-jsonl: the reference MCP memory server's memory.jsonl "
    "(decision entities -> decisions, pattern/convention entities -> system patterns, others -> custom data "
    "by entity type, relations -> links). Running it again adds nothing. Returns what was created, updated, "
    "unchanged and skipped (with line and reason); dry_run=true changes nothing.",
    write=True,
    create_store=False,
    scan=Scan.CONTENT,
)
def import_from(
    call: Call,
    kind: Literal["memory-jsonl"],
    source: Annotated[str, Field(description="The file, inside the workspace (absolute, or relative to its root).")],
    dry_run: bool = False,
) -> dict[str, Any]:
    path = _source_path(call, source)
    if not path.is_file():
        raise InvalidItemError(f"{path} is not a file; pass the memory server's memory.jsonl")
    graph = read_graph(path)
    call.screen(graph.texts())
    if call.store is not None:
        return import_graph(call.store, graph, dry_run=dry_run)
    if dry_run:  # plan against an empty memory without creating the workspace's store
        with tempfile.TemporaryDirectory(prefix="homeport-dry-run-") as scratch:
            store = Store.open(Path(scratch), create=True)
            assert store is not None
            try:
                return import_graph(store, graph, dry_run=True)
            finally:
                store.close()
    assert call.workspace is not None
    store = call.runtime.store_for(call.workspace, write=True, create=True)
    assert store is not None
    call.store = store  # so the pipeline records a secret override in this store
    return import_graph(store, graph)


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
