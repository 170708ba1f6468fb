"""A burst of queries for one workspace waits its turn over HTTP; none is refused for being one too many.

One workspace's queries may hold only a few worker threads (issue 22, finding 9): the rest must wait
on the event loop, where waiting costs nothing, not be refused. An agent that fires twelve quick
queries in parallel gets twelve answers.
"""

from __future__ import annotations

import sqlite3

import anyio
import pytest

from homeport.core.catalog import CATALOG
from homeport.core.pipeline import CallPipeline, LocalRequest

pytestmark = pytest.mark.anyio

BURST = 16
# Long enough that the whole burst is in flight at once: ~0.1-0.3 s each on this machine.
COUNT_TO = 300_000


async def test_a_burst_of_queries_for_one_workspace_all_get_answers(runtime_factory, tmp_path):
    root = tmp_path / "app"
    (root / ".git").mkdir(parents=True)
    with sqlite3.connect(root / "db.sqlite3") as conn:
        conn.execute("CREATE TABLE t (x)")
    (root / ".homeport").mkdir()
    (root / ".homeport" / "config.toml").write_text('[database]\nurl = "sqlite:///db.sqlite3"\n')
    runtime = runtime_factory(transport="http", allow_roots=(tmp_path,))
    pipeline = CallPipeline(runtime)
    query = (
        f"WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < {COUNT_TO}) SELECT count(*) FROM c"
    )
    answers: list[object] = []

    async def one() -> None:
        result = await pipeline.call(CATALOG["run_query"], {"query": query, "workspace": str(root)}, LocalRequest())
        answers.append(result["rows"])

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            for _ in range(BURST):
                group.start_soon(one)
    assert answers == [[[COUNT_TO]]] * BURST
