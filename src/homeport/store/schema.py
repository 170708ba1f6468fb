"""The tables of one workspace's memory, in SQLAlchemy Core (one code path for every dialect).

Ids are never reused after a delete (AUTOINCREMENT), so an id an agent remembers or an export
carries never comes to mean another item. Timestamps are ISO 8601 UTC strings (they sort, export
and round-trip exactly); JSON documents and values are stored as text. The full-text index is
dialect-specific and lives in the migrations and `search.py`, not here.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
)

__all__ = [
    "changesets",
    "context_history",
    "contexts",
    "copy_checkpoint",
    "custom_data",
    "decisions",
    "item_branches",
    "item_citations",
    "item_states",
    "item_tags",
    "item_uids",
    "item_vectors",
    "item_versions",
    "item_writers",
    "links",
    "metadata",
    "progress",
    "store_workspace",
    "sync_conflicts",
    "sync_items",
    "sync_state",
    "system_patterns",
]

metadata = MetaData()


def _place_columns() -> list[Column[str]]:
    """Where a write was made (migration 0010): branch (NULL when detached), HEAD commit, work tree; all
    NULL outside a git work tree, and for writes made before revision 0010 (on the default branch)."""
    return [
        Column("branch", String(255), nullable=True),
        Column("head_commit", String(64), nullable=True),
        Column("worktree", Text, nullable=True),
    ]


contexts = Table(
    "contexts",
    metadata,
    Column("kind", String(16), primary_key=True),  # "product" | "active"
    Column("content", Text, nullable=False),
    Column("version", Integer, nullable=False),
    Column("updated_at", String(32), nullable=False),
)

context_history = Table(
    "context_history",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("kind", String(16), nullable=False),
    Column("version", Integer, nullable=False),
    Column("content", Text, nullable=False),
    Column("changed_at", String(32), nullable=False),
    UniqueConstraint("kind", "version", name="uq_context_history_kind_version"),
    sqlite_autoincrement=True,
)

decisions = Table(
    "decisions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("summary", Text, nullable=False),
    Column("rationale", Text),
    Column("implementation_details", Text),
    Column("created_at", String(32), nullable=False),
    Column("updated_at", String(32), nullable=False),
    Index("ix_decisions_updated", "updated_at"),
    sqlite_autoincrement=True,
)

progress = Table(
    "progress",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("status", String(64), nullable=False),
    Column("description", Text, nullable=False),
    Column("parent_id", Integer, ForeignKey("progress.id"), nullable=True),
    Column("created_at", String(32), nullable=False),
    Column("updated_at", String(32), nullable=False),
    Index("ix_progress_parent", "parent_id"),
    Index("ix_progress_status", "status"),
    Index("ix_progress_updated", "updated_at"),
    sqlite_autoincrement=True,
)

custom_data = Table(
    "custom_data",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("category", String(200), nullable=False),
    Column("key", String(500), nullable=False),
    Column("value", Text, nullable=False),
    Column("created_at", String(32), nullable=False),
    Column("updated_at", String(32), nullable=False),
    UniqueConstraint("category", "key", name="uq_custom_data_category_key"),
    Index("ix_custom_data_updated", "updated_at"),
    sqlite_autoincrement=True,
)

# `name_key` is the case-folded name: logging an existing name (any case) updates that pattern.
system_patterns = Table(
    "system_patterns",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(300), nullable=False),
    Column("name_key", String(300), nullable=False),
    Column("description", Text, nullable=False),
    Column("created_at", String(32), nullable=False),
    Column("updated_at", String(32), nullable=False),
    UniqueConstraint("name_key", name="uq_system_patterns_name_key"),
    sqlite_autoincrement=True,
)

# A typed edge between any two items; contexts are addressed with id 1.
links = Table(
    "links",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("source_type", String(32), nullable=False),
    Column("source_id", Integer, nullable=False),
    Column("target_type", String(32), nullable=False),
    Column("target_id", Integer, nullable=False),
    Column("relationship", String(100), nullable=False),
    Column("description", Text),
    Column("created_at", String(32), nullable=False),
    UniqueConstraint("source_type", "source_id", "target_type", "target_id", "relationship", name="uq_links_edge"),
    Index("ix_links_source", "source_type", "source_id"),
    Index("ix_links_target", "target_type", "target_id"),
    sqlite_autoincrement=True,
)

# Tags of any item type; `tag_key` is the case-folded form used for matching and uniqueness.
item_tags = Table(
    "item_tags",
    metadata,
    Column("item_type", String(32), nullable=False),
    Column("item_id", Integer, nullable=False),
    Column("tag", String(200), nullable=False),
    Column("tag_key", String(200), nullable=False),
    PrimaryKeyConstraint("item_type", "item_id", "tag_key", name="pk_item_tags"),
    Index("ix_item_tags_key", "tag_key"),
)


# Who wrote each version of an item (`homeport.store.provenance`): one row per write; `version` is
# the context version for contexts, NULL for items that keep only their latest version.
item_writers = Table(
    "item_writers",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("item_type", String(32), nullable=False),
    Column("item_id", Integer, nullable=False),
    Column("version", Integer, nullable=True),
    Column("principal", String(200), nullable=False),
    Column("client", String(200), nullable=True),
    Column("client_version", String(100), nullable=True),
    Column("tool", String(100), nullable=True),
    Column("written_at", String(32), nullable=False),
    *_place_columns(),
    Index("ix_item_writers_item", "item_type", "item_id"),
    sqlite_autoincrement=True,
)

# Every version of every decision, progress entry, system pattern and custom data entry
# (`homeport.store.versions`): the item's fields as that write left them (JSON), who wrote it (NULL
# principal: nobody was named, e.g. a script calling the store) and when. A delete adds a version with
# `deleted` true (the fields as they were), so the history outlives the item until it is purged.
# The contexts keep theirs in `context_history`. No AUTOINCREMENT id: the key is (type, id, version).
item_versions = Table(
    "item_versions",
    metadata,
    Column("item_type", String(32), nullable=False),
    Column("item_id", Integer, nullable=False),
    Column("version", Integer, nullable=False),
    Column("fields", Text, nullable=False),
    Column("deleted", Boolean, nullable=False),
    Column("principal", String(200), nullable=True),
    Column("client", String(200), nullable=True),
    Column("client_version", String(100), nullable=True),
    Column("tool", String(100), nullable=True),
    Column("written_at", String(32), nullable=False),
    *_place_columns(),
    PrimaryKeyConstraint("item_type", "item_id", "version", name="pk_item_versions"),
)

# Decisions and system patterns first written on a branch other than the default branch
# (`homeport.store.branches`, migration 0010): the branch (NULL: a detached HEAD), the commit HEAD was
# at (NULL: the branch had no commit yet), whether that commit was already on the default branch then
# (`fresh`: the branch's later commits stand for its work), the work tree, and `promoted_at` once
# `homeport promote` made them visible everywhere. Items without a row are seen on every branch.
item_branches = Table(
    "item_branches",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("item_type", String(32), nullable=False),
    Column("item_id", Integer, nullable=False),
    Column("branch", String(255), nullable=True),
    Column("head_commit", String(64), nullable=True),
    Column("fresh", Boolean, nullable=False),
    Column("worktree", Text, nullable=True),
    Column("written_at", String(32), nullable=False),
    Column("promoted_at", String(32), nullable=True),
    UniqueConstraint("item_type", "item_id", name="uq_item_branches_item"),
    Index("ix_item_branches_branch", "branch"),
    sqlite_autoincrement=True,
)

# Citations from an item to the project's code (`homeport.store.citations`, migration 0009): one row per
# citation, in the order given, holding its anchor as written (path relative to the workspace root,
# lines, the file's git blob id, each normalised line's key, the span's SHA-256, a short quote, the
# symbol around it). Checked against the files on every read (`homeport.citations`), never stored as
# a status: the code changes without the store knowing. `confirmed_at`: the last confirm_citations.
item_citations = Table(
    "item_citations",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("item_type", String(32), nullable=False),
    Column("item_id", Integer, nullable=False),
    Column("position", Integer, nullable=False),
    Column("path", Text, nullable=False),
    Column("start_line", Integer, nullable=False),
    Column("end_line", Integer, nullable=False),
    Column("symbol", Text, nullable=True),
    Column("blob_id", String(64), nullable=True),
    Column("span_hash", String(64), nullable=False),
    Column("line_keys", Text, nullable=False),
    Column("span_chars", Integer, nullable=False),
    Column("quote", Text, nullable=False),
    Column("cited_at", String(32), nullable=False),
    Column("confirmed_at", String(32), nullable=True),
    Index("ix_item_citations_item", "item_type", "item_id", "position"),
    sqlite_autoincrement=True,
)

# The identity of an item across machines (a ULID), beside the short per-store id agents use. Kept out
# of the item tables so every tool result stays as it was; exports carry it and imports keep it.
item_uids = Table(
    "item_uids",
    metadata,
    Column("item_type", String(32), nullable=False),
    Column("item_id", Integer, nullable=False),
    Column("uid", String(26), nullable=False),
    PrimaryKeyConstraint("item_type", "item_id", name="pk_item_uids"),
    UniqueConstraint("uid", name="uq_item_uids_uid"),
    sqlite_with_rowid=False,  # one B-tree fewer to write with each new item (measured: 94 -> 89 us a decision)
)

# Syncing the memory through git (`homeport.sync`): one row per item file of the memory ref this store has
# written or applied. `doc` is the file's name without `.json` (`decision/<uid>`); `item_id` the local item,
# NULL once it is deleted (its file stays, as a tombstone); `digest` the item as this store last exported or
# applied it, so a sync reads every item but rewrites only those whose digest changed; `clocks` the hybrid
# logical clock of each field's value (JSON), the newest of two concurrent values wins a merge.
sync_items = Table(
    "sync_items",
    metadata,
    Column("doc", String(120), primary_key=True),
    Column("item_type", String(32), nullable=False),
    Column("item_id", Integer, nullable=True),
    Column("digest", String(64), nullable=False),
    Column("clocks", Text, nullable=False),
    Index("ix_sync_items_item", "item_type", "item_id"),
)

# The sync's own state (replica id, the last hybrid logical clock handed out, the remote ref in use).
sync_state = Table(
    "sync_state",
    metadata,
    Column("name", String(100), primary_key=True),
    Column("value", Text, nullable=False),
)

# Concurrent edits of one field that a merge settled (the newer value won): the losing value stays in the
# item's versions; this row is what `homeport sync`, where_am_i and the dashboard report until a person has
# looked (`resolved_at`).
sync_conflicts = Table(
    "sync_conflicts",
    metadata,
    Column("doc", String(120), nullable=False),
    Column("field", String(100), nullable=False),
    Column("lost", String(40), nullable=False),  # the clock of the value that lost
    Column("won", String(40), nullable=False),
    Column("lost_value", Text, nullable=True),  # JSON
    Column("detected_at", String(32), nullable=False),
    Column("resolved_at", String(32), nullable=True),
    PrimaryKeyConstraint("doc", "field", "lost", name="pk_sync_conflicts"),
)

# Search by meaning: one row per chunk of an item's current text, for one embedding model. Rows are
# only inserted and deleted (never updated), so `id` only grows and (max id, count) names the set of
# rows exactly (homeport.store.vectors keeps a copy in memory keyed by it). Writing an item deletes
# its rows in the same transaction; a background worker embeds the item again (homeport.embedding).
item_vectors = Table(
    "item_vectors",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("item_type", String(32), nullable=False),
    Column("item_id", Integer, nullable=False),
    Column("chunk", Integer, nullable=False),
    Column("model", String(100), nullable=False),
    Column("vector", LargeBinary, nullable=False),  # float32, little-endian, L2-normalised
    Index("ix_item_vectors_item", "item_type", "item_id", "model", "chunk"),
    sqlite_autoincrement=True,
)

# The workspace a store file named on the command line (`--store sqlite:///FILE`) holds (at most one row,
# id 1): written by the first call that opens the file, compared by every later one (homeport.store.binding),
# so that one file never holds two workspaces' memory. A project's own .homeport/homeport.db has no row.
store_workspace = Table(
    "store_workspace",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("key", Text, nullable=False),
    Column("bound_at", String(32), nullable=False),
)

# An unfinished `homeport copy` into this workspace (at most one row, id 1): what it copies (`source`
# and the SHA-256 of its memory when the copy began) and how many items of the copy plan are committed.
# While the row exists, the workspace is a partial copy: stores refuse to open it for serving
# (homeport.store.copy_state); the copy deletes the row in the transaction that verified the result.
copy_checkpoint = Table(
    "copy_checkpoint",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("source", Text, nullable=False),
    Column("source_checksum", String(64), nullable=False),
    Column("done", Integer, nullable=False),
    Column("total", Integer, nullable=False),
    Column("started_at", String(32), nullable=False),
    Column("updated_at", String(32), nullable=False),
)

# What the lifecycle of an item says beyond its fields (`homeport.store.lifecycle`): archived (by a tidy
# changeset, or by hand), superseded by another item, valid until a time, pinned (a tidy changeset leaves
# it alone unless forced). An item without a row is none of these, so the table stays small. Hidden items
# (archived, superseded, expired) leave search, get_context and the default lists; their rows stay.
item_states = Table(
    "item_states",
    metadata,
    Column("item_type", String(32), nullable=False),
    Column("item_id", Integer, nullable=False),
    Column("archived", Boolean, nullable=False),
    Column("superseded_type", String(32), nullable=True),
    Column("superseded_id", Integer, nullable=True),
    Column("valid_until", String(32), nullable=True),
    Column("pinned", Boolean, nullable=False),
    Column("changeset_id", Integer, nullable=True),  # the changeset that last set this row
    Column("updated_at", String(32), nullable=False),
    PrimaryKeyConstraint("item_type", "item_id", name="pk_item_states"),
)

# A tidy proposal and what became of it (`homeport.store.tidy`): its entries (each with its reason,
# evidence, operations and whether it is accepted), the version hash of every item it touches when it
# was proposed, and once applied the exact rows it replaced, so that revert puts them back.
changesets = Table(
    "changesets",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("status", String(16), nullable=False),  # proposed | applied | reverted | discarded
    Column("scope", String(64), nullable=True),
    Column("entries", Text, nullable=False),
    Column("hashes", Text, nullable=False),
    Column("before", Text, nullable=True),
    Column("after", Text, nullable=True),
    Column("created_at", String(32), nullable=False),
    Column("created_by", String(200), nullable=True),
    Column("applied_at", String(32), nullable=True),
    Column("applied_by", String(200), nullable=True),
    Column("reverted_at", String(32), nullable=True),
    Column("reverted_by", String(200), nullable=True),
    Index("ix_changesets_status", "status"),
    sqlite_autoincrement=True,
)
