"""The public surface of homeport.projectdb, pinned so that changes are deliberate."""

from __future__ import annotations

import inspect

import homeport.projectdb
from homeport.projectdb import ProjectDatabases


def test_projectdb_exports():
    assert sorted(homeport.projectdb.__all__) == ["DatabaseSource", "ProjectDatabases", "discover_database"]
    for name in homeport.projectdb.__all__:
        assert hasattr(homeport.projectdb, name)


def test_project_databases_methods_and_their_parameters():
    expected = {
        "__init__": [
            "self",
            "environ",
            "trust_workspace_config",
            "approves_remote",
            "approves_environment",
            "refuse_host_file_access",
            "max_idle_seconds",
            "max_engines",
            "max_calls_per_workspace",
        ],
        "discover": ["self", "root"],
        "get_tables": ["self", "root"],
        "get_schema": ["self", "root", "table"],
        "get_database_type": ["self", "root"],
        "run_query": ["self", "root", "query", "params", "limit", "read_only"],
        "host_access": ["self", "root"],
        "close": ["self"],
    }
    for method, parameters in expected.items():
        assert list(inspect.signature(getattr(ProjectDatabases, method)).parameters) == parameters, method
    signature = inspect.signature(ProjectDatabases.run_query)
    assert (signature.parameters["params"].default, signature.parameters["limit"].default) == (None, 200)
    init = inspect.signature(ProjectDatabases.__init__).parameters
    assert (init["max_idle_seconds"].default, init["max_engines"].default) == (300, 32)
    assert init["max_idle_seconds"].kind is inspect.Parameter.KEYWORD_ONLY
    assert init["trust_workspace_config"].default is True
    assert init["trust_workspace_config"].kind is inspect.Parameter.KEYWORD_ONLY
    assert (init["refuse_host_file_access"].default, init["max_calls_per_workspace"].default) == (False, 4)
    assert signature.parameters["read_only"].kind is inspect.Parameter.KEYWORD_ONLY
