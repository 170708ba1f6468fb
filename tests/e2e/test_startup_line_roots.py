"""The stdio start-up line names what calls will use (issue 22, finding 12, second half).

With CLAUDE_PROJECT_DIR=A and a client that sends roots, the start-up line named `A (from
CLAUDE_PROJECT_DIR)` while every call reported `roots`: a person reading the editor's log was told
the wrong workspace.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ._support import clean_env, make_project
from .test_stdio_hardening import stdio

pytestmark = pytest.mark.slow


def _initialize(roots: bool) -> str:
    capabilities = {"roots": {"listChanged": False}} if roots else {}
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": capabilities,
        "clientInfo": {"name": "raw", "version": "0"},
    }
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})


def _log_without_a_workspace(pipe, roots: list[Path] | None) -> dict:
    call = {"name": "log_decision", "arguments": {"summary": "where does this go"}}
    pipe.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}))
    message = pipe.receive(within=30)
    if message.get("method") == "roots/list":
        assert roots is not None, message
        listed = {"roots": [{"uri": root.as_uri(), "name": root.name} for root in roots]}
        pipe.send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": listed}))
        message = pipe.receive(within=30)
    assert message["id"] == 2, message
    return message["result"]["structuredContent"]["workspace"]


def test_with_a_client_that_sends_roots_the_log_names_its_roots_not_claude_project_dir(tmp_path: Path) -> None:
    hinted, rooted, cwd = (make_project(tmp_path / name) for name in ("hinted", "rooted", "cwd"))
    env = clean_env(CLAUDE_PROJECT_DIR=str(hinted))
    with stdio(cwd, "--allow-root", str(tmp_path), env=env, handshake=False) as pipe:
        pipe.send(_initialize(roots=True))
        assert pipe.receive()["id"] == 1
        pipe.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        workspace = _log_without_a_workspace(pipe, [rooted])
        assert pipe.process.stdin is not None
        pipe.process.stdin.close()
        pipe.process.wait(timeout=30)
        log = pipe.stderr()
    assert workspace == {"root": str(rooted), "source": "roots"}
    lines = log.splitlines()
    # Before the client connects the line can only say what a call uses when the client sends no roots.
    assert lines[0] == (
        f"homeport: stdio; default workspace {hinted} (from CLAUDE_PROJECT_DIR) unless the client sends roots"
    ), log
    # Once the client says it has roots, the log says what calls will use.
    assert f"homeport: the client sends roots: a call that names no workspace uses them, not {hinted}" in log, log


def test_a_client_without_roots_is_told_nothing_more(tmp_path: Path) -> None:
    hinted, cwd = make_project(tmp_path / "hinted"), make_project(tmp_path / "cwd")
    with stdio(cwd, env=clean_env(CLAUDE_PROJECT_DIR=str(hinted)), handshake=False) as pipe:
        pipe.send(_initialize(roots=False))
        assert pipe.receive()["id"] == 1
        pipe.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        assert _log_without_a_workspace(pipe, None) == {"root": str(hinted), "source": "client_env"}
        assert pipe.process.stdin is not None
        pipe.process.stdin.close()
        pipe.process.wait(timeout=30)
        log = pipe.stderr()
    assert "client sends roots:" not in log, log


def test_a_configured_workspace_wins_over_roots_and_the_line_says_so_plainly(tmp_path: Path) -> None:
    configured, cwd = make_project(tmp_path / "configured"), make_project(tmp_path / "cwd")
    with stdio(cwd, "--workspace", str(configured), handshake=False) as pipe:
        pipe.send(_initialize(roots=True))
        assert pipe.receive()["id"] == 1
        assert pipe.process.stdin is not None
        pipe.process.stdin.close()
        pipe.process.wait(timeout=30)
        log = pipe.stderr()
    assert log.splitlines()[0] == (
        f"homeport: stdio; default workspace {configured} (from --workspace/HOMEPORT_WORKSPACE)"
    ), log
    assert "client sends roots:" not in log, log
