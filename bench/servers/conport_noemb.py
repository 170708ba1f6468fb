"""ConPort without embeddings: its own server, with the embedding and vector-store steps made no-ops.

Run by the ConPort venv's interpreter (bench/.venvs/conport/bin/python) with ConPort's own command
line. ConPort's handlers call `embedding_service.get_embedding` and
`vector_store_service.upsert_item_embedding` after each write and catch their errors; replacing
both with no-ops leaves exactly the SQLite work (and the tool plumbing), which is the "ConPort
without embeddings" that issue 6 compares writes against.
"""

import sys

from context_portal_mcp.core import embedding_service
from context_portal_mcp.db import vector_store_service

embedding_service.get_embedding = lambda text, model_name=None: []
vector_store_service.upsert_item_embedding = lambda *args, **kwargs: None
vector_store_service.delete_item_embedding = lambda *args, **kwargs: None

from context_portal_mcp.main import cli_entry_point  # noqa: E402

if __name__ == "__main__":
    sys.exit(cli_entry_point())
