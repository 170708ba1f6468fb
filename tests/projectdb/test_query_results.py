"""run_query results: shape, parameters, row limits, timeouts, and JSON-safe values per backend."""

from __future__ import annotations

import base64
import json
import time

import pytest

from homeport.errors import ProjectDatabaseError, QueryRejectedError, QuerySyntaxError

from .conftest import make_app

RESULT_KEYS = {
    "columns",
    "rows",
    "row_count",
    "truncated",
    "truncated_by",
    "elapsed_ms",
    "limit",
    "max_result_bytes",
    "affected_rows",
    "read_only",
}
FIVE_HUNDRED_WIDE_ROWS = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 500) "
    "SELECT x, '" + "p" * 100 + "' AS pad FROM c"
)
ONE_HUGE_VALUE = {
    "sqlite": "SELECT 1 AS id, replace(hex(zeroblob(50000)), '0', 'x') AS big",
    "postgresql": "SELECT 1 AS id, repeat('x', 100000) AS big",
    "mysql": "SELECT 1 AS id, REPEAT('x', 100000) AS big",
}
TEN_MILLION_ROWS = {
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10000000) SELECT x FROM c",
    "postgresql": "SELECT generate_series(1, 10000000) AS x",
    "mysql": "SELECT seq AS x FROM seq_1_to_10000000",
}
SLEEP_TEN_SECONDS = {
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
    "postgresql": "SELECT pg_sleep(10)",
    "mysql": "SELECT SLEEP(10)",
}


def strict_json(value: object) -> object:
    return json.loads(json.dumps(value, allow_nan=False))


def test_rows_come_back_as_columns_and_lists(app, databases):
    result = databases.run_query(app.root, "SELECT id, status FROM orders WHERE customer_id = 1 ORDER BY id")
    assert set(result) - {"warning"} == RESULT_KEYS  # a warning when the account reaches host files
    assert result["columns"] == ["id", "status"]
    assert result["rows"] == [[1, "paid"], [2, "new"]]
    assert (result["row_count"], result["truncated"], result["read_only"], result["affected_rows"]) == (
        2,
        False,
        True,
        None,
    )
    assert result["elapsed_ms"] >= 0
    assert strict_json(result) == result


def test_an_empty_result_still_names_its_columns(app, databases):
    result = databases.run_query(app.root, "SELECT id, total FROM orders WHERE id < 0")
    assert (result["columns"], result["rows"], result["row_count"]) == (["id", "total"], [], 0)


def test_named_parameters_are_bound_by_the_driver_not_pasted(app, databases):
    query = "SELECT name FROM customers WHERE name = :name OR email = :email ORDER BY name"
    result = databases.run_query(app.root, query, {"name": "Ada", "email": "cy@example.com"})
    assert result["rows"] == [["Ada"], ["Cy"]]
    hostile = databases.run_query(app.root, query, {"name": "x'; DROP TABLE orders; --", "email": "%"})
    assert hostile["rows"] == []
    assert databases.run_query(app.root, "SELECT count(*) FROM orders")["rows"] == [[5]]


def test_a_percent_sign_in_the_query_survives_parameter_binding(app, databases):
    result = databases.run_query(
        app.root, "SELECT email FROM customers WHERE email LIKE '%@example.com' AND name = :n", {"n": "Ada"}
    )
    assert result["rows"] == [["ada@example.com"]]


def test_a_parameter_without_a_value_is_refused_naming_it(app, databases):
    with pytest.raises(QueryRejectedError, match="status"):
        databases.run_query(app.root, "SELECT id FROM orders WHERE status = :status AND id = :id", {"id": 1})


def test_the_limit_truncates_and_says_so(app, databases):
    result = databases.run_query(app.root, "SELECT id FROM orders ORDER BY id", limit=2)
    assert (result["rows"], result["row_count"], result["truncated"], result["limit"]) == ([[1], [2]], 2, True, 2)
    exact = databases.run_query(app.root, "SELECT id FROM orders ORDER BY id", limit=5)
    assert (exact["row_count"], exact["truncated"]) == (5, False)


def test_a_result_past_the_byte_limit_stops_at_a_whole_row_and_says_so(app, databases):
    app.configure(max_result_bytes=4096)
    result = databases.run_query(app.root, FIVE_HUNDRED_WIDE_ROWS, limit=500)
    assert (result["truncated"], result["truncated_by"], result["max_result_bytes"]) == (True, "bytes", 4096)
    assert 10 < result["row_count"] < 500
    assert result["rows"][0] == [1, "p" * 100]
    assert len(json.dumps(result["rows"]).encode()) <= 4096
    assert databases.run_query(app.root, "SELECT count(*) FROM orders")["rows"] == [[5]]


def test_a_single_value_past_the_byte_limit_is_shortened_with_a_marker(app, databases):
    app.configure(max_result_bytes=4096)
    result = databases.run_query(app.root, ONE_HUGE_VALUE[app.backend])
    assert (result["row_count"], result["truncated"], result["truncated_by"]) == (1, True, "bytes")
    [[identifier, big]] = result["rows"]
    assert identifier == 1
    assert big.startswith("xxxx") and big.endswith("…")
    assert len(json.dumps(result["rows"]).encode()) <= 4096


def test_the_row_limit_is_named_as_the_cause_of_truncation(app, databases):
    result = databases.run_query(app.root, "SELECT id FROM orders", limit=2)
    assert (result["truncated"], result["truncated_by"]) == (True, "rows")
    assert databases.run_query(app.root, "SELECT id FROM orders")["truncated_by"] is None


def test_the_workspace_row_limit_caps_the_limit_asked_for(app, databases):
    app.configure(row_limit=3)
    result = databases.run_query(app.root, "SELECT id FROM orders ORDER BY id", limit=200)
    assert (result["row_count"], result["truncated"], result["limit"]) == (3, True, 3)


@pytest.mark.parametrize("limit", [0, -1, True, 2.5, "10"])
def test_a_limit_that_is_not_a_positive_whole_number_is_refused(app, databases, limit):
    with pytest.raises(QueryRejectedError, match="limit"):
        databases.run_query(app.root, "SELECT 1", limit=limit)


def test_fetching_stops_at_the_limit_even_on_ten_million_rows(app, databases):
    started = time.perf_counter()
    result = databases.run_query(app.root, TEN_MILLION_ROWS[app.backend], limit=100)
    elapsed = time.perf_counter() - started
    assert (result["row_count"], result["truncated"]) == (100, True)
    assert result["rows"][:3] == [[1], [2], [3]]
    assert elapsed < 2, f"took {elapsed:.2f} s"
    assert databases.run_query(app.root, "SELECT count(*) FROM orders")["rows"] == [[5]]  # connection still good


def test_the_statement_timeout_stops_a_long_query_with_a_clear_error(app, databases):
    app.configure(statement_timeout_ms=1000)
    started = time.perf_counter()
    with pytest.raises(ProjectDatabaseError, match="statement timeout of 1000 ms") as caught:
        databases.run_query(app.root, SLEEP_TEN_SECONDS[app.backend])
    elapsed = time.perf_counter() - started
    assert 0.9 < elapsed < 3, f"took {elapsed:.2f} s"
    assert "statement_timeout_ms" in str(caught.value)
    assert databases.run_query(app.root, "SELECT count(*) FROM orders")["rows"] == [[5]]


def test_a_database_error_carries_the_drivers_message_and_no_traceback(app, databases):
    with pytest.raises(ProjectDatabaseError) as caught:
        databases.run_query(app.root, "SELECT no_such_column FROM orders")
    message = str(caught.value)
    assert "no_such_column" in message
    assert "Traceback" not in message and "sqlalche.me" not in message
    assert not isinstance(caught.value, QueryRejectedError)


@pytest.mark.parametrize("sql", ["SELECT 1 FROM", "SELECT * FROM orders WHERE", "SELECT (1"])
def test_a_syntax_error_from_the_database_is_answered_as_a_syntax_error(app, databases, sql):
    with pytest.raises(QuerySyntaxError) as caught:
        databases.run_query(app.root, sql)
    assert caught.value.code == "query_syntax_error"
    assert "allow_writes" not in caught.value.message
    assert databases.run_query(app.root, "SELECT count(*) FROM orders")["rows"] == [[5]]


def _b64(data: bytes) -> str:
    return "base64:" + base64.b64encode(data).decode()


def test_sqlite_values_are_json_safe(request, tmp_path, databases):
    app = make_app(request, tmp_path, "sqlite")
    result = databases.run_query(
        app.root,
        "SELECT 42 AS i, 1.5 AS f, 'text' AS t, x'00ff' AS b, NULL AS n, 1 = 1 AS bool, "
        "CAST('12.30' AS NUMERIC) AS num, 9e999 AS inf, -9e999 AS ninf, '{\"a\": 1}' AS j",
    )
    assert strict_json(result["rows"]) == [
        [42, 1.5, "text", _b64(b"\x00\xff"), None, 1, 12.3, "Infinity", "-Infinity", '{"a": 1}']
    ]


@pytest.mark.postgres
def test_postgres_values_of_every_common_type_are_json_safe(request, tmp_path, databases):
    app = make_app(request, tmp_path, "postgresql")
    result = databases.run_query(
        app.root,
        """
        SELECT 42::integer AS i, 9007199254740993::bigint AS big, 12.30::numeric(10, 2) AS n, 1.5::float8 AS f,
               'NaN'::float8 AS nan, 'text'::text AS t, true AS b, DATE '2024-01-02' AS d,
               TIMESTAMP '2024-01-02 03:04:05.5' AS ts, TIMESTAMPTZ '2024-01-02 03:04:05+00' AS tstz,
               TIME '03:04:05' AS tm, INTERVAL '1 month 2 days 03:04:05' AS iv, '\\x00ff'::bytea AS by,
               'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid AS u, '{"a": [1, 2.5, null]}'::json AS j,
               '{"b": {"c": true}}'::jsonb AS jb, ARRAY[1, 2, 3] AS ai, ARRAY['x', NULL] AS at,
               ARRAY[DATE '2024-01-02'] AS ad, 'infinity'::timestamp AS inf, NULL::integer AS nul,
               '10.0.0.1'::inet AS ip, 'NaN'::numeric AS nnan
        """,
    )
    row = dict(zip(result["columns"], strict_json(result["rows"])[0], strict=True))
    assert row == {
        "i": 42,
        "big": 9007199254740993,
        "n": "12.30",
        "f": 1.5,
        "nan": "NaN",
        "t": "text",
        "b": True,
        "d": "2024-01-02",
        "ts": "2024-01-02T03:04:05.500000",
        "tstz": "2024-01-02T03:04:05+00:00",
        "tm": "03:04:05",
        "iv": "P1M2DT3H4M5S",
        "by": _b64(b"\x00\xff"),
        "u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        "j": {"a": [1, 2.5, None]},
        "jb": {"b": {"c": True}},
        "ai": [1, 2, 3],
        "at": ["x", None],
        "ad": ["2024-01-02"],
        "inf": "infinity",
        "nul": None,
        "ip": "10.0.0.1",
        "nnan": "NaN",
    }


@pytest.mark.mysql
def test_mariadb_values_of_every_common_type_are_json_safe(request, tmp_path, databases):
    app = make_app(request, tmp_path, "mysql")
    result = databases.run_query(
        app.root,
        """
        SELECT 42 AS i, 9007199254740993 AS big, CAST(12.30 AS DECIMAL(10, 2)) AS n, 1.5e0 AS f, 'text' AS t,
               TRUE AS b, DATE '2024-01-02' AS d, TIMESTAMP '2024-01-02 03:04:05.5' AS ts, TIME '-27:04:05' AS tm,
               X'00ff' AS bin, b'101' AS bits, NULL AS nul, JSON_OBJECT('a', 1) AS j
        """,
    )
    row = dict(zip(result["columns"], strict_json(result["rows"])[0], strict=True))
    assert row == {
        "i": 42,
        "big": 9007199254740993,
        "n": "12.30",
        "f": 1.5,
        "t": "text",
        "b": 1,
        "d": "2024-01-02",
        "ts": "2024-01-02T03:04:05.500000",
        "tm": "-27:04:05",
        "bin": _b64(b"\x00\xff"),
        "bits": _b64(b"\x05"),
        "nul": None,
        "j": '{"a": 1}',  # MariaDB's JSON is text on the wire: it stays a string
    }
