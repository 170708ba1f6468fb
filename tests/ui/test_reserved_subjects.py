"""Issue 22, finding 18: a JWT whose `sub` is "" became the principal `local`, the name of the
unauthenticated local user (and of calls the owner's own token forwards), so it got whatever the
access rules give `local`. Empty and reserved subjects are now refused, by `/mcp` and by the
dashboard's login alike, and so is a Homeport token minted for an agent with a reserved name."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from e2e._jwks import ISSUER, Issuer, jwks_issuer
from homeport.files.tokens import TokenStore
from homeport.server.app import jwt_audience

pytestmark = pytest.mark.anyio

# The owner's forwarded calls are `local`; an operator gives them the project.
RULES = """
[[workspaces]]
name = "the owner's own calls"
who = "local"
paths = ["{root}"]
access = "write"

[[workspaces]]
name = "admins"
who = ["group:admins", "claim:org=acme"]
paths = ["{root}"]
access = "write"
"""
# Subjects that name no one, or that a rule would read as someone else.
RESERVED = ["", " ", "local", "*", "group:admins", "claim:org=acme"]
ERA = "2026-07-28"
_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": ERA,
    "Mcp-Method": "tools/call",
    "Mcp-Name": "where_am_i",
}


@pytest.fixture
def issuer():
    with jwks_issuer() as found:
        yield found


def _call(tool: str, arguments: dict) -> dict:
    """A stateless (2026-07-28) tools/call: one POST, no handshake."""
    meta = {
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        "io.modelcontextprotocol/protocolVersion": ERA,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"name": tool, "arguments": arguments, "_meta": meta}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def _result(response) -> dict:
    text = response.text
    if "data:" in text:
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    return json.loads(text)["result"]


async def _principal(client, token: str, project: Path) -> tuple[int, str | None]:
    """The HTTP status of a where_am_i call with `token`, and the principal it ran as."""
    answer = await client.post(
        "/mcp",
        json=_call("where_am_i", {}),
        headers={**_HEADERS, "authorization": f"Bearer {token}"},
    )
    if answer.status_code != 200:
        return answer.status_code, None
    result = _result(answer)
    assert "principal" in result["structuredContent"], result
    return 200, result["structuredContent"]["principal"]


@contextlib.asynccontextmanager
async def running(app) -> AsyncIterator[None]:
    """The app's lifespan (the MCP session manager's task group), as uvicorn would run it."""
    starlette_app = app
    while not hasattr(starlette_app, "router"):  # the ASGI middleware around the Starlette app
        starlette_app = starlette_app.app
    async with starlette_app.router.lifespan_context(starlette_app):
        yield


@pytest.fixture
async def jwt_app(make_app, project: Path, tmp_path: Path, issuer: Issuer):
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES.format(root=project))
    app, runtime = make_app(
        auth=True, auth_method="jwt", jwks_url=issuer.jwks_url, jwt_issuer=ISSUER, access_rules_file=rules
    )
    async with running(app):
        yield app, jwt_audience(runtime.settings)


@pytest.mark.parametrize("subject", RESERVED)
async def test_a_jwt_with_an_empty_or_reserved_subject_is_refused_by_mcp(
    jwt_app, client_for, issuer: Issuer, project: Path, subject: str
):
    app, audience = jwt_app
    client = client_for(app)
    assert await _principal(client, issuer.token("ada", aud=audience), project) == (200, "ada")
    status, principal = await _principal(client, issuer.token(subject, aud=audience), project)
    assert (status, principal) == (401, None), f"sub {subject!r} ran as {principal!r}"


@pytest.mark.parametrize("subject", ["", "local"])
async def test_a_jwt_with_an_empty_or_reserved_subject_cannot_log_in_to_the_dashboard(
    jwt_app, client_for, issuer: Issuer, subject: str
):
    app, audience = jwt_app
    client = client_for(app)
    form = await client.get("/ui/login")
    csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', form.text)
    assert csrf
    data = {"token": issuer.token(subject, aud=audience), "csrf": csrf.group(1), "next": "/ui/"}
    refused = await client.post("/ui/login", data=data)
    assert refused.status_code == 401 and "homeport_ui=" not in refused.headers.get("set-cookie", "")


async def test_a_homeport_token_for_an_agent_named_local_is_refused(make_app, client_for, project: Path, tmp_path):
    # `tokens add local` is refused now; a token file written before that may still hold one.
    tokens = TokenStore(tmp_path / "data" / "tokens.json")
    token = tokens.add("someone")
    document = json.loads(tokens.path.read_text())
    document["tokens"][0]["agent_id"] = "local"
    tokens.path.write_text(json.dumps(document))
    app, _ = make_app(auth=True)
    async with running(app):
        status, principal = await _principal(client_for(app), token, project)
    assert (status, principal) == (401, None), f"ran as {principal!r}"


def test_a_principal_named_like_a_group_never_matches_that_groups_rules():
    from homeport.policy.access_rules import Principal, matches_principal

    named = Principal("group:admins")
    assert not matches_principal("group:admins", named)
    assert "group:admins" not in named.matchers  # the set lookup the decisions use agrees
    assert "group:admins" in Principal("ada", ("admins",)).matchers
