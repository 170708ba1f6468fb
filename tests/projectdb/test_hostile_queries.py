"""Every hostile query is refused or fails, and leaves the database exactly as it was."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from homeport.errors import ProjectDatabaseError, QueryRejectedError

from .conftest import make_app
from .hostile_corpus import CORPUS, Hostile

MARKS = {"sqlite": (), "postgresql": (pytest.mark.postgres,), "mysql": (pytest.mark.mysql,)}
LABELS = {"sqlite": "sqlite", "postgresql": "postgresql", "mysql": "mariadb"}


def _cases(*, database_alone: bool) -> list:
    cases = []
    for hostile in CORPUS:
        backends = hostile.refused_by_database_alone if database_alone else hostile.backends
        for backend in sorted(backends):
            cases.append(pytest.param(hostile, backend, id=f"{hostile.id}-{LABELS[backend]}", marks=MARKS[backend]))
    return cases


def _run_hostile(request, tmp_path: Path, databases, hostile: Hostile, backend: str) -> ProjectDatabaseError:
    app = make_app(request, tmp_path, backend)
    app.configure(statement_timeout_ms=500)
    marker = Path(f"/tmp/homeport-hostile-{uuid.uuid4().hex}")
    before = app.snapshot()
    try:
        with pytest.raises(ProjectDatabaseError) as caught:
            databases.run_query(app.root, hostile.sql.replace("{marker}", str(marker)))
        assert app.snapshot() == before
        assert not marker.exists(), f"{hostile.id} created {marker}"
        # The pooled connection is still clean and read-only.
        assert databases.run_query(app.root, "SELECT count(*) FROM orders")["rows"] == [[5]]
    finally:
        marker.unlink(missing_ok=True)
    return caught.value


def test_the_corpus_holds_at_least_fifty_distinct_hostile_queries():
    assert len(CORPUS) >= 50
    assert len({h.id for h in CORPUS}) == len(CORPUS)
    assert len({h.sql for h in CORPUS}) == len(CORPUS)
    for hostile in CORPUS:
        assert hostile.refused_by_database_alone <= hostile.backends, hostile.id


@pytest.mark.parametrize(("hostile", "backend"), _cases(database_alone=False))
def test_hostile_query_is_refused_or_fails_and_changes_nothing(request, tmp_path, databases, hostile, backend):
    error = _run_hostile(request, tmp_path, databases, hostile, backend)
    assert str(error)


@pytest.mark.parametrize(("hostile", "backend"), _cases(database_alone=True))
def test_the_database_alone_refuses_hostile_query_when_the_guard_is_switched_off(
    request, tmp_path, databases, monkeypatch, hostile, backend
):
    def no_guard(sql: str, _backend: str, *, allow_writes: bool) -> bool:
        return sql.lstrip().upper().startswith(("SELECT", "WITH", "VALUES"))

    monkeypatch.setattr("homeport.projectdb.query.check_statement", no_guard)
    error = _run_hostile(request, tmp_path, databases, hostile, backend)
    assert not isinstance(error, QueryRejectedError)
