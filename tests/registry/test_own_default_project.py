"""`serve --http --own` without directories owns the project the user stands in (issue 27), not the
whole --allow-root folder; outside a project (or outside the allowed roots) it owns the allowed roots."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from homeport.cli.ownership import own_workspaces, registry_at


@pytest.fixture
def src(tmp_path: Path) -> Path:
    for name in ("alpha", "beta"):
        (tmp_path / "src" / name / ".git").mkdir(parents=True)
    (tmp_path / "src" / "alpha" / "pkg").mkdir()
    return (tmp_path / "src").resolve()


def owned_after_own(state: Path, allow_roots: tuple[str, ...] = (), dirs: tuple[str, ...] = ()) -> set[Path]:
    registry = registry_at(state)
    with click.Context(click.Command("serve")):
        own_workspaces(
            own=True,
            dirs=dirs,
            take_over=False,
            use_http=True,
            allow_roots=allow_roots,
            host="127.0.0.1",
            port=8765,
            state_dir=state,
        )
    try:
        return {Path(p) for p in registry.read().owners}
    finally:
        registry.release()


def test_own_without_directories_owns_the_project_the_user_is_in_not_the_allowed_root(src, tmp_path, monkeypatch):
    monkeypatch.chdir(src / "alpha" / "pkg")
    assert owned_after_own(tmp_path / "state", allow_roots=(str(src),)) == {src / "alpha"}


def test_own_without_directories_in_a_project_that_is_the_default_allowed_root_owns_it(src, tmp_path, monkeypatch):
    monkeypatch.chdir(src / "beta")
    assert owned_after_own(tmp_path / "state") == {src / "beta"}


def test_own_without_directories_outside_any_project_owns_the_allowed_roots_as_before(src, tmp_path, monkeypatch):
    monkeypatch.chdir(src)
    assert owned_after_own(tmp_path / "state", allow_roots=(str(src),)) == {src}


def test_own_from_a_project_outside_the_allowed_roots_never_owns_that_project(src, tmp_path, monkeypatch):
    outside = tmp_path / "elsewhere" / "repo"
    (outside / ".git").mkdir(parents=True)
    monkeypatch.chdir(outside)
    assert owned_after_own(tmp_path / "state", allow_roots=(str(src),)) == {src}


def test_directories_named_on_the_command_line_still_win(src, tmp_path, monkeypatch):
    monkeypatch.chdir(src / "alpha")
    owned = owned_after_own(tmp_path / "state", allow_roots=(str(src),), dirs=(str(src / "beta"),))
    assert owned == {src / "beta"}
