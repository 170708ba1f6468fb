"""A JWT issuer for tests: fresh RSA and EC keys, its JWKS served over real HTTP on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

ISSUER = "https://issuer.test"


@dataclass
class Issuer:
    jwks_url: str
    keys: dict[str, Any]  # kid -> private key
    fetches: list[float] = field(default_factory=list)
    issuer: str = ISSUER

    def token(
        self,
        sub: str = "ada",
        *,
        aud: str | list[str],
        iss: str | None = None,
        expires_in: float = 300,
        kid: str = "rsa",
        key: Any = None,
        **claims: Any,
    ) -> str:
        """A token for `sub`, signed with the key `kid` names (or `key`, to forge one under that kid)."""
        now = int(time.time())
        payload = {"sub": sub, "iss": iss or self.issuer, "aud": aud, "iat": now, "exp": now + int(expires_in)}
        payload.update(claims)
        algorithm = "RS256" if kid == "rsa" else "ES256"
        return jwt.encode(payload, key or self.keys[kid], algorithm=algorithm, headers={"kid": kid})


@contextlib.contextmanager
def jwks_issuer() -> Iterator[Issuer]:
    """An issuer whose key set is at `jwks_url` until the block ends."""
    keys: dict[str, Any] = {
        "rsa": rsa.generate_private_key(public_exponent=65537, key_size=2048),
        "ec": ec.generate_private_key(ec.SECP256R1()),
    }
    published = [
        {**RSAAlgorithm.to_jwk(keys["rsa"].public_key(), as_dict=True), "kid": "rsa", "alg": "RS256", "use": "sig"},
        {**ECAlgorithm.to_jwk(keys["ec"].public_key(), as_dict=True), "kid": "ec", "alg": "ES256", "use": "sig"},
    ]
    body = json.dumps({"keys": published}).encode()
    fetches: list[float] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/jwks.json":
                self.send_error(404)
                return
            fetches.append(time.time())
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Issuer(f"http://127.0.0.1:{server.server_address[1]}/jwks.json", keys, fetches)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
