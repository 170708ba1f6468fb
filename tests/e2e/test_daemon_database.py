"""The daemon serves the user who started it: a project database account that reaches the host's files is
warned about, as over stdio, not refused as for a remote HTTP caller.

The daemon listens on a unix socket in a directory only its user can enter, and front ends prove it is
the daemon before they send it anything; its callers are that user's own stdio servers and shell
commands. After the account check of issue 22 it refused such an account outright, because it serves
over HTTP: the same `run_query` from Claude Code worked without the daemon and failed with it.
"""

from __future__ import annotations

import pytest

from ._support import clean_env, ok, stdio_client
from .test_daemon import homeport, setup  # noqa: F401  (the daemon's fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.postgres, pytest.mark.timeout(180)]


@pytest.fixture
def superuser_project(setup):  # noqa: F811
    try:
        import psycopg

        psycopg.connect(host="127.0.0.1", port=5432, user="postgres", dbname="test", connect_timeout=3).close()
    except Exception as exc:
        pytest.skip(f"PostgreSQL is not reachable at 127.0.0.1:5432 as postgres ({exc})")
    state, base, project = setup
    (project / ".homeport").mkdir()
    (project / ".homeport" / "config.toml").write_text(
        '[database]\nurl = "postgresql://postgres@127.0.0.1:5432/test"\n'
    )
    return state, base, project


async def test_a_superuser_database_through_the_daemon_is_warned_about_not_refused(superuser_project) -> None:
    state, base, project = superuser_project
    assert homeport(state, "daemon", "start", "--allow-root", str(base), cwd=base).returncode == 0
    env = clean_env(HOMEPORT_STATE_DIR=str(state))
    async with stdio_client(cwd=base, mode="auto", args=("--allow-root", str(base)), env=env) as client:
        answer = ok(await client.call_tool("run_query", {"workspace": str(project), "query": "SELECT 41 + 1 AS n"}))
    assert answer["rows"] == [[42]]
    assert answer["workspace"]["served_by"]["endpoint"].startswith("unix:")  # the daemon answered
    assert "warning" in answer and "superuser" in answer["warning"], answer
