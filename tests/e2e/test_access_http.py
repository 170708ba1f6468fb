"""Access rules over real Streamable HTTP: JWTs from a real JWKS, a real uvicorn, every refusal and grant."""

from __future__ import annotations

import os
from pathlib import Path

import httpx2
import pytest

from homeport.files.tokens import TokenStore

from ._jwks import ISSUER, jwks_issuer
from ._serving import serving
from ._support import error_text, http_client, make_project, ok, refused_with_403

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

RULES = """
[[tools]]
name = "reviewers only read"
who = "group:reviewers"
allow = ["workspace", "get_decisions", "search"]

[[workspaces]]
name = "acme team"
who = ["ada", "group:reviewers", "claim:org=acme"]
paths = ["{tmp}/acme/**"]
access = "write"

[[workspaces]]
name = "acme vault"
who = "*"
paths = ["{tmp}/acme/vault"]
access = "none"

[[workspaces]]
name = "shared library"
who = "claim:org=acme"
paths = ["{tmp}/shared/*"]
access = "read"
"""

_INIT = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = Path(os.path.realpath(tmp_path_factory.mktemp("access")))
    projects = {name: make_project(tmp / name) for name in ("acme/app", "acme/vault", "shared/lib", "beta/app")}
    rules = tmp / "rules.toml"
    rules.write_text(RULES.format(tmp=tmp))
    with jwks_issuer() as issuer:
        args = ["--allow-root", str(tmp), "--data-dir", str(tmp / "data"), "--access-rules", str(rules)]
        args += ["--auth", "jwt", "--jwks-url", issuer.jwks_url, "--issuer", ISSUER]
        with serving(args, cwd=tmp, log=tmp / "server.log") as served:
            yield {"served": served, "issuer": issuer, "projects": projects, "rules": rules, "tmp": tmp}


def _client(world, sub: str, mode: str = "auto", **claims):
    served = world["served"]
    token = world["issuer"].token(sub, aud=f"{served.base}/mcp", **claims)
    return http_client(f"{served.base}/mcp", mode=mode, headers={"Authorization": f"Bearer {token}"})


def _code(result) -> str:
    assert result.is_error, result.content[0].text
    return result.structured_content["error"]["code"]


async def test_no_token_or_a_token_for_another_server_gets_401_pointing_at_the_metadata(world):
    served = world["served"]
    stranger = world["issuer"].token("ada", aud="https://elsewhere.test/mcp")
    async with httpx2.AsyncClient(timeout=60) as http:
        bare = await http.post(f"{served.base}/mcp", json=_INIT, headers=_HEADERS)
        assert bare.status_code == 401
        assert (
            f'resource_metadata="{served.base}/.well-known/oauth-protected-resource/mcp"'
            in (bare.headers["www-authenticate"])
        )
        other = {**_HEADERS, "Authorization": f"Bearer {stranger}"}
        assert (await http.post(f"{served.base}/mcp", json=_INIT, headers=other)).status_code == 401
        metadata = (await http.get(f"{served.base}/.well-known/oauth-protected-resource/mcp")).json()
    assert metadata["resource"] == f"{served.base}/mcp"
    assert metadata["authorization_servers"] == [ISSUER]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_allowed_principal_writes_and_reads_its_workspace(world, mode):
    app = str(world["projects"]["acme/app"])
    async with _client(world, "ada", mode) as c:
        logged = ok(await c.call_tool("log_decision", {"summary": f"over jwt {mode}", "workspace": app}))
        assert logged["workspace"]["root"] == app
        listed = ok(await c.call_tool("get_decisions", {"workspace": app}))
        assert f"over jwt {mode}" in str(listed)


async def test_a_workspace_no_rule_gives_or_a_rule_refuses_is_denied_naming_the_rule(world):
    async with _client(world, "ada") as c:
        vault = await c.call_tool("get_decisions", {"workspace": str(world["projects"]["acme/vault"])})
        assert _code(vault) == "workspace_access_denied"
        assert "'acme vault'" in error_text(vault)
        beta = await c.call_tool("log_decision", {"summary": "x", "workspace": str(world["projects"]["beta/app"])})
        assert _code(beta) == "workspace_access_denied"
        assert "no workspace rule" in error_text(beta)
    assert not (world["projects"]["beta/app"] / ".homeport").exists()


async def test_a_tool_outside_the_allowlist_is_refused_before_any_workspace_rule(world):
    app = str(world["projects"]["acme/app"])
    async with _client(world, "rita", groups=["reviewers"]) as c:
        assert not (await c.call_tool("get_decisions", {"workspace": app})).is_error
        refused = await c.call_tool("log_decision", {"summary": "nope", "workspace": app})
        assert _code(refused) == "tool_not_allowed"
        assert "'reviewers only read'" in error_text(refused) and "log_decision" in error_text(refused)
        # Checked first: even a workspace no rule gives is refused for the tool, not the folder.
        beta = await c.call_tool("log_decision", {"summary": "n", "workspace": str(world["projects"]["beta/app"])})
        assert _code(beta) == "tool_not_allowed"


async def test_a_read_only_principal_reads_and_is_refused_writes_naming_the_rule(world):
    lib = str(world["projects"]["shared/lib"])
    async with _client(world, "pat", org="acme") as c:
        assert not (await c.call_tool("get_decisions", {"workspace": lib})).is_error
        refused = await c.call_tool("log_decision", {"summary": "x", "workspace": lib})
        assert _code(refused) == "workspace_access_denied"
        assert "'shared library'" in error_text(refused) and "read-only" in error_text(refused)
    assert not (world["projects"]["shared/lib"] / ".homeport").exists()


async def test_a_handle_is_no_capability_once_the_rule_that_granted_it_is_gone(world):
    rules: Path = world["rules"]
    before = rules.read_text()
    app = str(world["projects"]["acme/app"])
    try:
        async with _client(world, "ada", "legacy") as c:
            handle = ok(await c.call_tool("use_workspace", {"workspace": app}))["handle"]
            assert not (await c.call_tool("get_decisions", {"workspace": handle})).is_error
            rules.write_text(before.replace('who = ["ada", ', "who = ["))
            refused = await c.call_tool("get_decisions", {"workspace": handle})
            assert _code(refused) == "workspace_access_denied"
            session_default = await c.call_tool("get_decisions", {})
            assert _code(session_default) == "workspace_access_denied"
    finally:
        rules.write_text(before)


async def test_plain_auth_still_means_homeport_tokens_and_the_rules_name_token_agents(tmp_path):
    tmp = Path(os.path.realpath(tmp_path))
    app = make_project(tmp / "acme" / "app")
    rules = tmp / "rules.toml"
    rules.write_text(f'[[workspaces]]\nwho = "ada"\npaths = ["{tmp}/acme/**"]\naccess = "read"\n')
    token = TokenStore(tmp / "data" / "tokens.json").add("ada")
    # The command line from before --auth took a value: the switch, then other flags.
    args = ["--allow-root", str(tmp), "--auth", "--data-dir", str(tmp / "data"), "--access-rules", str(rules)]
    with serving(args, cwd=tmp, log=tmp / "server.log") as served:
        assert "bearer tokens required" in served.log_text()
        url = f"{served.base}/mcp"
        async with http_client(url, mode="auto", headers={"Authorization": f"Bearer {token}"}) as c:
            assert not (await c.call_tool("get_decisions", {"workspace": str(app)})).is_error
            refused = await c.call_tool("log_decision", {"summary": "x", "workspace": str(app)})
            assert _code(refused) == "workspace_access_denied" and "read-only" in error_text(refused)


async def test_every_version_records_the_principal_client_and_tool_that_wrote_it(world):
    app = str(world["projects"]["acme/app"])
    async with _client(world, "ada") as c:
        written = ok(await c.call_tool("update_product_context", {"patch": {"owner": "ada"}, "workspace": app}))
        assert written["written_by"]["principal"] == "ada"
        assert written["written_by"]["tool"] == "update_product_context"
        client = written["written_by"]["client"]
        assert client  # the name the client gave in its handshake or request envelope
    async with _client(world, "pat", org="acme") as c:
        history = ok(await c.call_tool("get_item_history", {"item_type": "product_context", "workspace": app}))
    newest = history["versions"][0]
    assert newest["content"] == {"owner": "ada"}
    assert newest["written_by"] == {**written["written_by"], "client": client}


async def test_a_workspace_the_request_chooses_is_decided_by_the_tokens_claims_too(world):
    """The 403 check before the MCP layer sees the JWT's groups and claims, as the per-call check does."""
    served, tmp = world["served"], world["tmp"]
    lib = str(world["projects"]["shared/lib"])
    pat = world["issuer"].token("pat", aud=f"{served.base}/mcp", org="acme")
    stranger = world["issuer"].token("pat", aud=f"{served.base}/mcp", org="beta")
    refused = refused_with_403(f"{served.base}/mcp", {"Authorization": f"Bearer {stranger}", "X-Workspace-Id": lib})
    assert refused["data"]["principal"] == "pat" and f"--access-rules {tmp / 'rules.toml'}" in refused["message"]
    headers = {"Authorization": f"Bearer {pat}", "X-Workspace-Id": lib}
    async with http_client(f"{served.base}/mcp", mode="auto", headers=headers) as c:
        assert ok(await c.call_tool("get_decisions", {}))["workspace"]["root"] == lib
    vault = str(world["projects"]["acme/vault"])
    rita = world["issuer"].token("rita", aud=f"{served.base}/mcp", groups=["reviewers"])
    refused_with_403(f"{served.base}/mcp?project_path={vault}", {"Authorization": f"Bearer {rita}"})
