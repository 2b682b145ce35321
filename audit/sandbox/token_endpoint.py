"""The sandbox's OAuth token endpoint: OAuth 2.0 client credentials on loopback, issuing
unsecured JWTs that the brokers' OAUTHBEARER listener accepts (``broker_config``).

What an OIDC login needs to be tested end to end without an identity provider: librdkafka
(``sasl.oauthbearer.method=oidc``) and the auditor's kafka-python token provider ask it for
a token with a client id and secret (HTTP Basic, ``grant_type=client_credentials``), as
they would ask Keycloak, Okta or Azure AD. The client id is a sandbox user, the secret its
password; the token's ``sub`` is the user, so the broker's authorizer sees ``User:<id>``.
Unsecured (``alg: none``) tokens are what Kafka's default OAUTHBEARER validator accepts; it
is meant for tests, and so is this endpoint: it listens on 127.0.0.1 only.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

log = logging.getLogger(__name__)

TOKEN_LIFETIME_SECONDS = 3600


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unsecured_jwt(subject: str, lifetime_seconds: int = TOKEN_LIFETIME_SECONDS, scope: str = "") -> str:
    """An unsigned JWT (``alg: none``, empty signature) for ``subject``, valid from now."""
    now = int(time.time())
    header = {"alg": "none", "typ": "JWT"}
    claims: dict[str, object] = {"sub": subject, "iat": now, "exp": now + lifetime_seconds}
    if scope:
        claims["scope"] = scope
    parts = (json.dumps(part, separators=(",", ":")).encode() for part in (header, claims))
    return ".".join(_b64url(p) for p in parts) + "."


@dataclass
class Issued:
    """What the endpoint did: tokens issued per client id, and refusals."""

    tokens: dict[str, int]
    refused: int = 0


def _handler(users: dict[str, str], issued: Issued) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            form = urllib.parse.parse_qs(self.rfile.read(length).decode("utf-8", "replace"))
            client_id, secret = self._basic() or (
                (form.get("client_id") or [""])[0],
                (form.get("client_secret") or [""])[0],
            )
            if (form.get("grant_type") or [""])[0] != "client_credentials":
                self._reply(400, {"error": "unsupported_grant_type"})
            elif not client_id or users.get(client_id) != secret:
                issued.refused += 1
                self._reply(401, {"error": "invalid_client"})
            else:
                issued.tokens[client_id] = issued.tokens.get(client_id, 0) + 1
                scope = (form.get("scope") or [""])[0]
                token = unsecured_jwt(client_id, scope=scope)
                body = {"access_token": token, "token_type": "Bearer", "expires_in": TOKEN_LIFETIME_SECONDS}
                self._reply(200, body)

        def _basic(self) -> tuple[str, str] | None:
            auth = self.headers.get("Authorization") or ""
            if not auth.lower().startswith("basic "):
                return None
            try:
                text = base64.b64decode(auth[6:].strip()).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                return None
            client_id, _, secret = text.partition(":")
            return urllib.parse.unquote(client_id), urllib.parse.unquote(secret)

        def _reply(self, status: int, body: dict[str, object]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            log.debug("token endpoint: %s", format % args)

    return Handler


@dataclass(frozen=True)
class TokenEndpoint:
    url: str
    issued: Issued


@contextmanager
def token_endpoint(users: dict[str, str]) -> Iterator[TokenEndpoint]:
    """A token endpoint on a free loopback port for ``users`` (client id -> secret), served
    from a thread until the block ends."""
    issued = Issued({})
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(dict(users), issued))
    thread = threading.Thread(target=server.serve_forever, name="token endpoint", daemon=True)
    thread.start()
    try:
        yield TokenEndpoint(f"http://127.0.0.1:{server.server_address[1]}/token", issued)
    finally:
        server.shutdown()
        server.server_close()
