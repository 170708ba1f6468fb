"""A team project at the shell: the memory commands, `where` and `doctor` reach the project's team
server, and the token can come from the keyring (real processes: a team server on PostgreSQL, the
`homeport` command, a stdio `homeport serve`, and keyrings.alt's file backend as the user's keyring)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._support import CLI_BOOT, clean_env, free_port, http_client, ok, stdio_client
from ._team import KEY, Team, team_clone, team_server, trust

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.postgres,
    pytest.mark.timeout(180),
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]

KEYRING_BACKEND = "keyrings.alt.file.PlaintextKeyring"


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory, store_postgres_url: str) -> Iterator[Team]:
    with team_server(tmp_path_factory.mktemp("team"), "--store", store_postgres_url) as running:
        yield running


def shell_env(tmp: Path, token: str | None = None, **extra: str) -> dict[str, str]:
    """A person's shell: its own HOME, config directory and registry, the team token in the environment
    when given."""
    env = clean_env(HOME=str(tmp), XDG_CONFIG_HOME=str(tmp / ".config"), HOMEPORT_STATE_DIR=str(tmp / "state"), **extra)
    env.pop("HOMEPORT_TEAM_TOKEN", None)
    if token is not None:
        env["HOMEPORT_TEAM_TOKEN"] = token
    return env


def trusted_clone(path: Path, url: str, tmp: Path, *token_source: str) -> Path:
    """A team clone the user of `tmp` trusted (`homeport trust`), the token from HOMEPORT_TEAM_TOKEN unless
    `token_source` says otherwise (`--keyring`). Untrusted, nothing goes to the team server: test_team_trust.py."""
    root = team_clone(path, url)
    trust(root, shell_env(tmp), *(token_source or ("--token-env", "HOMEPORT_TEAM_TOKEN")))
    return root


def homeport(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CLI_BOOT, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def keyring_env(tmp: Path, token: str | None = None, **extra: str) -> dict[str, str]:
    """`shell_env` without the token variable, with a keyring (keyrings.alt's file backend under tmp)."""
    return shell_env(tmp, token, PYTHON_KEYRING_BACKEND=KEYRING_BACKEND, XDG_DATA_HOME=str(tmp / "xdg"), **extra)


def store_in_keyring(env: dict[str, str], url: str, token: str) -> None:
    """`keyring set homeport URL` as a person runs it, reading the token on stdin."""
    done = subprocess.run(
        [sys.executable, "-m", "keyring", "set", "homeport", url],
        input=token + "\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


async def decisions_on_the_team_server(team: Team) -> list[str]:
    headers = {"Authorization": f"Bearer {team.token}", "X-Workspace-Id": KEY}
    async with http_client(team.url + "/mcp", mode="auto", headers=headers) as client:
        return [d["summary"] for d in ok(await client.call_tool("get_decisions", {"limit": 100}))["decisions"]]


# -- the memory commands ------------------------------------------------------------------------------


async def test_memory_commands_in_a_team_project_write_to_and_read_from_the_team_server(team, tmp_path) -> None:
    root = trusted_clone(tmp_path / "api", team.url, tmp_path)
    env = shell_env(tmp_path, team.token)
    added = homeport("decisions", "add", "ship the shell to the team", "--rationale", "one memory", cwd=root, env=env)
    assert added.returncode == 0, added.stderr
    # The first line says where it wrote: the team server and the project's key, not a local file.
    first = added.stdout.splitlines()[0]
    assert team.url in first and KEY in first, added.stdout
    # --no-daemon keeps a call away from the local daemon, not from the team server: the local store
    # is not this project's memory.
    again = homeport("decisions", "add", "also from --no-daemon", "--no-daemon", cwd=root, env=env)
    assert again.returncode == 0, again.stderr
    listed = homeport("decisions", "list", "--json", cwd=root, env=env)
    assert listed.returncode == 0, listed.stderr
    report = json.loads(listed.stdout)
    assert [d["summary"] for d in report["decisions"]][:2] == ["also from --no-daemon", "ship the shell to the team"]
    assert report["workspace"]["key"] == KEY and report["workspace"]["team"] == team.url
    found = homeport("search", "shell", "--json", cwd=root, env=env)
    assert found.returncode == 0, found.stderr
    assert any(r.get("title") == "ship the shell to the team" for r in json.loads(found.stdout)["results"])
    # A session hook's context comes from the team's memory and says so.
    context = homeport("context", "--task", "ship the shell", cwd=root, env=env)
    assert context.returncode == 0, context.stderr
    assert "ship the shell to the team" in context.stdout and f"{KEY} on the team server {team.url}" in context.stdout
    assert {"ship the shell to the team", "also from --no-daemon"} <= set(await decisions_on_the_team_server(team))
    assert not (root / ".homeport" / "homeport.db").exists()


def test_a_refusal_of_the_team_server_is_the_same_line_and_exit_status_as_a_local_one(team, tmp_path) -> None:
    local = tmp_path / "local"
    (local / ".git").mkdir(parents=True)
    remote = trusted_clone(tmp_path / "api", team.url, tmp_path)
    env = shell_env(tmp_path, team.token)
    here = homeport("progress", "update", "99999", "--status", "DONE", cwd=local, env=env)
    there = homeport("progress", "update", "99999", "--status", "DONE", cwd=remote, env=env)
    assert here.returncode == there.returncode == 1
    assert there.stderr == here.stderr and "`homeport progress list`" in there.stderr, there.stderr
    # What needs the project's own files cannot run on the team server; the refusal says so in the
    # shell's terms rather than sending the user to "the machine that has the project checked out".
    export = homeport("export", cwd=remote, env=env)
    assert export.returncode == 1 and team.url in export.stderr and "project's own files" in export.stderr
    assert "checked out" not in export.stderr and not (remote / ".homeport" / "export").exists()


def test_an_unreachable_team_server_fails_the_command_naming_it_and_writes_nothing_here(tmp_path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    root = trusted_clone(tmp_path / "api", url, tmp_path)
    for args in (["decisions", "add", "lost?"], ["decisions", "add", "lost?", "--no-daemon"], ["search", "x"]):
        done = homeport(*args, cwd=root, env=shell_env(tmp_path, "hp_whatever"))
        assert done.returncode == 1, done.stdout
        assert url in done.stderr and "not served from a local store" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    assert not (root / ".homeport" / "homeport.db").exists()


def test_a_wrong_token_is_a_clear_refusal_at_the_shell(team, tmp_path) -> None:
    root = trusted_clone(tmp_path / "api", team.url, tmp_path)
    done = homeport("decisions", "list", cwd=root, env=shell_env(tmp_path, "hp_not_a_token"))
    assert done.returncode == 1
    assert team.url in done.stderr and "HTTP 401" in done.stderr and "token was refused" in done.stderr
    assert "hp_not_a_token" not in done.stderr + done.stdout


# -- the token in the keyring -------------------------------------------------------------------------


async def test_a_token_in_the_keyring_reaches_the_team_server_from_stdio_and_the_shell(team, tmp_path) -> None:
    root = trusted_clone(tmp_path / "api", team.url, tmp_path, "--keyring")
    env = keyring_env(tmp_path)
    store_in_keyring(env, team.url, team.token)
    async with stdio_client(cwd=root, mode="auto", env=env) as client:
        ok(await client.call_tool("log_decision", {"summary": "token from the keyring"}))
        where = ok(await client.call_tool("where_am_i", {}))
        assert where["team"] == {"url": team.url, "project_key": KEY, "token": "keyring"}
    done = homeport("decisions", "list", "--json", cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    assert "token from the keyring" in [d["summary"] for d in json.loads(done.stdout)["decisions"]]
    assert "token from the keyring" in await decisions_on_the_team_server(team)


async def test_a_wrong_token_in_the_keyring_is_refused_with_401_from_stdio_and_the_shell(team, tmp_path) -> None:
    root = trusted_clone(tmp_path / "api", team.url, tmp_path, "--keyring")
    env = keyring_env(tmp_path)
    store_in_keyring(env, team.url, "hp_stale_token")
    async with stdio_client(cwd=root, mode="auto", env=env) as client:
        refused = await client.call_tool("get_decisions", {})
        assert refused.structured_content["error"]["code"] == "team_server_unavailable"
    done = homeport("decisions", "add", "x", cwd=root, env=env)
    assert done.returncode == 1
    assert "HTTP 401" in done.stderr and "token was refused" in done.stderr and "hp_stale_token" not in done.stderr


def test_without_a_token_anywhere_the_error_names_the_variable_and_the_keyring(team, tmp_path) -> None:
    root = trusted_clone(tmp_path / "api", team.url, tmp_path)
    done = homeport("decisions", "list", cwd=root, env=keyring_env(tmp_path))
    assert done.returncode == 1
    # The variable the user chose when trusting the project, and how to choose the keyring instead.
    assert "HOMEPORT_TEAM_TOKEN" in done.stderr and f"homeport trust --project {root}" in done.stderr
    assert "--keyring" in done.stderr
    in_keyring = trusted_clone(tmp_path / "other", team.url, tmp_path, "--keyring")
    done = homeport("decisions", "list", cwd=in_keyring, env=keyring_env(tmp_path))
    assert done.returncode == 1 and f"keyring set homeport {team.url}" in done.stderr


def test_without_the_keyring_package_the_error_says_how_to_install_it(team, tmp_path) -> None:
    root = trusted_clone(tmp_path / "api", team.url, tmp_path, "--keyring")
    # The keyring extra not installed: `import keyring` fails as it would then.
    boot = "import sys; sys.modules['keyring'] = None; " + CLI_BOOT
    done = subprocess.run(
        [sys.executable, "-c", boot, "decisions", "list"],
        cwd=root,
        env=shell_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "pip install 'homeport[keyring]'" in done.stderr and "--token-env VAR" in done.stderr


# -- where and doctor ---------------------------------------------------------------------------------


def test_where_and_doctor_in_a_team_project_show_the_team_server_and_check_it(team, tmp_path) -> None:
    root = trusted_clone(tmp_path / "api", team.url, tmp_path)
    env = shell_env(tmp_path, team.token)
    where = json.loads(homeport("where", "--json", cwd=root, env=env).stdout)
    assert (where["store_kind"], where["store"], where["project_key"]) == ("team", team.url, KEY)
    assert where["trust"] is None  # nothing waits: trusted
    text = homeport("where", cwd=root, env=env).stdout
    assert f"team server {team.url}, project {KEY}" in " ".join(text.split())
    checked = json.loads(homeport("doctor", "--json", cwd=root, env=env).stdout)
    [store] = [c for c in checked["checks"] if c["name"] == "store"]
    assert store["status"] == "ok" and team.url in store["detail"] and KEY in store["detail"], store
    [trusted] = [c for c in checked["checks"] if c["name"] == "trust"]
    assert trusted["status"] == "ok" and team.url in trusted["detail"], trusted
    refused = json.loads(homeport("doctor", "--json", cwd=root, env=shell_env(tmp_path, "hp_nope")).stdout)
    [store] = [c for c in refused["checks"] if c["name"] == "store"]
    assert store["status"] == "fail" and "HTTP 401" in store["detail"] and "HOMEPORT_TEAM_TOKEN" in store["fix"]
