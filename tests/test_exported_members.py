"""The public surface of each package is its `__all__`; pinned so changes are deliberate."""

from __future__ import annotations

import homeport.errors
import homeport.server
import homeport.store
import homeport.workspace


def test_workspace_exports():
    assert sorted(homeport.workspace.__all__) == sorted(
        [
            "CLIENT_ENV_VARS",
            "EXPLICIT_SOURCES",
            "CallInputs",
            "DeniedDirectories",
            "HandleEntry",
            "HandleSigner",
            "ProjectRoot",
            "Resolution",
            "ResolverSettings",
            "Seen",
            "Source",
            "Workspace",
            "WorkspaceGuard",
            "WorkspaceResolver",
            "canonical_directory",
            "decode_candidate",
            "default_denied",
            "is_within",
            "within_any",
        ]
    )


def test_store_and_server_exports():
    assert sorted(homeport.store.__all__) == ["SCHEMA_REVISION", "Store", "StoreCache", "store_path_for"]
    assert sorted(homeport.server.__all__) == [
        "Runtime",
        "ServeSettings",
        "TOOL_GROUPS",
        "build_http_app",
        "build_runtime",
        "build_server",
        "parse_tool_groups",
    ]


def test_every_error_derives_from_the_base_and_has_a_distinct_code():
    classes = [getattr(homeport.errors, n) for n in homeport.errors.__all__]
    assert all(issubclass(c, homeport.errors.HomeportError) for c in classes)
    codes = [c.code for c in classes]
    assert len(codes) == len(set(codes))


def test_exported_names_exist():
    for module in (homeport.errors, homeport.server, homeport.store, homeport.workspace):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"
