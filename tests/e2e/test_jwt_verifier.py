"""`--auth jwt`: a token is accepted only when signed by the issuer's published key, unexpired,
from the configured issuer and for this server; checked against a real JWKS over HTTP."""

from __future__ import annotations

import base64
import json

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from homeport.server.jwt_auth import JwtVerifier

from ._jwks import ISSUER, jwks_issuer

AUDIENCE = "http://127.0.0.1:8765/mcp"


@pytest.fixture(scope="module")
def issuer():
    with jwks_issuer() as it:
        yield it


@pytest.fixture
def verifier(issuer):
    return JwtVerifier(issuer.jwks_url, issuer=ISSUER, audience=AUDIENCE, leeway_seconds=0)


@pytest.mark.parametrize("kid", ["rsa", "ec"])
def test_a_good_token_names_its_subject_and_carries_its_claims(issuer, verifier, kid):
    token = verifier.verify(issuer.token("ada", aud=AUDIENCE, kid=kid, groups=["platform"], scope="mcp:read"))
    assert token is not None
    assert (token.subject, token.client_id, token.scopes) == ("ada", "ada", ["mcp:read"])
    assert token.claims is not None and token.claims["groups"] == ["platform"]
    assert token.resource == AUDIENCE


def test_an_audience_list_that_holds_this_server_is_accepted(issuer, verifier):
    assert verifier.verify(issuer.token(aud=["https://other.test", AUDIENCE])) is not None


def test_a_token_signed_by_another_key_under_a_published_kid_is_refused(issuer, verifier):
    forged_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert verifier.verify(issuer.token(aud=AUDIENCE, key=forged_key)) is None


def test_a_token_whose_payload_was_changed_after_signing_is_refused(issuer, verifier):
    header, payload, signature = issuer.token("bob", aud=AUDIENCE).split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["sub"] = "admin"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    assert verifier.verify(f"{header}.{forged}.{signature}") is None


def test_an_expired_token_is_refused(issuer, verifier):
    assert verifier.verify(issuer.token(aud=AUDIENCE, expires_in=-60)) is None


def test_a_token_from_another_issuer_is_refused(issuer, verifier):
    assert verifier.verify(issuer.token(aud=AUDIENCE, iss="https://evil.test")) is None


def test_a_token_for_another_audience_is_refused(issuer, verifier):
    assert verifier.verify(issuer.token(aud="http://127.0.0.1:9999/mcp")) is None


def test_a_token_without_expiry_is_refused(issuer, verifier):
    token = jwt.encode(
        {"sub": "ada", "iss": ISSUER, "aud": AUDIENCE}, issuer.keys["rsa"], algorithm="RS256", headers={"kid": "rsa"}
    )
    assert verifier.verify(token) is None


def test_unsigned_and_symmetric_tokens_are_refused(issuer, verifier):
    claims = {"sub": "ada", "iss": ISSUER, "aud": AUDIENCE, "exp": 4_000_000_000}
    unsigned = jwt.encode(claims, None, algorithm="none", headers={"kid": "rsa"})
    hmac = jwt.encode(claims, "a shared secret of at least thirty-two bytes", algorithm="HS256", headers={"kid": "rsa"})
    assert verifier.verify(unsigned) is None
    assert verifier.verify(hmac) is None


def test_an_unknown_kid_a_broken_signature_and_garbage_are_refused(issuer, verifier):
    claims = {"sub": "ada", "iss": ISSUER, "aud": AUDIENCE, "exp": 4_000_000_000}
    unknown = jwt.encode(claims, issuer.keys["rsa"], algorithm="RS256", headers={"kid": "retired"})
    assert verifier.verify(unknown) is None
    header, payload, signature = issuer.token(aud=AUDIENCE).split(".")
    flipped = signature[:10] + ("A" if signature[10] != "A" else "B") + signature[11:]
    assert verifier.verify(f"{header}.{payload}.{flipped}") is None
    assert verifier.verify("not a jwt") is None


def test_an_unreachable_key_set_refuses_every_token(issuer):
    gone = JwtVerifier("http://127.0.0.1:9/jwks.json", issuer=ISSUER, audience=AUDIENCE)
    assert gone.verify(issuer.token(aud=AUDIENCE)) is None


@pytest.mark.anyio
async def test_the_sdk_verifier_api_answers_on_a_worker_thread(issuer, verifier):
    assert (await verifier.verify_token(issuer.token("ada", aud=AUDIENCE))).subject == "ada"
    assert await verifier.verify_token(issuer.token(aud="http://elsewhere.test/mcp")) is None


def test_tokens_with_unknown_kids_do_not_make_the_server_fetch_the_key_set_each_time(issuer, verifier):
    claims = {"sub": "ada", "iss": ISSUER, "aud": AUDIENCE, "exp": 4_000_000_000}
    assert verifier.verify(issuer.token(aud=AUDIENCE)) is not None  # the set is fetched and cached
    before = len(issuer.fetches)
    for i in range(20):
        forged = jwt.encode(claims, issuer.keys["rsa"], algorithm="RS256", headers={"kid": f"random-{i}"})
        assert verifier.verify(forged) is None
    assert len(issuer.fetches) - before <= 1
    assert verifier.verify(issuer.token(aud=AUDIENCE)) is not None
