"""The dashboard's item page shows each citation with its status now, and nothing for items without any."""

from __future__ import annotations

import html
import subprocess
from pathlib import Path

import pytest

from homeport.store import citations, decisions

pytestmark = pytest.mark.anyio


def git_repository(root: Path) -> None:
    (root / ".git").rmdir()
    (root / "retry.py").write_text("def schedule(job):\n    for attempt in range(3):\n        job.run(attempt)\n")
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "first"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=root, check=True)


async def test_an_item_page_lists_its_citations_with_their_status(make_app, client_for, project: Path):
    git_repository(project)
    app, runtime = make_app()
    store = runtime.stores.get(project, create=True)
    from homeport.citations.worktree import WorkTree
    from homeport.core.citing import anchor_row

    anchor = anchor_row(WorkTree(project).anchor("retry.py", lines="1-3"))
    cited = decisions.log_decision(store, "Retries back off", citations=[anchor])
    plain = decisions.log_decision(store, "No citations here")
    (project / "retry.py").write_text("import time\n" + (project / "retry.py").read_text())
    client = client_for(app)
    page = await client.get("/ui/item", params={"ws": str(project), "type": "decision", "id": str(cited["id"])})
    assert page.status_code == 200, page.text
    section = html.unescape(page.text.split('id="citations"')[1].split("</section>")[0])
    assert "moved" in section and "retry.py:1-3" in section and "retry.py:2-4" in section
    assert "def schedule(job):" in section
    other = await client.get("/ui/item", params={"ws": str(project), "type": "decision", "id": str(plain["id"])})
    assert 'id="citations"' not in other.text
    assert citations.rows_of(store, "decision", [plain["id"]]) == {}
