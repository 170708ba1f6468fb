"""Issue 22, finding 4 and part of 20: the statement guard checks what the server will execute.

MariaDB reads ``--`` as a comment only before ASCII whitespace or a control character; Python's
idea of whitespace (the guard's tokenizer) also holds U+00A0 and the other Unicode spaces, which
MariaDB reads as part of an identifier. And PyMySQL substitutes parameters into the text on the
client, where SQLAlchemy's ``:name`` finder also sees names inside quoted strings. Both let a
query the guard took for harmless read the host's files on a server whose account has FILE
(the local MariaDB's root has it: these tests read the real /etc/passwd).
"""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from homeport.errors import InvalidArgumentError, ProjectDatabaseError, QueryRejectedError
from homeport.projectdb._statement_guard import check_statement

from .conftest import make_app

PASSWD = Path("/etc/passwd").read_bytes()
NBSP = "\u00a0"


def leaks_passwd(result: Any) -> bool:
    """Whether `result` holds the start of /etc/passwd as text, base64 or hex."""
    text = json.dumps(result, ensure_ascii=False)
    head = PASSWD[:24]
    return any(
        form in text
        for form in (
            head.decode("utf-8", "replace"),
            base64.b64encode(PASSWD)[:24].decode(),
            head.hex(),
            head.hex().upper(),
        )
    )


def run_or_error(databases, root: Path, query: str, params: dict[str, Any] | None = None) -> Any:
    """The result of the query, or the Homeport error it raised (an error is an answer here)."""
    try:
        return databases.run_query(root, query, params)
    except ProjectDatabaseError as exc:
        return exc
    except InvalidArgumentError as exc:
        return exc


@pytest.fixture
def mariadb(request, tmp_path):
    app = make_app(request, tmp_path, "mysql")
    app.configure()
    return app


def test_the_guard_refuses_a_double_dash_before_a_no_break_space_on_mysql():
    sql = f"SELECT 1 --{NBSP}, LOAD_FILE('/etc/passwd') FROM (SELECT 1 AS `{NBSP}`) t"
    with pytest.raises(QueryRejectedError, match="U\\+00A0"):
        check_statement(sql, "mysql", allow_writes=False)


@pytest.mark.mysql
def test_a_double_dash_before_a_no_break_space_does_not_read_the_hosts_passwd(mariadb, databases):
    sql = f"SELECT 1 --{NBSP}, LOAD_FILE('/etc/passwd') FROM (SELECT 1 AS `{NBSP}`) t"
    answer = run_or_error(databases, mariadb.root, sql)
    assert not leaks_passwd(answer if isinstance(answer, dict) else str(answer))
    assert isinstance(answer, QueryRejectedError), answer


@pytest.mark.mysql
def test_a_double_dash_before_a_no_break_space_does_not_write_a_file(mariadb, databases):
    marker = Path(f"/tmp/homeport-nbsp-{uuid.uuid4().hex}")
    sql = f"SELECT 1 --{NBSP}, 2 FROM (SELECT 1 AS `{NBSP}`) t INTO OUTFILE '{marker}'"
    try:
        answer = run_or_error(databases, mariadb.root, sql)
        assert not marker.exists()
        assert isinstance(answer, QueryRejectedError), answer
    finally:
        marker.unlink(missing_ok=True)


@pytest.mark.mysql
def test_a_parameter_substituted_inside_a_quoted_string_does_not_read_the_hosts_passwd(mariadb, databases):
    answer = run_or_error(
        databases,
        mariadb.root,
        "SELECT ':x' AS note",
        {"x": ", LOAD_FILE(0x2f6574632f706173737764) AS leaked, "},
    )
    assert not leaks_passwd(answer if isinstance(answer, dict) else str(answer))
    assert isinstance(answer, QueryRejectedError), answer
    assert ":x" in answer.message and "quoted" in answer.message


@pytest.mark.mysql
def test_a_mariadb_dict_parameter_is_refused_naming_it(mariadb, databases):
    answer = run_or_error(databases, mariadb.root, "SELECT :doc AS doc", {"doc": {"a": 1}})
    assert isinstance(answer, InvalidArgumentError), answer
    assert answer.code == "invalid_argument"
    assert "params.doc" in answer.message
