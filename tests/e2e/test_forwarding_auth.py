"""Forwarding to an owner started with --auth: the front end proves it runs as the owner's user with
the owner's own token (a file only that user can read), names the calling agent, and the owner checks
that agent's access again. Real processes: an `serve --http --own --auth` owner and stdio/HTTP front ends."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from homeport.files.directory import DirectoryFile
from homeport.files.tokens import TokenStore

from ._support import (
    clean_env,
    error_text,
    http_client,
    make_project,
    ok,
    refused_with_403,
    running_http_server,
    stdio_client,
)
from .test_forwarding import DEADLINE_S, RunningOwner, _registered, start_owner

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(180)]


@pytest.fixture
def auth_owner(tmp_path: Path) -> Iterator[tuple[Path, Path, Path, dict[str, str], RunningOwner]]:
    """(state dir, base, the owned project, tokens by agent, the owner): ada may use the project, zed may not."""
    base = (tmp_path / "src").resolve()
    project = make_project(base / "alpha")
    data = tmp_path / "data"
    directory = DirectoryFile(data / "directory.toml")
    directory.add_organization("acme")
    directory.add_agent("acme", "ada")
    directory.add_workspace_root("acme", str(project))
    directory.add_organization("other")
    directory.add_agent("other", "zed")
    tokens = TokenStore(data / "tokens.json")
    minted = {agent: tokens.add(agent) for agent in ("ada", "zed")}
    state = tmp_path / "state"
    owner = start_owner(state, project, tmp_path / "owner.log", "--auth", "--data-dir", str(data))
    try:
        yield state, base, project, minted, owner
    finally:
        if owner.process.poll() is None:
            owner.process.terminate()
        owner.process.wait(timeout=DEADLINE_S)


def _token_ref(state: Path, pid: int) -> Path:
    """The owner's secret (its token): where Homeport keeps it, named by no entry; the entry says --auth."""
    owners = json.loads((state / "registry.json").read_text(encoding="utf-8"))["owners"]
    entries = [entry for entry in owners.values() if entry["pid"] == pid]
    assert entries and all(entry["auth"] is True and "token_ref" not in entry for entry in entries), owners
    return state / "secrets" / f"{pid}.key"


def front_end(state: Path, base: Path, *args: str):
    env = clean_env(HOMEPORT_STATE_DIR=str(state))
    return stdio_client(cwd=base, mode="auto", args=("--allow-root", str(base), *args), env=env)


def test_an_auth_owner_registers_a_token_only_its_user_can_read_and_removes_it_on_exit(auth_owner) -> None:
    state, _base, _project, tokens, owner = auth_owner
    ref = _token_ref(state, owner.pid)
    assert stat.S_IMODE(ref.stat().st_mode) == 0o600
    assert stat.S_IMODE(ref.parent.stat().st_mode) == 0o700
    # The token is the owner's alone: agents' tokens are not it, and it opens the owner's /mcp.
    assert ref.read_text(encoding="utf-8").strip() not in tokens.values()
    owner.process.terminate()
    owner.process.wait(timeout=DEADLINE_S)
    assert not ref.exists()
    assert _registered(state, owner.pid) is None


async def test_a_stdio_front_end_forwards_as_its_agent_and_the_owner_checks_that_agent(auth_owner) -> None:
    state, base, project, tokens, owner = auth_owner
    root = str(project)
    async with front_end(state, base, "--agent", "ada") as client:
        written = ok(await client.call_tool("log_decision", {"workspace": root, "summary": "by ada"}))
        assert written["workspace"]["source"] == "argument" and "served_by" in written["workspace"]
        where = ok(await client.call_tool("where_am_i", {"workspace": root}))
        assert where["served_by"]["pid"] == owner.pid
    # The owner's store holds it: read back directly with ada's own token.
    headers = {"Authorization": f"Bearer {tokens['ada']}", "X-Workspace-Id": root}
    async with http_client(owner.endpoint + "/mcp", mode="auto", headers=headers) as direct:
        read = ok(await direct.call_tool("get_decisions", {}))
        assert [d["summary"] for d in read["decisions"]] == ["by ada"]
    # zed's organization does not list the project: the owner refuses zed, forwarded or not.
    async with front_end(state, base, "--agent", "zed") as client:
        refused = await client.call_tool("get_decisions", {"workspace": root})
        assert refused.structured_content["error"]["code"] == "workspace_access_denied"
        assert "zed" in error_text(refused)


async def test_a_front_end_with_no_agent_is_told_to_name_one_and_nothing_reaches_the_owner(auth_owner) -> None:
    state, base, project, _tokens, owner = auth_owner
    async with front_end(state, base) as client:
        refused = await client.call_tool("log_decision", {"workspace": str(project), "summary": "nobody"})
        text = error_text(refused)
        assert refused.structured_content["error"]["code"] == "workspace_access_denied"
        assert "--agent" in text and str(owner.pid) in text
    assert httpx2.get(owner.endpoint + "/healthz").json()["calls"] == 0


async def test_an_http_front_end_with_auth_forwards_its_callers_agent(auth_owner, tmp_path) -> None:
    state, base, project, tokens, _owner = auth_owner
    data = tmp_path / "data"
    env = clean_env(HOMEPORT_STATE_DIR=str(state))
    with running_http_server(
        allow_root=base, cwd=base, log=tmp_path / "front.log", env=env, extra=("--auth", "--data-dir", str(data))
    ) as front:
        headers = {"Authorization": f"Bearer {tokens['ada']}", "X-Workspace-Id": str(project)}
        async with http_client(front.mcp_url, mode="auto", headers=headers) as client:
            assert ok(await client.call_tool("get_decisions", {}))["workspace"]["root"] == str(project)
        # zed may not: choosing the project for the request is a 403, naming it in a call a tool error.
        zed = {"Authorization": f"Bearer {tokens['zed']}"}
        refused = refused_with_403(front.mcp_url, {**zed, "X-Workspace-Id": str(project)})
        assert refused["data"]["principal"] == "zed"
        async with http_client(front.mcp_url, mode="auto", headers=zed) as client:
            result = await client.call_tool("get_decisions", {"workspace": str(project)})
            assert result.structured_content["error"]["code"] == "workspace_access_denied"
        assert httpx2.get(front.base + "/healthz").json()["open_stores"] == 0


async def test_an_agent_token_cannot_speak_for_another_agent(auth_owner) -> None:
    """The agent header is honoured only with the owner's own token: zed naming ada stays zed."""
    _state, _base, project, tokens, owner = auth_owner
    headers = {
        "Authorization": f"Bearer {tokens['zed']}",
        "X-Homeport-Forwarded-By": "1",
        "X-Homeport-Agent": "ada",
    }
    chosen = refused_with_403(owner.endpoint + "/mcp", {**headers, "X-Workspace-Id": str(project)})
    assert chosen["data"]["principal"] == "zed"
    async with http_client(owner.endpoint + "/mcp", mode="auto", headers=headers) as client:
        refused = await client.call_tool("get_decisions", {"workspace": str(project)})
        assert refused.structured_content["error"]["code"] == "workspace_access_denied"
        assert "zed" in error_text(refused)


def test_homeport_status_and_where_work_with_an_auth_owner(auth_owner) -> None:
    state, _base, project, _tokens, owner = auth_owner
    from ._support import CLI_BOOT

    env = clean_env(HOMEPORT_STATE_DIR=str(state))
    done = subprocess.run(
        [sys.executable, "-c", CLI_BOOT, "where", "--json"], cwd=project, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["served_by"]["pid"] == owner.pid


_LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
_JSON_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

GROUP_RULES = """
[[workspaces]]
name = "platform team"
who = "group:platform"
paths = ["{base}/**"]
access = "write"
"""


async def test_a_jwt_callers_groups_reach_the_owner_so_group_rules_decide_alike_at_both_ends(tmp_path) -> None:
    """The front end verified rita's JWT (groups: platform); the owner must see the same groups, or a
    rule by group would admit her at the front end and refuse her at the owner (or the reverse)."""
    from ._jwks import ISSUER, jwks_issuer

    base = (tmp_path / "src").resolve()
    project = make_project(base / "alpha")
    rules = tmp_path / "rules.toml"
    rules.write_text(GROUP_RULES.format(base=base), encoding="utf-8")
    state = tmp_path / "state"
    with jwks_issuer() as issuer:
        auth = ("--auth", "jwt", "--jwks-url", issuer.jwks_url, "--issuer", ISSUER, "--access-rules", str(rules))
        owner = start_owner(state, project, tmp_path / "owner.log", *auth, "--data-dir", str(tmp_path / "od"))
        try:
            env = clean_env(HOMEPORT_STATE_DIR=str(state))
            extra = (*auth, "--data-dir", str(tmp_path / "fd"))
            with running_http_server(allow_root=base, cwd=base, log=tmp_path / "f.log", env=env, extra=extra) as front:

                async def call(groups: list[str] | None, tool: str, args: dict) -> object:
                    # The workspace is named in the call: a refusal is then the per-call tool error
                    # (chosen by the header, it would be the gate's 403 before the MCP layer).
                    claims = {} if groups is None else {"groups": groups}
                    token = issuer.token("rita", aud=front.mcp_url, **claims)
                    headers = {"Authorization": f"Bearer {token}"}
                    args = {"workspace": str(project), **args}
                    async with http_client(front.mcp_url, mode="auto", headers=headers) as client:
                        return await client.call_tool(tool, args)

                written = ok(await call(["platform"], "log_decision", {"summary": "by the platform group"}))
                assert written["workspace"]["root"] == str(project)
                where = ok(await call(["platform"], "where_am_i", {}))
                assert where["served_by"]["pid"] == owner.pid
                refused = await call(None, "get_decisions", {})
                assert refused.structured_content["error"]["code"] == "workspace_access_denied"

            # Straight to the owner, rita's own token cannot claim a group in the forwarding header.
            token = issuer.token("rita", aud=owner.endpoint + "/mcp")
            headers = {
                "Authorization": f"Bearer {token}",
                "X-Homeport-Agent": "rita",
                "X-Homeport-Claims": json.dumps({"groups": ["platform"]}),
            }
            async with http_client(owner.endpoint + "/mcp", mode="auto", headers=headers) as direct:
                forged = await direct.call_tool("get_decisions", {"workspace": str(project)})
                assert forged.structured_content["error"]["code"] == "workspace_access_denied"
            # ... nor at the gate, with the workspace in the header: 403 before the MCP layer.
            with_header = {**headers, "X-Workspace-Id": str(project), **_JSON_HEADERS}
            refused = httpx2.post(owner.endpoint + "/mcp", json=_LIST_TOOLS, headers=with_header, timeout=60)
            assert refused.status_code == 403, refused.text
        finally:
            owner.process.terminate()
            owner.process.wait(timeout=DEADLINE_S)
