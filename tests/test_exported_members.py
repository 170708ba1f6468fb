"""The public surface of each package is its `__all__`; pinned so changes are deliberate."""

from __future__ import annotations

import homeport.core
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


def test_store_core_and_server_exports():
    assert sorted(homeport.store.__all__) == ["SCHEMA_REVISION", "Store", "StoreCache", "store_path_for"]
    assert sorted(homeport.core.__all__) == ["Runtime", "ServeSettings", "build_runtime"]
    assert sorted(homeport.server.__all__) == ["TOOL_GROUPS", "build_http_app", "build_server", "parse_tool_groups"]


def _error_classes() -> list[type]:
    return [c for n in homeport.errors.__all__ if isinstance(c := getattr(homeport.errors, n), type)]


def test_every_error_derives_from_the_base_and_has_a_distinct_code():
    classes = _error_classes()
    assert all(issubclass(c, homeport.errors.HomeportError) for c in classes)
    codes = [c.code for c in classes]
    assert len(codes) == len(set(codes))


def test_an_error_reported_by_another_instance_is_raised_here_as_the_same_class():
    for cls in [*_error_classes(), homeport.errors.HomeportError]:
        again = homeport.errors.error_for_code(cls.code, "said there")
        assert type(again) is cls and again.message == "said there" and again.code == cls.code
    unknown = homeport.errors.error_for_code("from_a_newer_version", "new")
    assert type(unknown) is homeport.errors.HomeportError and unknown.code == "from_a_newer_version"


def test_exported_names_exist():
    for module in (homeport.core, homeport.errors, homeport.server, homeport.store, homeport.workspace):
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"
