"""System patterns, links between items, and a search index that knows categories and times.

Revision ID: 0002
Revises: 0001

The FTS5 table cannot gain columns in place, so it is rebuilt and refilled from the items.
"""

import json

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_TYPE_CODES = {
    t: n
    for n, t in enumerate(
        ("decision", "progress", "system_pattern", "custom_data", "product_context", "active_context"), start=1
    )
}
# Frozen here on purpose: a migration must not change when the code's DDL moves on.
_FTS = (
    "CREATE VIRTUAL TABLE search_index USING fts5(item_type UNINDEXED, item_id UNINDEXED, "
    "category UNINDEXED, updated_at UNINDEXED, title, body, tags, tokenize='porter unicode61', "
    "prefix='2 3 4')"
)


def upgrade() -> None:
    op.create_table(
        "system_patterns",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(300), nullable=False),
        sa.Column("name_key", sa.String(300), nullable=False),
        sa.Column("description", sa.Text, nullable=False),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.Column("updated_at", sa.String(32), nullable=False),
        sa.UniqueConstraint("name_key", name="uq_system_patterns_name_key"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "links",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("source_type", sa.String(32), nullable=False),
        sa.Column("source_id", sa.Integer, nullable=False),
        sa.Column("target_type", sa.String(32), nullable=False),
        sa.Column("target_id", sa.Integer, nullable=False),
        sa.Column("relationship", sa.String(100), nullable=False),
        sa.Column("description", sa.Text),
        sa.Column("created_at", sa.String(32), nullable=False),
        sa.UniqueConstraint(
            "source_type", "source_id", "target_type", "target_id", "relationship", name="uq_links_edge"
        ),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_links_source", "links", ["source_type", "source_id"])
    op.create_index("ix_links_target", "links", ["target_type", "target_id"])
    op.create_index("ix_decisions_updated", "decisions", ["updated_at"])
    op.create_index("ix_progress_updated", "progress", ["updated_at"])
    op.create_index("ix_custom_data_updated", "custom_data", ["updated_at"])
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_index()


def _rebuild_index() -> None:
    bind = op.get_bind()
    op.execute("DROP TABLE search_index")
    op.execute(_FTS)
    tags: dict[tuple[str, int], list[str]] = {}
    for item_type, item_id, tag in bind.execute(sa.text("SELECT item_type, item_id, tag FROM item_tags")):
        tags.setdefault((item_type, item_id), []).append(tag)
    insert = sa.text(
        "INSERT INTO search_index (rowid, item_type, item_id, category, updated_at, title, body, tags) "
        "VALUES (:r, :t, :i, :c, :u, :ti, :b, :g)"
    )
    rows = []
    for r in bind.execute(sa.text("SELECT id, summary, rationale, implementation_details, updated_at FROM decisions")):
        body = "\n".join(x for x in (r.rationale, r.implementation_details) if x)
        rows.append(
            {
                "t": "decision",
                "i": r.id,
                "c": None,
                "u": r.updated_at,
                "ti": r.summary,
                "b": body,
                "g": " ".join(tags.get(("decision", r.id), [])),
            }
        )
    for r in bind.execute(sa.text("SELECT id, status, description, updated_at FROM progress")):
        rows.append(
            {
                "t": "progress",
                "i": r.id,
                "c": None,
                "u": r.updated_at,
                "ti": r.description[:120],
                "b": f"{r.description}\n{r.status}",
                "g": "",
            }
        )
    for r in bind.execute(sa.text("SELECT id, category, key, value, updated_at FROM custom_data")):
        value = json.loads(r.value)
        body = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        rows.append(
            {
                "t": "custom_data",
                "i": r.id,
                "c": r.category,
                "u": r.updated_at,
                "ti": f"{r.category}: {r.key}",
                "b": body,
                "g": "",
            }
        )
    for r in bind.execute(sa.text("SELECT kind, content, updated_at FROM contexts")):
        rows.append(
            {
                "t": f"{r.kind}_context",
                "i": 1,
                "c": None,
                "u": r.updated_at,
                "ti": f"{r.kind} context",
                "b": r.content,
                "g": "",
            }
        )
    for row in rows:  # the fixed rowid of each item (homeport.store.search.index_rowid, frozen here)
        row["r"] = (row["i"] << 3) | _TYPE_CODES[row["t"]]
    if rows:
        bind.execute(insert, rows)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TABLE search_index")
        op.execute(
            "CREATE VIRTUAL TABLE search_index USING fts5("
            "item_type UNINDEXED, item_id UNINDEXED, title, body, tags, tokenize='porter unicode61')"
        )
    for index, table in (
        ("ix_custom_data_updated", "custom_data"),
        ("ix_progress_updated", "progress"),
        ("ix_decisions_updated", "decisions"),
        ("ix_links_target", "links"),
        ("ix_links_source", "links"),
    ):
        op.drop_index(index, table_name=table)
    op.drop_table("links")
    op.drop_table("system_patterns")
