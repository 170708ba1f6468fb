"""PostgreSQL's full-text index: a table with a weighted tsvector column and a GIN index over it.

Revision ID: 0003
Revises: 0002

SQLite's index is the FTS5 table of 0002; nothing changes there. On PostgreSQL the rowid is the
same fixed number per item as in FTS5 (homeport.store.search.index_rowid). `document` is written
with each row (homeport.store.search): title weight A, tags B, body D, from the text with its
diacritics removed, as FTS5's unicode61 tokenizer does.
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# Frozen here on purpose: a migration must not change when the code's DDL moves on.
_TABLE = """
CREATE TABLE search_index (
    rowid BIGINT PRIMARY KEY,
    item_type VARCHAR(32) NOT NULL,
    item_id INTEGER NOT NULL,
    category TEXT,
    updated_at VARCHAR(32),
    title TEXT NOT NULL DEFAULT '',
    body TEXT NOT NULL DEFAULT '',
    tags TEXT NOT NULL DEFAULT '',
    document TSVECTOR NOT NULL
)
"""


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(_TABLE)
    op.execute("CREATE INDEX ix_search_index_document ON search_index USING gin (document)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TABLE search_index")
