"""`homeport setup CLIENT`: the client's MCP file, merged, read back by `doctor`; hostile files left untouched."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from homeport.cli import cli
from homeport.cli.hooks import homeport_executable

FILES = {"claude-code": ".mcp.json", "vscode": ".vscode/mcp.json", "cursor": ".cursor/mcp.json"}
TABLES = {"claude-code": "mcpServers", "vscode": "servers", "cursor": "mcpServers"}


@pytest.fixture
def home(shell_home, monkeypatch, tmp_path) -> Path:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("HOMEPORT_STATE_DIR", str(tmp_path / "state"))
    return shell_home


@pytest.fixture
def project(tmp_path, monkeypatch, home) -> Path:
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def doctor_clients() -> list[dict]:
    result = CliRunner().invoke(cli, ["doctor", "--json"], catch_exceptions=False)
    return [c for c in json.loads(result.output)["checks"] if c["name"] == "client"]


def snapshot(root: Path) -> dict[str, tuple[bool, bytes | str]]:
    """Every path under `root` with its bytes (or a symlink's target), to prove nothing changed."""
    seen: dict[str, tuple[bool, bytes | str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            if path.is_symlink():
                seen[str(path)] = (True, os.readlink(path))
            elif path.is_file():
                seen[str(path)] = (False, path.read_bytes())
    return seen


@pytest.mark.parametrize("client", sorted(FILES))
def test_setup_writes_the_clients_file_with_this_installations_absolute_path(project, client):
    result = run("setup", client)
    assert result.exit_code == 0, result.output
    document = json.loads((project / FILES[client]).read_text())
    entry = document[TABLES[client]]["homeport"]
    assert entry["command"] == homeport_executable() and os.path.isabs(entry["command"])
    assert entry["args"][0] == "serve"
    if client == "cursor":
        assert entry["args"] == ["serve", "--workspace", str(project)]
    if client == "vscode":
        assert entry["args"] == ["serve", "--workspace", "${workspaceFolder}"] and entry["type"] == "stdio"


@pytest.mark.parametrize("client", sorted(FILES))
def test_doctor_reads_back_what_setup_wrote_as_ok(project, client):
    assert doctor_clients()[0]["status"] == "warn"  # nothing set up yet
    assert run("setup", client).exit_code == 0
    (check,) = doctor_clients()
    assert check["status"] == "ok" and FILES[client].split("/")[-1] in check["detail"], check


@pytest.mark.parametrize("client", sorted(FILES))
def test_setup_keeps_every_other_server_and_key_in_order_and_the_files_indentation(project, client):
    path = project / FILES[client]
    path.parent.mkdir(exist_ok=True)
    table = TABLES[client]
    before = {
        "inputs": [{"id": "token", "type": "promptString"}],
        table: {
            "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]},
            "homeport": {"command": "/old/venv/bin/homeport", "args": ["serve"]},
            "zeta": {"url": "http://127.0.0.1:9/mcp"},
        },
        "zz_last": True,
    }
    path.write_text(json.dumps(before, indent=4) + "\n")
    result = run("setup", client)
    assert result.exit_code == 0, result.output
    text = path.read_text()
    after = json.loads(text)
    assert list(after) == list(before)
    assert list(after[table]) == ["github", "homeport", "zeta"]
    assert after[table]["github"] == before[table]["github"] and after[table]["zeta"] == before[table]["zeta"]
    assert after["inputs"] == before["inputs"] and after["zz_last"] is True
    assert after[table]["homeport"]["command"] == homeport_executable()
    assert text.splitlines()[1].startswith('    "inputs"')  # four spaces, as the file had
    assert "replaced" in result.output and "2 other server(s) kept" in result.output


def test_setup_twice_changes_nothing_the_second_time(project):
    assert run("setup", "cursor").exit_code == 0
    path = project / ".cursor" / "mcp.json"
    first = path.read_bytes()
    os.utime(path, (0, 0))
    again = run("setup", "cursor")
    assert again.exit_code == 0 and "nothing to change" in again.output
    assert path.read_bytes() == first and path.stat().st_mtime == 0


def test_dry_run_prints_the_merged_file_and_writes_nothing(project):
    (project / ".mcp.json").write_text('{"mcpServers": {"other": {"command": "x"}}}')
    before = snapshot(project)
    result = run("setup", "claude-code", "--dry-run")
    assert result.exit_code == 0, result.output
    assert snapshot(project) == before
    printed = json.loads(result.output.split("\n", 1)[1])
    assert set(printed["mcpServers"]) == {"other", "homeport"}
    assert "nothing written" in result.output.splitlines()[0]


def test_project_names_another_directory_from_the_shell(project, tmp_path, monkeypatch):
    other = tmp_path / "web"
    (other / ".git").mkdir(parents=True)
    (other / "src").mkdir()
    result = run("setup", "cursor", "--project", "../web/src")
    assert result.exit_code == 0, result.output
    entry = json.loads((other / ".cursor" / "mcp.json").read_text())["mcpServers"]["homeport"]
    assert entry["args"] == ["serve", "--workspace", str(other)]  # the project root, not its subfolder
    assert not (project / ".cursor").exists()


def test_a_project_that_does_not_exist_is_refused_naming_it(project):
    result = run("setup", "vscode", "--project", "/nonexistent/shop")
    assert result.exit_code == 1 and "/nonexistent/shop" in result.output


# -- hostile files: refused, nothing changes ------------------------------------------------------


HOSTILE = {
    "invalid JSON": "{ not json",
    "JSON with comments": '{\n  // my servers\n  "servers": {}\n}\n',
    "a list": "[1, 2]",
    "a string": '"homeport"',
    "null": "null",
    "a server table that is a list": '{"servers": [], "mcpServers": []}',
}


@pytest.mark.parametrize("client", sorted(FILES))
@pytest.mark.parametrize("content", sorted(HOSTILE), ids=sorted(HOSTILE))
def test_a_file_that_is_not_a_json_object_is_refused_naming_it_and_left_as_it_was(project, client, content):
    path = project / FILES[client]
    path.parent.mkdir(exist_ok=True)
    path.write_text(HOSTILE[content])
    before = snapshot(project)
    result = run("setup", client)
    assert result.exit_code == 1, result.output
    assert str(path) in result.output and "nothing was written" in result.output
    assert snapshot(project) == before


def test_a_file_with_comments_gets_the_snippet_to_paste(project):
    path = project / ".vscode" / "mcp.json"
    path.parent.mkdir()
    path.write_text(HOSTILE["JSON with comments"])
    result = run("setup", "vscode")
    assert "by hand" in result.output and '"${workspaceFolder}"' in result.output


@pytest.mark.parametrize("client", sorted(FILES))
def test_a_config_file_that_is_a_symlink_to_elsewhere_is_refused_and_its_target_untouched(project, tmp_path, client):
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text('{"mcpServers": {}, "servers": {}}')
    path = project / FILES[client]
    path.parent.mkdir(exist_ok=True)
    path.symlink_to(elsewhere)
    before = snapshot(tmp_path)
    result = run("setup", client)
    assert result.exit_code == 1 and "symlink" in result.output and str(path) in result.output
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("client", ["vscode", "cursor"])
def test_a_config_folder_that_is_a_symlink_to_elsewhere_is_refused(project, tmp_path, client):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / FILES[client].split("/")[0]).symlink_to(elsewhere)
    before = snapshot(tmp_path)
    result = run("setup", client)
    assert result.exit_code == 1 and "symlink" in result.output
    assert snapshot(tmp_path) == before and list(elsewhere.iterdir()) == []


def test_a_dangling_symlink_is_refused_and_nothing_is_created_at_its_target(project, tmp_path):
    target = tmp_path / "created-by-homeport.json"
    (project / ".mcp.json").symlink_to(target)
    result = run("setup", "claude-code")
    assert result.exit_code == 1 and "symlink" in result.output
    assert not target.exists()


def test_a_directory_in_the_files_place_is_refused(project):
    (project / ".mcp.json").mkdir()
    result = run("setup", "claude-code")
    assert result.exit_code == 1 and "not a regular file" in result.output


# -- doctor ---------------------------------------------------------------------------------------


def test_doctor_still_warns_of_no_mcp_entry_when_only_a_hook_is_installed(project, home):
    # Issue 27: with a Claude Code hook installed but no MCP server entry, doctor stopped warning.
    exe = homeport_executable()
    (home / ".claude").mkdir()
    command = f"{exe} context --task x --budget 500"
    (home / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": command}]}]}})
    )
    (check,) = doctor_clients()
    assert check["status"] == "warn" and "homeport setup" in check["fix"]


def test_doctor_warns_of_a_cursor_entry_that_names_another_project(project, tmp_path):
    other = tmp_path / "web"
    other.mkdir()
    assert run("setup", "cursor").exit_code == 0
    path = project / ".cursor" / "mcp.json"
    document = json.loads(path.read_text())
    document["mcpServers"]["homeport"]["args"] = ["serve", "--workspace", str(other)]
    path.write_text(json.dumps(document))
    (check,) = doctor_clients()
    assert check["status"] == "warn" and str(other) in check["detail"] and "homeport setup cursor" in check["fix"]
