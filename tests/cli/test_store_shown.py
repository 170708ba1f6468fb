"""`homeport where` and `homeport doctor` with a PostgreSQL store (--store or HOMEPORT_STORE): they
show and check the store `homeport serve` would use, never the SQLite file it would not."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy.engine import make_url

from homeport.cli import cli
from homeport.store.database import SCHEMA_REVISION
from homeport.store.postgres import PostgresStores, schema_for

pytestmark = pytest.mark.postgres

PASSWORD = "s3cret-pw"  # trust authentication ignores it; it must never be printed


@pytest.fixture
def project(shell_in_project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("HOMEPORT_STATE_DIR", str(tmp_path / "state"))
    return Path(os.path.realpath(shell_in_project))


@pytest.fixture
def store_url(store_postgres_url: str, project: Path) -> Iterator[str]:
    """The test database's URL with a password in it; the project's workspace dropped afterwards."""
    url = make_url(store_postgres_url).set(password=PASSWORD).render_as_string(hide_password=False)
    yield url
    stores = PostgresStores(url, pool_size=1)
    try:
        stores.drop(str(project))
    finally:
        stores.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def create_workspace(url: str, root: Path) -> None:
    stores = PostgresStores(url, pool_size=1)
    try:
        assert stores.get(str(root), create=True) is not None
    finally:
        stores.close()


def set_revision(url: str, root: Path, revision: str) -> None:
    stores = PostgresStores(url, pool_size=1)
    try:
        with stores.engine.connect() as conn:
            conn.exec_driver_sql(
                "UPDATE homeport.workspaces SET revision = %(r)s WHERE key = %(k)s", {"r": revision, "k": str(root)}
            )
            conn.commit()
    finally:
        stores.close()


def where(*args: str) -> tuple[dict, str]:
    runner = CliRunner()
    shown = runner.invoke(cli, ["where", "--json", *args], catch_exceptions=False)
    assert shown.exit_code == 0, shown.output
    # Wide enough that the table keeps the URL on one line.
    text = runner.invoke(cli, ["where", *args], catch_exceptions=False, env={"COLUMNS": "300"})
    assert text.exit_code == 0, text.output
    assert PASSWORD not in shown.output + text.output
    return json.loads(shown.output), " ".join(text.output.split())


def store_check(*args: str) -> tuple[int, dict]:
    done = CliRunner().invoke(cli, ["doctor", "--json", *args], catch_exceptions=False)
    assert PASSWORD not in done.output
    (check,) = [c for c in json.loads(done.output)["checks"] if c["name"] == "store"]
    return done.exit_code, check


def test_where_with_store_shows_the_database_schema_and_revision_not_a_sqlite_file(project, store_url) -> None:
    shown_url = store_url.replace(PASSWORD, "***")
    report, text = where("--store", store_url)
    assert (report["store_kind"], report["store"]) == ("postgresql", shown_url)
    assert (report["store_schema"], report["store_revision"], report["store_exists"]) == (
        schema_for(str(project)),
        None,
        False,
    )
    assert "homeport.db" not in text and shown_url in text and "not created yet" in text
    create_workspace(store_url, project)
    report, text = where("--store", store_url)
    assert (report["store_revision"], report["store_exists"]) == (SCHEMA_REVISION, True)
    assert f"schema {schema_for(str(project))}, revision {SCHEMA_REVISION}" in text


def test_where_reads_homeport_store_from_the_environment(project, store_url, monkeypatch) -> None:
    monkeypatch.setenv("HOMEPORT_STORE", store_url)
    report, _ = where()
    assert report["store_kind"] == "postgresql" and report["store_schema"] == schema_for(str(project))


def test_where_with_an_unreachable_database_says_so_and_still_answers(project, store_url) -> None:
    url = f"postgresql://postgres:{PASSWORD}@127.0.0.1:{free_port()}/nothing"
    report, text = where("--store", url)
    assert report["store_kind"] == "postgresql" and report["store_exists"] is None
    assert "cannot reach" in report["store_error"] and "cannot reach" in text


def test_doctor_checks_the_postgresql_store_it_would_use(project, store_url, monkeypatch) -> None:
    monkeypatch.setenv("HOMEPORT_STORE", store_url)
    code, check = store_check()
    assert code == 0 and check["status"] == "ok" and "not created yet" in check["detail"]
    create_workspace(store_url, project)
    code, check = store_check()
    assert check["status"] == "ok" and schema_for(str(project)) in check["detail"]
    assert SCHEMA_REVISION in check["detail"] and "homeport.db" not in check["detail"]


def test_doctor_fails_an_unreachable_database_with_a_fix(project, store_url) -> None:
    url = f"postgresql://postgres:{PASSWORD}@127.0.0.1:{free_port()}/nothing"
    code, check = store_check("--store", url)
    assert code == 1 and check["status"] == "fail" and "cannot reach" in check["detail"]
    assert "HOMEPORT_STORE" in check["fix"] and "--store" in check["fix"]


def test_doctor_fails_a_revision_this_homeport_does_not_know_and_warns_an_older_one(project, store_url) -> None:
    create_workspace(store_url, project)
    set_revision(store_url, project, "f00dfeedbeef")
    code, check = store_check("--store", store_url)
    assert code == 1 and check["status"] == "fail" and "f00dfeedbeef" in check["detail"]
    assert "pip install -U homeport" in check["fix"]
    set_revision(store_url, project, "0001")
    code, check = store_check("--store", store_url)
    assert check["status"] == "warn" and "homeport migrate --store" in check["fix"]


def test_memory_commands_use_the_store_where_shows(project, store_url, monkeypatch) -> None:
    # With HOMEPORT_STORE set, `where` says the memory is in PostgreSQL; the shell's commands must write
    # there too, as `homeport serve` does, never into a SQLite file nobody else reads.
    monkeypatch.setenv("HOMEPORT_STORE", store_url)
    runner = CliRunner()
    added = runner.invoke(cli, ["decisions", "add", "keep memory in PostgreSQL"], catch_exceptions=False)
    assert added.exit_code == 0, added.output
    assert not (project / ".homeport" / "homeport.db").exists()
    report, _ = where()
    assert (report["store_exists"], report["store_revision"]) == (True, SCHEMA_REVISION)
    monkeypatch.delenv("HOMEPORT_STORE")
    listed = runner.invoke(cli, ["decisions", "list", "--json", "--store", store_url], catch_exceptions=False)
    assert [d["summary"] for d in json.loads(listed.output)["decisions"]] == ["keep memory in PostgreSQL"]
