"""The admin commands through the core's services (core/stores.py, core/credentials.py): `homeport migrate`
on a SQLite workspace, `homeport copy`'s refusals before anything is copied, and `homeport tokens` /
`homeport directory` on the files the server reads. Each answer is the one the commands gave when they
opened stores and files themselves."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from click.testing import CliRunner

from homeport.cli import cli
from homeport.core.settings import ServeSettings
from homeport.core.stores import copy_key, locate_store, schema_revision, store_file


def test_migrate_without_a_store_says_so_and_creates_nothing(shell_in_project: Path) -> None:
    done = CliRunner().invoke(cli, ["migrate"])
    assert done.exit_code == 0, done.output
    path = store_file(Path(os.path.realpath(shell_in_project)))
    assert done.output == f"{path}: no store yet (created at revision {schema_revision()} by the first write)\n"
    assert not path.exists() and not path.parent.exists()


def test_migrate_brings_the_workspace_store_to_this_versions_revision(shell_in_project: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["decisions", "add", "Use SQLite"]).exit_code == 0
    done = runner.invoke(cli, ["migrate"])
    assert done.exit_code == 0, done.output
    path = store_file(Path(os.path.realpath(shell_in_project)))
    assert done.output == f"{path}: at revision {schema_revision()}\n"


def test_copy_refuses_a_store_that_is_neither_sqlite_nor_postgresql(tmp_path: Path) -> None:
    (tmp_path / "shop").mkdir()
    done = CliRunner().invoke(cli, ["copy", "--from", "mysql://db/x", "--to", f"sqlite:{tmp_path / 'shop'}"])
    assert done.exit_code == 1
    assert "'mysql://db/x' is not a store: use sqlite:PATH or postgresql://user@host/db" in done.output


def test_copy_refuses_a_sqlite_workspace_that_is_not_a_directory(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    done = CliRunner().invoke(cli, ["copy", "--from", f"sqlite:{missing}", "--to", f"sqlite:{tmp_path}"])
    assert done.exit_code == 1
    assert f"sqlite:{missing}: {missing} is not a directory" in done.output
    assert not missing.exists()


def test_copy_of_a_workspace_without_memory_says_there_is_nothing_to_copy(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "target").mkdir()
    source = f"sqlite:{tmp_path / 'empty'}"
    done = CliRunner().invoke(cli, ["copy", "--from", source, "--to", f"sqlite:{tmp_path / 'target'}"])
    assert done.exit_code == 1
    assert f"{source} holds no memory for {tmp_path / 'empty'}; nothing to copy" in done.output
    assert not store_file(tmp_path / "target").exists()


def test_copy_between_two_postgresql_stores_needs_a_key() -> None:
    done = CliRunner().invoke(cli, ["copy", "--from", "postgresql://a/x", "--to", "postgresql://b/y"])
    assert done.exit_code == 2 and "copying between two PostgreSQL stores needs --key" in done.output


def test_the_key_of_a_copy_is_the_sqlite_sides_absolute_path_unless_given(tmp_path: Path) -> None:
    assert copy_key(f"sqlite:{tmp_path}", "postgresql://db/x", None) == str(tmp_path)
    assert copy_key("postgresql://db/x", f"sqlite:{tmp_path}", None) == str(tmp_path)
    assert copy_key(f"sqlite:{tmp_path}", "postgresql://db/x", "acme/api") == "acme/api"
    assert copy_key("postgresql://db/x", "postgresql://db/y", None) is None


def test_a_sqlite_workspace_is_located_at_its_file_without_creating_it(tmp_path: Path) -> None:
    (tmp_path / "shop" / ".git").mkdir(parents=True)
    found = locate_store(tmp_path / "shop", None)
    assert (found.kind, found.where, found.exists) == ("sqlite", str(store_file(tmp_path / "shop")), False)
    assert not (tmp_path / "shop" / ".homeport").exists()


def test_tokens_and_the_directory_are_the_files_the_server_reads(tmp_path: Path) -> None:
    runner = CliRunner()
    data = ["--data-dir", str(tmp_path)]
    assert runner.invoke(cli, ["directory", "add-org", "acme", *data]).exit_code == 0
    assert runner.invoke(cli, ["directory", "add-agent", "acme", "ada", *data]).exit_code == 0
    minted = runner.invoke(cli, ["tokens", "add", "ada", *data])
    assert minted.exit_code == 0, minted.output
    refused = runner.invoke(cli, ["tokens", "add", "bob", *data])
    assert refused.exit_code == 1  # an agent the directory does not know gets no token
    settings = ServeSettings(data_dir=tmp_path, directory_file=tmp_path / "directory.toml")
    assert settings.tokens_file is not None and settings.tokens_file.exists()
    assert settings.directory_file is not None and "ada" in settings.directory_file.read_text(encoding="utf-8")
    listed = json.loads(runner.invoke(cli, ["tokens", "list", "--json", *data]).output)
    assert [t["agent_id"] for t in listed] == ["ada"]


def test_the_http_start_up_line_says_when_no_token_was_minted_and_hides_the_store_password(tmp_path: Path) -> None:
    from homeport.cli.serve import _banner
    from homeport.core.runtime import build_runtime

    settings = ServeSettings(
        transport="http", cwd=tmp_path, allow_roots=(tmp_path,), home=tmp_path, data_dir=tmp_path / "data", auth=True
    )
    runtime = build_runtime(settings)
    try:
        assert "bearer tokens required (none minted yet: `homeport tokens add AGENT`)" in _banner(runtime)
        assert CliRunner().invoke(cli, ["tokens", "add", "ada", "--data-dir", str(tmp_path / "data")]).exit_code == 0
        assert "none minted yet" not in _banner(runtime)
        # The line only reads the URL: a runtime whose settings name a PostgreSQL store opens nothing here.
        with_store = dataclasses.replace(settings, store_url="postgresql://homeport:s3cret@db/homeport")
        shown = _banner(dataclasses.replace(runtime, settings=with_store))
        assert "; memory in postgresql://homeport:***@db/homeport" in shown and "s3cret" not in shown
    finally:
        runtime.close()
