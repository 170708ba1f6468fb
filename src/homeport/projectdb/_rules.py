"""What a query may not do: the lists the statement guard and the SQLite authorizer share.

Two kinds of rules live here. Host-level rules hold even with ``allow_writes``: nothing may read
or write files or run programs on the database host, stop other sessions, or take locks that
outlive the transaction. Read-only rules are the PRAGMAs that only report.
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_LIMIT",
    "DENIED_FUNCTIONS",
    "DENIED_FUNCTION_PREFIXES",
    "QUERY_PRAGMAS",
    "SETTING_PRAGMAS",
    "denied_function_reason",
    "pragma_is_read_only",
]

# Functions refused in every mode, per backend, with the reason the refusal names.
DENIED_FUNCTIONS: dict[str, dict[str, str]] = {
    "sqlite": {
        "load_extension": "loads native code into the database process",
        "readfile": "reads files on the host",
        "writefile": "writes files on the host",
        "edit": "starts an editor on the host",
        "fts3_tokenizer": "can install native callbacks",
    },
    "postgresql": {
        "pg_terminate_backend": "ends other sessions",
        "pg_cancel_backend": "cancels other sessions' queries",
        "pg_reload_conf": "reloads the server configuration",
        "pg_rotate_logfile": "administers the server",
        "pg_promote": "administers the server",
        "pg_switch_wal": "administers the server",
        "pg_create_restore_point": "administers the server",
        "pg_log_backend_memory_contexts": "administers the server",
        "pg_read_file": "reads files on the database host",
        "pg_read_binary_file": "reads files on the database host",
        "pg_stat_file": "inspects files on the database host",
        "pg_logdir_ls": "lists files on the database host",
        "pg_notify": "sends notifications to other sessions",
        "set_config": "changes settings of the session Homeport controls",
        "query_to_xml": "runs a query given as text, which Homeport cannot inspect",
        "query_to_xmlschema": "runs a query given as text, which Homeport cannot inspect",
        "query_to_xml_and_xmlschema": "runs a query given as text, which Homeport cannot inspect",
        "cursor_to_xml": "reads a cursor Homeport did not open",
        "cursor_to_xmlschema": "reads a cursor Homeport did not open",
        "ts_stat": "runs a query given as text, which Homeport cannot inspect",
        "ts_rewrite": "can run a query given as text, which Homeport cannot inspect",
        "pg_import_system_collations": "changes the catalog",
        "pg_stat_statements_reset": "resets server statistics",
        "pg_truncate_visibility_map": "changes a table's visibility map",
        "lowrite": "writes large objects",
    },
    "mysql": {
        "load_file": "reads files on the database host",
        "benchmark": "burns server CPU, and MariaDB cuts it at the time limit without an error",
        "get_lock": "takes a named lock that outlives the transaction",
        "release_lock": "releases named locks other code may hold",
        "release_all_locks": "releases named locks other code may hold",
        "master_pos_wait": "waits on replication",
        "source_pos_wait": "waits on replication",
        "sys_exec": "runs programs on the database host",
        "sys_eval": "runs programs on the database host",
    },
}

# Families of functions refused by name prefix (lowercase).
DENIED_FUNCTION_PREFIXES: dict[str, dict[str, str]] = {
    "sqlite": {},
    "postgresql": {
        "dblink": "opens connections to other databases",
        "lo_": "reads, writes or changes large objects and host files",
        "pg_ls_": "lists files on the database host",
        "pg_file_": "writes files on the database host",
        "pg_advisory_": "takes advisory locks that can outlive the transaction",
        "pg_try_advisory_": "takes advisory locks that can outlive the transaction",
        "pg_stat_reset": "resets server statistics",
        "pg_backup_": "administers the server",
        "pg_start_backup": "administers the server",
        "pg_stop_backup": "administers the server",
        "pg_wal_replay_": "administers the server",
        "pg_create_": "creates replication slots",
        "pg_drop_replication_slot": "drops replication slots",
        "pg_copy_": "creates replication slots",
        "pg_replication_": "administers replication",
        "pg_logical_": "administers replication",
    },
    "mysql": {},
}


def denied_function_reason(name: str, backend: str) -> str | None:
    """Why calling function `name` is refused on `backend`, or None when it is allowed."""
    lowered = name.lower()
    reason = DENIED_FUNCTIONS[backend].get(lowered)
    if reason is not None:
        return reason
    for prefix, prefix_reason in DENIED_FUNCTION_PREFIXES[backend].items():
        if lowered.startswith(prefix):
            return prefix_reason
    return None


# SQLite PRAGMAs that only report, with or without a (table, index) argument.
QUERY_PRAGMAS = frozenset(
    {
        "table_info",
        "table_xinfo",
        "table_list",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
        "foreign_key_check",
        "integrity_check",
        "quick_check",
        "database_list",
        "collation_list",
        "function_list",
        "module_list",
        "pragma_list",
        "compile_options",
    }
)
# SQLite PRAGMAs that report a setting when called bare and change it when given a value.
SETTING_PRAGMAS = frozenset(
    {
        "user_version",
        "application_id",
        "schema_version",
        "data_version",
        "encoding",
        "page_size",
        "page_count",
        "max_page_count",
        "freelist_count",
        "journal_mode",
        "foreign_keys",
        "auto_vacuum",
        "cache_size",
        "synchronous",
        "busy_timeout",
        "query_only",
        "recursive_triggers",
        "temp_store",
        "locking_mode",
        "secure_delete",
        "case_sensitive_like",
        "automatic_index",
        "legacy_alter_table",
        "read_uncommitted",
    }
)


def pragma_is_read_only(name: str, has_argument: bool) -> bool:
    """True when ``PRAGMA name`` (with an argument or value when `has_argument`) only reports."""
    lowered = name.lower()
    if lowered in QUERY_PRAGMAS:
        return True
    return lowered in SETTING_PRAGMAS and not has_argument


# Rows a query returns unless the caller asks for fewer (the workspace's row_limit caps it too).
DEFAULT_LIMIT = 200
