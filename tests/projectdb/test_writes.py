"""allow_writes = true: statements may change data, one at a time, and never reach the host."""

from __future__ import annotations

import pytest

from homeport.errors import ProjectDatabaseError, QueryRejectedError

HOST_ACCESS = {
    "sqlite": "ATTACH DATABASE '/tmp/homeport-never.db' AS evil",
    "postgresql": "COPY orders TO PROGRAM 'true'",
    "mysql": "SELECT * FROM orders INTO OUTFILE '/tmp/homeport-never.txt'",
}


@pytest.fixture
def writable(app):
    app.configure(allow_writes=True)
    yield app
    app.sql("DELETE FROM scratch")
    app.configure()


def test_allow_writes_permits_an_insert_that_is_committed(writable, databases):
    result = databases.run_query(
        writable.root, "INSERT INTO scratch (id, note) VALUES (:id, :note)", {"id": 1, "note": "hi"}
    )
    assert (result["affected_rows"], result["read_only"], result["columns"], result["rows"]) == (1, False, [], [])
    assert writable.sql("SELECT id, note FROM scratch") == [(1, "hi")]


def test_allow_writes_permits_updates_deletes_and_data_changing_queries(writable, databases):
    databases.run_query(writable.root, "INSERT INTO scratch (id, note) VALUES (1, 'a'), (2, 'b')")
    assert databases.run_query(writable.root, "UPDATE scratch SET note = 'z' WHERE id = 2")["affected_rows"] == 1
    assert databases.run_query(writable.root, "DELETE FROM scratch WHERE id = 1")["affected_rows"] == 1
    assert writable.sql("SELECT id, note FROM scratch") == [(2, "z")]


def test_a_failed_write_leaves_nothing_behind(writable, databases):
    with pytest.raises(ProjectDatabaseError):
        databases.run_query(writable.root, "INSERT INTO orders (customer_id, total) VALUES (NULL, 1)")
    assert writable.sql("SELECT count(*) FROM orders") == [(5,)]


def test_writes_still_run_one_statement_per_call(writable, databases):
    with pytest.raises(QueryRejectedError, match="2 statements"):
        databases.run_query(writable.root, "INSERT INTO scratch VALUES (1, 'a'); INSERT INTO scratch VALUES (2, 'b')")
    assert writable.sql("SELECT count(*) FROM scratch") == [(0,)]


def test_writes_never_reach_files_or_programs_on_the_host(writable, databases):
    with pytest.raises(QueryRejectedError, match="host"):
        databases.run_query(writable.root, HOST_ACCESS[writable.backend])


def test_turning_writes_off_again_makes_the_database_read_only(writable, databases):
    databases.run_query(writable.root, "INSERT INTO scratch VALUES (1, 'a')")
    writable.configure()
    with pytest.raises(QueryRejectedError, match="read-only"):
        databases.run_query(writable.root, "INSERT INTO scratch VALUES (2, 'b')")
    assert databases.run_query(writable.root, "SELECT count(*) FROM scratch")["rows"] == [[1]]
