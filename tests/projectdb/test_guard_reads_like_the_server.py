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


# ---------------------------------------------------------------- parameters on every backend


@pytest.mark.parametrize(
    "query",
    [
        "SELECT ':x' AS note",
        'SELECT 1 AS ":x"',
        "SELECT 1 AS one -- :x",
        "SELECT 1 AS one /* :x */",
        "SELECT 'it''s :x' AS note",
    ],
)
def test_a_value_for_a_placeholder_that_is_only_inside_quotes_or_a_comment_is_refused(app, databases, query):
    with pytest.raises(QueryRejectedError, match="not a placeholder"):
        databases.run_query(app.root, query, {"x": "' , 1 AS leaked , '"})


def test_a_placeholder_used_twice_gets_the_same_value_and_quotes_around_it_stay_text(app, databases):
    result = databases.run_query(
        app.root, "SELECT ':n' AS note, id FROM orders WHERE id = :n OR id = :n + 1 ORDER BY id", {"n": 2}
    )
    assert result["rows"] == [[":n", 2], [":n", 3]]


@pytest.mark.parametrize(
    "value", ["x' OR '1'='1", "a\\' , 1 -- ", "\u00a0--\u00a0", "/*!50000 x*/", "%s %(n)s $1 ?", "🙂 é", ""]
)
def test_hostile_text_values_come_back_as_the_same_text(app, databases, value):
    result = databases.run_query(app.root, "SELECT :v AS v", {"v": value})
    assert result["rows"] == [[value]]


def test_numbers_booleans_and_null_bind_as_values(app, databases):
    result = databases.run_query(
        app.root, "SELECT :i AS i, :f AS f, :t AS t, :z AS z", {"i": -7, "f": 2.5, "t": True, "z": None}
    )
    [[i, f, t, z]] = result["rows"]
    assert (i, float(f), bool(t), z) == (-7, 2.5, True, None)


@pytest.mark.mysql
def test_a_list_parameter_fills_an_in_list_on_mariadb(mariadb, databases):
    result = databases.run_query(mariadb.root, "SELECT id FROM orders WHERE id IN :ids ORDER BY id", {"ids": [1, 3]})
    assert result["rows"] == [[1], [3]]


@pytest.mark.postgres
def test_a_list_parameter_is_an_array_on_postgresql(request, tmp_path, databases):
    app = make_app(request, tmp_path, "postgresql")
    app.configure()
    result = databases.run_query(app.root, "SELECT id FROM orders WHERE id = ANY(:ids) ORDER BY id", {"ids": [1, 3]})
    assert result["rows"] == [[1], [3]]


@pytest.mark.parametrize(("value", "said"), [({"a": 1}, "an object"), ([[1]], "a list"), (float("nan"), "nan")])
def test_a_value_that_is_not_one_value_is_an_invalid_argument_naming_the_parameter(app, databases, value, said):
    with pytest.raises(InvalidArgumentError) as caught:
        databases.run_query(app.root, "SELECT :doc AS doc", {"doc": value})
    assert "params.doc" in caught.value.message and said in caught.value.message


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1 AS a\u200bb",  # zero-width space
        "SELECT 1\u3000AS one",  # ideographic space
        "SELECT 1 AS one -- note\u00a0more",
        "SELECT 1 AS one\r, 2",  # a lone carriage return ends a PostgreSQL comment, not a MariaDB one
        "SELECT 1 AS one\x0c",
        "SELECT \u202e1 AS one",  # right-to-left override
        "\ufeffSELECT 1",
    ],
)
@pytest.mark.parametrize("backend", ["sqlite", "postgresql", "mysql"])
def test_characters_the_server_may_read_differently_are_refused_outside_quotes(backend, sql):
    with pytest.raises(QueryRejectedError, match="U\\+"):
        check_statement(sql, backend, allow_writes=False)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 'café\u00a0\u200b' AS note",
        'SELECT 1 AS "na\u00efve\u00a0name"',
        "SELECT 1 AS one -- commentaire: déjà vu, 🙂\nFROM orders",
        "SELECT 1 AS one\r\n",
        "SELECT café FROM menu",
    ],
)
def test_text_inside_quotes_and_letters_of_any_script_still_pass(sql):
    check_statement(sql, "postgresql", allow_writes=False)
