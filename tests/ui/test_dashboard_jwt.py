"""The dashboard's login under `--auth jwt`: the token is checked by the verifier `/mcp` uses (JWTs
from a real JWKS over HTTP, the owner's own token), and the access rules see the token's claims."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from e2e._jwks import ISSUER, Issuer, jwks_issuer
from homeport.server.app import jwt_audience

from ._seed import seed

pytestmark = pytest.mark.anyio

RULES = """
[[workspaces]]
name = "reviewers read"
who = "group:reviewers"
paths = ["{root}"]
access = "read"
"""


@pytest.fixture
def issuer():
    with jwks_issuer() as found:
        yield found


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert found, "the page has no form token"
    return found.group(1)


async def log_in(client, token: str):
    page = await client.get("/ui/login")
    assert page.status_code == 200 and "JWT" in page.text
    return await client.post("/ui/login", data={"token": token, "csrf": csrf_of(page.text), "next": "/ui/"})


@pytest.fixture
def jwt_app(make_app, project: Path, tmp_path: Path, issuer: Issuer, agents):
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES.format(root=project))
    owner = tmp_path / "owner-token"
    owner.write_text("hp_owner_" + "x" * 40)
    app, runtime = make_app(
        auth=True,
        auth_method="jwt",
        jwks_url=issuer.jwks_url,
        jwt_issuer=ISSUER,
        access_rules_file=rules,
        owner_token_file=owner,
    )
    seed(runtime, project)
    return app, runtime, jwt_audience(runtime.settings)


async def test_a_jwt_logs_in_and_its_groups_decide_what_the_dashboard_shows(
    jwt_app, client_for, project: Path, issuer: Issuer
):
    app, _, audience = jwt_app
    reviewer = client_for(app)
    assert (await log_in(reviewer, issuer.token("rex", aud=audience, groups=["reviewers"]))).status_code == 303
    page = await reviewer.get("/ui/w", params={"ws": str(project)})
    assert page.status_code == 200 and "Use SQLite in WAL mode" in page.text
    assert "rex" in page.text  # who is logged in
    # The rule grants read only: the correction is refused by the pipeline, as for an MCP call.
    item = await reviewer.get("/ui/item", params={"ws": str(project), "type": "decision", "id": "1"})
    form = {"ws": str(project), "type": "decision", "id": "1", "summary": "Hijacked", "confirm": "1"}
    refused = await reviewer.post("/ui/edit", data={**form, "csrf": csrf_of(item.text)})
    assert refused.status_code == 403, refused.text
    assert "Hijacked" not in (await reviewer.get("/ui/w", params={"ws": str(project)})).text
    # The same subject without the group: the rules give it nothing.
    outsider = client_for(app)
    assert (await log_in(outsider, issuer.token("rex", aud=audience))).status_code == 303
    assert (await outsider.get("/ui/w", params={"ws": str(project)})).status_code == 403
    assert str(project) not in (await outsider.get("/ui/")).text


async def test_tokens_that_mcp_refuses_are_refused_at_the_login_too(
    jwt_app, client_for, project: Path, issuer: Issuer, agents: dict[str, str]
):
    app, _, audience = jwt_app
    for token in (
        issuer.token("rex", aud="https://elsewhere.test/mcp", groups=["reviewers"]),  # another server's
        issuer.token("rex", aud=audience, groups=["reviewers"], expires_in=-120),  # expired
        issuer.token("rex", aud=audience, iss="https://evil.test", groups=["reviewers"]),  # another issuer
        agents["ada"],  # a Homeport token: this server takes JWTs, whatever its token file holds
        "not a token\r\nx",
    ):
        client = client_for(app)
        refused = await log_in(client, token)
        assert refused.status_code == 401 and "homeport_ui" not in refused.headers.get("set-cookie", ""), token
    # A cookie set by hand is checked on every request the same way.
    client = client_for(app)
    client.cookies.set("homeport_ui", agents["ada"], path="/ui")
    assert (await client.get("/ui/w", params={"ws": str(project)})).status_code == 303


async def test_the_owners_own_token_is_accepted_through_the_same_wrapper(jwt_app, client_for, tmp_path: Path):
    app, _, _ = jwt_app
    client = client_for(app)
    assert (await log_in(client, (tmp_path / "owner-token").read_text())).status_code == 303
    assert (await client.get("/ui/")).status_code == 200
