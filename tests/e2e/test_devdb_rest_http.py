"""DevDB's REST paths on a real `serve --http --auth`: wired by the composition root, guarded as /mcp is."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import httpx2
import pytest

from homeport.files.directory import DirectoryFile
from homeport.files.tokens import TokenStore

from ._serving import serving
from ._support import make_project

pytestmark = [pytest.mark.slow]


def test_a_served_owner_answers_the_rest_paths_only_to_a_token_and_never_writes(tmp_path):
    tmp = Path(os.path.realpath(tmp_path))
    app = make_project(tmp / "app")
    db = sqlite3.connect(app / "db.sqlite3")
    db.execute("CREATE TABLE books (id INTEGER PRIMARY KEY, title TEXT)")
    db.execute("INSERT INTO books (title) VALUES ('Dune')")
    db.commit()
    db.close()
    directory = DirectoryFile(tmp / "data" / "directory.toml")
    directory.add_organization("acme")
    directory.add_agent("acme", "ada")
    directory.add_workspace_root("acme", str(tmp))
    token = TokenStore(tmp / "data" / "tokens.json").add("ada")
    args = ["--allow-root", str(tmp), "--data-dir", str(tmp / "data"), "--auth"]
    with serving(args, cwd=tmp, log=tmp / "server.log") as served, httpx2.Client(timeout=30) as http:
        ws = {"X-Workspace-Id": str(app)}
        assert http.get(f"{served.base}/tables", headers=ws).status_code == 401
        auth = {**ws, "Authorization": f"Bearer {token}"}
        tables = http.get(f"{served.base}/tables", headers=auth)
        assert tables.status_code == 200 and "books" in tables.json()["tables"]
        write = http.post(f"{served.base}/query", headers=auth, json={"query": "DELETE FROM books"})
        assert write.status_code in (400, 403) and write.json()["error"]["code"]
        page = http.post(
            f"{served.base}/query", headers={**auth, "Origin": "http://evil.example"}, json={"query": "SELECT 1"}
        )
        assert page.status_code == 403
        rows = http.post(f"{served.base}/query", headers=auth, json={"query": "SELECT title FROM books"})
        assert rows.json()["result"] == [{"title": "Dune"}]
