"""A repository's config is a suggestion until this user trusts it (`homeport trust`, issue 22): the trust
record binds the project's root, team server, key and config bytes; the token's source is the user's; the
trust file is the user's own; a database off this machine waits as the team server does."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import Client

from homeport.cli.main import cli
from homeport.errors import ConfigError
from homeport.mesh.team import TeamRouter
from homeport.workspace.trust import TrustBook, TrustRecord, config_digest

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

SECRET = "cloud-secret-0f3a9c1e"
EVIL = 'project = "evil/x"\n[team]\nurl = "http://attacker.example"\ntoken_env = "SOME_CLOUD_SECRET"\n'


def clone(path: Path, config: str = EVIL, origin: str = "git@github.com:evil/x.git") -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    subprocess.run(["git", "remote", "add", "origin", origin], cwd=path, check=True)
    (path / ".homeport").mkdir()
    (path / ".homeport" / "config.toml").write_text(config, encoding="utf-8")
    return path.resolve()


def grant(book: TrustBook, root: Path, *, url: str | None, key: str | None, token: str, hosts=()) -> TrustRecord:
    record = TrustRecord(str(root), config_digest(root), url, key, token, tuple(hosts), "2026-01-01T00:00:00+00:00")
    book.grant(record)
    return record


@pytest.fixture
def book(tmp_path: Path) -> TrustBook:
    return TrustBook(tmp_path / "config" / "homeport" / "trusted-projects.json")


def test_an_untrusted_team_server_gets_no_route_and_its_token_variable_is_never_read(tmp_path, book) -> None:
    root = clone(tmp_path / "x")
    read: list[str] = []

    class Watched(dict):
        def get(self, key, default=None):
            read.append(key)
            return super().get(key, default)

    router = TeamRouter(Watched(SOME_CLOUD_SECRET=SECRET), book)
    assert router.route(root) is None
    waiting = router.waiting(root)
    assert waiting is not None and waiting.reason == "never trusted on this machine"
    assert (waiting.team_url, waiting.project_key, waiting.suggested_token_env) == (
        "http://attacker.example",
        "evil/x",
        "SOME_CLOUD_SECRET",
    )
    assert waiting.command == f"homeport trust --project {root}"
    assert read == [] and SECRET not in waiting.line()


def test_the_token_comes_from_the_source_the_user_chose_never_from_the_repositorys_token_env(tmp_path, book) -> None:
    root = clone(tmp_path / "x")
    environ = {"SOME_CLOUD_SECRET": SECRET, "MY_TEAM_TOKEN": "hp_mine"}
    grant(book, root, url="http://attacker.example", key="evil/x", token="env:MY_TEAM_TOKEN")
    route = TeamRouter(environ, book).route(root)
    assert route is not None and (route.token, route.token_from) == ("hp_mine", "$MY_TEAM_TOKEN")
    grant(book, root, url="http://attacker.example", key="evil/x", token="none")
    route = TeamRouter(environ, book).route(root)
    assert route is not None and route.token is None
    grant(book, root, url="http://attacker.example", key="evil/x", token="env:MY_UNSET")
    with pytest.raises(ConfigError, match="MY_UNSET") as refused:
        TeamRouter(environ, book).route(root)
    assert SECRET not in refused.value.message and "--keyring" in refused.value.message


def test_a_config_changed_after_trust_waits_again_whatever_changed(tmp_path, book) -> None:
    root = clone(tmp_path / "x")
    grant(book, root, url="http://attacker.example", key="evil/x", token="none")
    router = TeamRouter({"SOME_CLOUD_SECRET": SECRET}, book)
    assert router.route(root) is not None
    for changed in (
        EVIL.replace("attacker.example", "elsewhere.example"),
        EVIL.replace('"evil/x"', '"evil/y"'),
        EVIL + "# a comment\n",
    ):
        (root / ".homeport" / "config.toml").write_text(changed, encoding="utf-8")
        assert router.route(root) is None, changed
        waiting = router.waiting(root)
        assert waiting is not None and "changed since it was trusted" in waiting.reason
    (root / ".homeport" / "config.toml").write_text(EVIL, encoding="utf-8")
    assert router.route(root) is not None  # the very bytes the user trusted


def test_a_record_for_another_team_server_or_key_does_not_count(tmp_path, book) -> None:
    root = clone(tmp_path / "x", EVIL.replace('project = "evil/x"\n', ""))  # the key from the git remote
    grant(book, root, url="http://other.example", key="github.com/evil/x", token="none")
    waiting = TeamRouter({}, book).waiting(root)
    assert waiting is not None and "not http://attacker.example" in waiting.reason
    grant(book, root, url="http://attacker.example", key="github.com/evil/x", token="none")
    assert TeamRouter({}, book).route(root) is not None
    subprocess.run(["git", "remote", "set-url", "origin", "git@github.com:evil/other.git"], cwd=root, check=True)
    waiting = TeamRouter({}, book).waiting(root)
    assert waiting is not None and "github.com/evil/other" in waiting.reason


def test_a_trust_file_or_directory_another_user_may_write_is_refused(tmp_path, book) -> None:
    root = clone(tmp_path / "x")
    grant(book, root, url="http://attacker.example", key="evil/x", token="none")
    assert book.path is not None
    os.chmod(book.path, 0o666)
    with pytest.raises(ConfigError, match="may be changed by other users"):
        TeamRouter({}, TrustBook(book.path)).route(root)
    os.chmod(book.path, 0o600)
    os.chmod(book.path.parent, 0o777)
    with pytest.raises(ConfigError, match="may be changed by other users"):
        TrustBook(book.path).records()
    os.chmod(book.path.parent, 0o700)
    assert str(root) in TrustBook(book.path).records()


def test_a_damaged_trust_file_is_refused_with_the_fix(tmp_path, book) -> None:
    assert book.path is not None
    book.path.parent.mkdir(parents=True, mode=0o700)
    book.path.write_text('{"projects": {"/x": {"token": "steal"}}}', encoding="utf-8")
    os.chmod(book.path, 0o600)
    with pytest.raises(ConfigError, match="damaged") as refused:
        book.records()
    assert "homeport trust" in refused.value.message


def test_without_a_trust_file_nothing_is_trusted(tmp_path) -> None:
    root = clone(tmp_path / "x")
    router = TeamRouter({"SOME_CLOUD_SECRET": SECRET}, TrustBook(None))
    assert router.route(root) is None and router.waiting(root) is not None


# -- the command ------------------------------------------------------------------------------------


@pytest.fixture
def user(shell_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(shell_home / ".config"))
    monkeypatch.setenv("SOME_CLOUD_SECRET", SECRET)
    return shell_home / ".config" / "homeport" / "trusted-projects.json"


def test_trust_shows_what_the_config_asks_and_records_the_users_choice(tmp_path, user) -> None:
    root = clone(tmp_path / "x")
    done = CliRunner().invoke(cli, ["trust", "--project", str(root)])
    assert done.exit_code == 0, done.output
    out = " ".join(done.output.split())
    assert "http://attacker.example" in out and "evil/x" in out
    assert "the repository suggests token_env = SOME_CLOUD_SECRET" in out and SECRET not in out
    [record] = TrustBook(user).records().values()
    assert (record.root, record.team_url, record.project_key, record.token) == (
        str(root),
        "http://attacker.example",
        "evil/x",
        "keyring",
    )
    assert record.config_sha256 == config_digest(root) and oct(user.stat().st_mode & 0o777) == "0o600"
    listed = json.loads(CliRunner().invoke(cli, ["trust", "--list", "--json"]).output)
    assert [p["state"] for p in listed["projects"]] == ["current"]
    (root / ".homeport" / "config.toml").write_text(EVIL + "# changed\n", encoding="utf-8")
    listed = json.loads(CliRunner().invoke(cli, ["trust", "--list", "--json"]).output)
    assert "waiting for trust again" in listed["projects"][0]["state"]
    revoked = CliRunner().invoke(cli, ["trust", "--revoke", "--project", str(root)])
    assert revoked.exit_code == 0 and "No longer trusted" in revoked.output
    assert TrustBook(user).records() == {}


def test_trust_takes_one_token_source_and_a_project_without_a_key_is_refused(tmp_path, user) -> None:
    root = clone(tmp_path / "x")
    both = CliRunner().invoke(cli, ["trust", "--project", str(root), "--keyring", "--token-env", "X"])
    assert both.exit_code == 2 and "choose one token source" in both.output
    keyless = clone(tmp_path / "keyless", EVIL.replace('project = "evil/x"\n', ""), origin="/nowhere")
    refused = CliRunner().invoke(cli, ["trust", "--project", str(keyless)])
    assert refused.exit_code == 1 and 'add project = "owner/name"' in refused.output
    assert not user.exists()


def test_a_config_that_asks_for_nothing_off_this_machine_needs_no_trust(tmp_path, user) -> None:
    root = clone(tmp_path / "x", '[database]\nurl = "sqlite:///db.sqlite3"\n')
    done = CliRunner().invoke(cli, ["trust", "--project", str(root)])
    assert done.exit_code == 0 and "Nothing to trust" in done.output and not user.exists()


# -- a database off this machine --------------------------------------------------------------------


REMOTE_DB = '[database]\nurl = "postgresql://u:${SOME_CLOUD_SECRET}@db.attacker.invalid:5432/x"\n'


@pytest.mark.anyio
@pytest.mark.parametrize("where", ["config", "dotenv"])
async def test_a_database_off_this_machine_waits_for_trust_and_is_refused_before_any_connection(
    tmp_path, user, server_factory, where
) -> None:
    if where == "config":
        root = clone(tmp_path / "x", REMOTE_DB)
    else:
        root = clone(tmp_path / "x", "")
        (root / ".env").write_text("DATABASE_URL=postgresql://u:pw@db.attacker.invalid:5432/x\n", encoding="utf-8")
    environ = {"SOME_CLOUD_SECRET": SECRET}
    async with Client(server_factory(transport="stdio", trust_file=user, environ=environ)) as client:
        refused = await client.call_tool("get_tables", {"workspace": str(root)})
        assert refused.structured_content["error"]["code"] == "database_not_allowed"
        text = refused.content[0].text
        assert "db.attacker.invalid" in text and "waiting for trust" in text
        assert f"homeport trust --project {root}" in text and SECRET not in text
    # `homeport trust` records the host; then the call goes there (and fails to connect: no such host).
    done = CliRunner().invoke(cli, ["trust", "--project", str(root)])
    assert done.exit_code == 0, done.output
    assert "db.attacker.invalid" in done.output and "its credentials go to" in done.output
    [record] = TrustBook(user).records().values()
    assert record.database_hosts == ("db.attacker.invalid",) and record.team_url is None
    async with Client(server_factory(transport="stdio", trust_file=user, environ=environ)) as client:
        tried = await client.call_tool("get_tables", {"workspace": str(root)})
        assert tried.is_error and tried.structured_content["error"]["code"] != "database_not_allowed"


@pytest.mark.anyio
async def test_a_local_database_needs_no_trust(tmp_path, user, server_factory) -> None:
    import sqlite3

    root = clone(tmp_path / "x", EVIL)
    with sqlite3.connect(root / "db.sqlite3") as db:
        db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    async with Client(server_factory(transport="stdio", trust_file=user)) as client:
        tables = await client.call_tool("get_tables", {"workspace": str(root)})
        assert not tables.is_error and "orders" in tables.structured_content["tables"]
