"""Tables, a table's shape and the server's kind, on SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import json

import pytest

from homeport.errors import ProjectDatabaseError

TYPE_NAMES = {"sqlite": "sqlite", "postgresql": "postgresql", "mysql": "mariadb"}


def test_get_tables_lists_the_tables_and_the_database_type(app, databases):
    result = databases.get_tables(app.root)
    assert result["tables"] == ["customers", "orders", "scratch"]
    assert result["views"] == []
    assert result["database_type"] == TYPE_NAMES[app.backend]
    json.dumps(result)


def test_get_schema_describes_columns_keys_indexes_and_defaults(app, databases):
    schema = databases.get_schema(app.root, "orders")
    json.dumps(schema)
    assert (schema["table"], schema["kind"], schema["database_type"]) == ("orders", "table", TYPE_NAMES[app.backend])
    columns = {column["name"]: column for column in schema["columns"]}
    assert list(columns) == ["id", "customer_id", "total", "status"]
    assert columns["id"]["primary_key"] and not columns["status"]["primary_key"]
    assert columns["customer_id"]["nullable"] is False
    assert "INT" in columns["customer_id"]["type"].upper()
    assert "NUMERIC" in columns["total"]["type"].upper() or "DECIMAL" in columns["total"]["type"].upper()
    assert "new" in columns["status"]["default"]
    assert columns["total"]["default"] is not None and columns["total"]["default"].startswith("0")
    assert schema["primary_key"] == ["id"]
    assert {"name": "ix_orders_status", "columns": ["status"], "unique": False} in schema["indexes"]
    [foreign_key] = schema["foreign_keys"]
    assert foreign_key["columns"] == ["customer_id"]
    assert foreign_key["references"]["table"] == "customers"
    assert foreign_key["references"]["columns"] == ["id"]
    if app.backend != "sqlite":  # SQLAlchemy does not read SQLite's ON DELETE; the CREATE statement has it
        assert foreign_key["on_delete"] == "CASCADE"


def test_get_schema_create_statement_shows_every_column_key_and_index(app, databases):
    create = databases.get_schema(app.root, "orders")["create_statement"]
    assert create.upper().startswith("CREATE TABLE")
    for word in ("customer_id", "total", "status", "ix_orders_status", "customers", "CASCADE", "'new'"):
        assert word.lower() in create.lower(), word
    assert "PRIMARY KEY" in create.upper()


def test_get_schema_reports_unique_constraints(app, databases):
    schema = databases.get_schema(app.root, "customers")
    uniques = [u["columns"] for u in schema["unique_constraints"]] + [
        i["columns"] for i in schema["indexes"] if i["unique"]
    ]
    assert ["email"] in uniques


def test_an_unknown_table_is_an_error_naming_it_and_its_close_matches(app, databases):
    with pytest.raises(ProjectDatabaseError) as caught:
        databases.get_schema(app.root, "ordrs")
    message = str(caught.value)
    assert "'ordrs'" in message and "close matches: orders" in message and "get_tables" in message


def test_a_table_name_in_another_case_is_found_when_it_is_unambiguous(app, databases):
    assert databases.get_schema(app.root, "ORDERS")["table"] == "orders"


def test_views_are_listed_and_described(app, databases):
    app.sql("CREATE VIEW paid_orders AS SELECT id, total FROM orders WHERE status = 'paid'")
    try:
        assert databases.get_tables(app.root)["views"] == ["paid_orders"]
        schema = databases.get_schema(app.root, "paid_orders")
        assert schema["kind"] == "view"
        assert [c["name"] for c in schema["columns"]] == ["id", "total"]
        assert "paid" in schema["create_statement"]
    finally:
        app.sql("DROP VIEW paid_orders")


@pytest.mark.postgres
def test_postgres_tables_outside_the_default_schema_are_qualified(request, tmp_path, databases):
    from .conftest import make_app

    app = make_app(request, tmp_path, "postgresql")
    app.sql("CREATE SCHEMA billing")
    app.sql("CREATE TABLE billing.invoices (id INTEGER PRIMARY KEY, order_id INTEGER REFERENCES public.orders (id))")
    try:
        assert "billing.invoices" in databases.get_tables(app.root)["tables"]
        schema = databases.get_schema(app.root, "billing.invoices")
        assert (schema["schema"], schema["table"]) == ("billing", "invoices")
        assert schema["create_statement"].startswith("CREATE TABLE billing.invoices")
        assert schema["foreign_keys"][0]["references"]["table"] == "orders"
    finally:
        app.sql("DROP SCHEMA billing CASCADE")


def test_get_database_type_reports_the_kind_version_and_origin_without_a_password(app, databases):
    result = databases.get_database_type(app.root)
    assert result["database_type"] == TYPE_NAMES[app.backend]
    assert result["server_version"][0].isdigit()
    if app.backend == "mysql":
        assert "MariaDB" in result["server_version"]
    assert result["origin"] == ".homeport/config.toml [database] url"
    assert result["source"].endswith("(from .homeport/config.toml [database] url)")
    assert (result["read_only"], result["statement_timeout_ms"], result["row_limit"]) == (True, 5000, 1000)
    assert result["max_result_bytes"] == 256 * 1024


def test_introspection_changes_nothing(app, databases):
    before = app.snapshot()
    databases.get_tables(app.root)
    databases.get_schema(app.root, "orders")
    databases.get_database_type(app.root)
    assert app.snapshot() == before
