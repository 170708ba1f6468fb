"""Issue 22, finding 9: slow or huge project-database queries must not stall the process.

Over HTTP every call runs on one of anyio's worker threads (40 by default, shared by every
call). 60 slow queries for one workspace used to take them all, so an unrelated write waited
until the database pool's 10 s timeout let some go (10.8 s in the issue). And a result was
fetched a hundred rows at a time before the byte cap looked at it: four 32 MiB values held
686 MB. Now one workspace's queries hold a bounded number of threads (over HTTP the rest wait on
the event loop: tests/projectdb/test_query_bursts.py), and rows are fetched as far as the byte
cap needs them.
"""

from __future__ import annotations

import time
import tracemalloc
import uuid
from pathlib import Path

import anyio
import psycopg
import pytest

from homeport.core.catalog import CATALOG
from homeport.core.pipeline import CallPipeline, LocalRequest
from homeport.errors import HomeportError

from .conftest import PG_HOST, PG_PORT, make_app, write_config

SLOW_CALLS = 60
SLEEP_S = 60  # never reached: the test cancels the sleepers once it has measured
POOL_TIMEOUT_S = 10  # how long a call used to wait for a pooled connection, holding its thread
DEADLINE_S = 30


@pytest.fixture
def unprivileged_postgres_url(postgres_database):
    """A login role that may only connect (the recommended setup: no superuser, no file roles)."""
    role = f"homeport_slow_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(host=PG_HOST, port=PG_PORT, user="postgres", dbname="test", autocommit=True) as admin:
        admin.execute(f'CREATE ROLE "{role}" LOGIN')
        admin.execute(f'GRANT CONNECT ON DATABASE "{postgres_database.name}" TO "{role}"')
    try:
        yield f"postgresql://{role}@{PG_HOST}:{PG_PORT}/{postgres_database.name}"
    finally:
        with psycopg.connect(host=PG_HOST, port=PG_PORT, user="postgres", dbname="test", autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,))
            admin.execute(f'REVOKE CONNECT ON DATABASE "{postgres_database.name}" FROM "{role}"')
            admin.execute(f'DROP ROLE IF EXISTS "{role}"')


def _sleepers(admin: psycopg.Connection, role: str) -> int:
    # A plain query runs as a cursor: the server shows the FETCH, not the pg_sleep.
    row = admin.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE usename = %s AND state = 'active'", (role,)
    ).fetchone()
    return int(row[0]) if row else 0


@pytest.mark.postgres
@pytest.mark.anyio
async def test_sixty_slow_queries_for_one_workspace_do_not_delay_an_unrelated_write(
    runtime_factory, tmp_path, unprivileged_postgres_url
):
    role = unprivileged_postgres_url.split("//", 1)[1].split("@", 1)[0]
    slow, warm, other = tmp_path / "slow", tmp_path / "warm", tmp_path / "other"
    for root in (slow, warm, other):
        (root / ".git").mkdir(parents=True)
    write_config(slow, unprivileged_postgres_url, statement_timeout_ms=SLEEP_S * 1000)
    runtime = runtime_factory(transport="http", allow_roots=(tmp_path,))
    pipeline = CallPipeline(runtime)
    query, write = CATALOG["run_query"], CATALOG["log_decision"]
    request = LocalRequest()
    # A first write opens (creates) the workspace's store, which is done on a worker thread.
    baseline_started = time.monotonic()
    await pipeline.call(write, {"summary": "baseline", "workspace": str(warm)}, request)
    baseline = time.monotonic() - baseline_started
    outcomes: list[str] = []

    async def slow_query() -> None:
        try:
            await pipeline.call(query, {"query": f"SELECT pg_sleep({SLEEP_S})", "workspace": str(slow)}, request)
            outcomes.append("ran")
        except HomeportError as exc:
            outcomes.append(exc.code)

    admin = psycopg.connect(host=PG_HOST, port=PG_PORT, user="postgres", dbname="test", autocommit=True)
    try:
        async with anyio.create_task_group() as group:
            for _ in range(SLOW_CALLS):
                group.start_soon(slow_query)
            with anyio.fail_after(DEADLINE_S):
                while _sleepers(admin, role) < 2:
                    await anyio.sleep(0.05)
            started = time.monotonic()
            await pipeline.call(write, {"summary": "unrelated", "workspace": str(other)}, request)
            under_flood = time.monotonic() - started
            # End the sleepers (and any that start later) instead of waiting a minute for them.
            with anyio.fail_after(DEADLINE_S * 4):
                while len(outcomes) < SLOW_CALLS:
                    admin.execute(
                        "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE usename = %s AND state = 'active'",
                        (role,),
                    )
                    await anyio.sleep(0.1)
    finally:
        admin.close()
    assert under_flood < POOL_TIMEOUT_S / 2, (
        f"the write took {under_flood:.1f} s under {SLOW_CALLS} slow queries (baseline {baseline:.2f} s)"
    )
    assert outcomes.count("ran") == 0  # every sleeper was cancelled or refused, none finished by itself
    assert "project_database_error" in outcomes


HUGE_VALUE_MIB = 8
HUGE_ROWS = 8
HUGE_QUERY = {
    "postgresql": (
        f"SELECT g AS n, repeat('x', {HUGE_VALUE_MIB} * 1024 * 1024) AS big FROM generate_series(1, {HUGE_ROWS}) g"
    ),
    "mysql": f"SELECT seq AS n, REPEAT('x', {HUGE_VALUE_MIB} * 1024 * 1024) AS big FROM seq_1_to_{HUGE_ROWS}",
    "sqlite": (
        f"WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < {HUGE_ROWS}) "
        f"SELECT n, replace(hex(zeroblob({HUGE_VALUE_MIB} * 1024 * 512)), '0', 'x') AS big FROM g"
    ),
}


@pytest.mark.parametrize(
    "backend",
    [
        pytest.param("postgresql", marks=pytest.mark.postgres),
        pytest.param("mysql", marks=pytest.mark.mysql, id="mariadb"),
        pytest.param("sqlite"),
    ],
)
def test_rows_past_the_byte_cap_are_never_fetched(request, tmp_path: Path, databases, backend):
    """Eight 8 MiB values: the first is cut to the cap, the other seven are never read from the cursor.

    Before the fix the peak of traced memory was 80 MiB on each backend (all eight values).
    """
    app = make_app(request, tmp_path, backend)
    app.configure(max_result_bytes=4096)
    tracemalloc.start()
    try:
        result = databases.run_query(app.root, HUGE_QUERY[backend])
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (result["row_count"], result["truncated"], result["truncated_by"]) == (1, True, "bytes")
    assert result["rows"][0][1].endswith("…")
    total = HUGE_ROWS * HUGE_VALUE_MIB * 1024 * 1024
    # One value is read whole (the driver holds its packet, a slice and the text: about three
    # copies on MariaDB); before, all eight were (80 MiB).
    assert peak < total / 2, f"peak {peak / 2**20:.0f} MiB for {total / 2**20:.0f} MiB of rows"
    assert databases.run_query(app.root, "SELECT count(*) FROM orders")["rows"] == [[5]]
