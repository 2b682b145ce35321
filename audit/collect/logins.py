"""Logins that are more than client properties: OAUTHBEARER tokens for both Kafka clients.

The auditor talks to a cluster through two clients: librdkafka (confluent-kafka: metadata,
offsets, groups, the record reader of confluent-kafka) and kafka-python (batched
ListOffsets, transactions, log dirs, the wire fetch and the batch reader). A login has to
work on both, or half the auditor falls back or fails. Properties (``security.protocol``,
``sasl.*``, ``ssl.*``) are librdkafka's spelling and are mapped for kafka-python
(``transactions.kafka_python_from``); what cannot be a property lives here:

- **A named token provider**: a cluster's ``token_provider: "module:function"`` names a
  Python callable returning ``(token, expiry)`` (expiry in seconds since the epoch). It
  becomes librdkafka's ``oauth_cb`` and kafka-python's ``sasl_oauth_token_provider`` alike.
  ``audit.collect.logins:aws_msk_iam`` is one: Amazon MSK's IAM login through AWS's
  signer (aws-msk-iam-sasl-signer-python, the ``msk`` extra), over SASL OAUTHBEARER.
- **OIDC client credentials** (``sasl.oauthbearer.method: oidc``): librdkafka fetches its
  own tokens from ``sasl.oauthbearer.token.endpoint.url``; kafka-python has no such
  method, so its provider asks the same endpoint with the same client id, secret, scope
  and extensions (OAuth 2.0 client credentials, RFC 6749 section 4.4).

The provider's name travels with the client settings (``TOKEN_PROVIDER``: never a
librdkafka property, never a secret) to wherever a client is made, Spark's tasks included,
and is resolved there: ``librdkafka_config`` before every confluent-kafka client.
"""

from __future__ import annotations

import base64
import importlib
import json
import os
import re
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from audit.errors import ClusterError, ConfigError

# The client settings' key that carries a cluster's token provider (``module:function``).
TOKEN_PROVIDER = "mirror-audit.token_provider"
# A token is renewed this long before it expires.
_RENEW_BEFORE_SECONDS = 60.0
_SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")

TokenFunction = Callable[[], tuple[str, float]]


def sasl_mechanism(properties: Mapping[str, Any]) -> str:
    """The SASL mechanism librdkafka properties name, upper case ('' for none): librdkafka
    takes ``sasl.mechanism`` and ``sasl.mechanisms`` alike, so both are read."""
    return str(properties.get("sasl.mechanism") or properties.get("sasl.mechanisms") or "").upper()


def check_spec(spec: str, where: str) -> None:
    """``module:function``, importable and callable: refused at load, naming ``where``."""
    load_provider(spec, where)


def load_provider(spec: str, where: str = "token_provider") -> TokenFunction:
    if not _SPEC.fullmatch(spec):
        raise ConfigError(f"{where}: {spec!r} is not module:function (e.g. mypackage.tokens:fetch)")
    module_name, _, name = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"{where}: cannot import {module_name} ({exc}): install it where mirror-audit runs"
        ) from None
    function = getattr(module, name, None)
    if not callable(function):
        raise ConfigError(f"{where}: {module_name} has no function {name}")
    return function  # type: ignore[no-any-return]


def _token_of(function: TokenFunction, spec: str) -> tuple[str, float]:
    """The provider's answer, checked: a non-empty token and a number."""
    try:
        token, expiry = function()
    except (ConfigError, ClusterError):
        raise
    except Exception as exc:
        raise ClusterError(f"token_provider {spec} failed: {type(exc).__name__}: {exc}") from None
    if not isinstance(token, str) or not token or not isinstance(expiry, int | float):
        raise ClusterError(
            f"token_provider {spec} must return (token, expiry seconds), not {type(token).__name__}"
        )
    return token, float(expiry)


class _OAuthCallback:
    """librdkafka's ``oauth_cb``: called with ``sasl.oauthbearer.config``, returns
    ``(token, expiry)``; librdkafka asks again before the expiry."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.function = load_provider(spec)

    def __call__(self, _oauthbearer_config: str) -> tuple[str, float]:
        return _token_of(self.function, self.spec)


def librdkafka_config(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Settings for a confluent-kafka client: a token provider named in them becomes its
    ``oauth_cb``."""
    out = dict(settings)
    spec = out.pop(TOKEN_PROVIDER, None)
    if spec:
        out["oauth_cb"] = _OAuthCallback(str(spec))
    return out


@dataclass(frozen=True)
class OidcClientCredentials:
    """librdkafka's ``sasl.oauthbearer.*`` OIDC settings, for kafka-python's provider."""

    url: str
    client_id: str
    client_secret: str
    scope: str = ""
    ca_location: str | None = None

    def fetch(self) -> tuple[str, float]:
        """A token from the endpoint (client credentials grant, HTTP Basic as librdkafka
        sends them) and when it expires."""
        form = {"grant_type": "client_credentials"}
        if self.scope:
            form["scope"] = self.scope
        basic = base64.b64encode(
            f"{urllib.parse.quote(self.client_id)}:{urllib.parse.quote(self.client_secret)}".encode()
        ).decode()
        request = urllib.request.Request(
            self.url,
            data=urllib.parse.urlencode(form).encode(),
            headers={
                "Authorization": f"Basic {basic}",
                "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "application/json",
            },
            method="POST",
        )
        context = (
            ssl.create_default_context(cafile=self.ca_location) if self.url.startswith("https") else None
        )
        where = f"OIDC token endpoint {self.url}"
        try:
            with urllib.request.urlopen(request, timeout=30, context=context) as response:
                body = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise ClusterError(
                f"{where} refused the client credentials of {self.client_id} (HTTP {exc.code}): check "
                "sasl.oauthbearer.client.id and sasl.oauthbearer.client.secret"
            ) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ClusterError(f"{where} did not answer: {reason}: check the URL and the network") from None
        token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise ClusterError(f"{where} answered without an access_token")
        expires_in = body.get("expires_in")
        lifetime = float(expires_in) if isinstance(expires_in, int | float) else _jwt_lifetime(token)
        return token, time.time() + lifetime


def _jwt_lifetime(token: str) -> float:
    """Seconds until a JWT's ``exp``; an hour where the token says nothing readable."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return max(0.0, float(claims["exp"]) - time.time())
    except (IndexError, ValueError, KeyError, TypeError):
        return 3600.0


def _extensions(text: str) -> dict[str, str]:
    """``sasl.oauthbearer.extensions`` (``key=value,key=value``), e.g. Confluent Cloud's
    ``logicalCluster`` and ``identityPoolId``."""
    pairs = (item.partition("=") for item in text.split(",") if item.strip())
    return {k.strip(): v.strip() for k, _, v in pairs}


class TokenProvider:
    """kafka-python's ``sasl_oauth_token_provider`` over a named provider or OIDC client
    credentials; the token is kept until a minute before it expires. Plain data only, so
    it pickles into Spark's tasks."""

    def __init__(
        self, spec: str | None, oidc: OidcClientCredentials | None, extensions: dict[str, str]
    ) -> None:
        self.spec = spec
        self.oidc = oidc
        self._extensions = extensions
        self._token: str | None = None
        self._expiry = 0.0

    def token(self) -> str:
        if self._token is None or time.time() > self._expiry - _RENEW_BEFORE_SECONDS:
            if self.spec is not None:
                self._token, self._expiry = _token_of(load_provider(self.spec), self.spec)
            else:
                assert self.oidc is not None
                self._token, self._expiry = self.oidc.fetch()
        return self._token

    def extensions(self) -> dict[str, str]:
        return dict(self._extensions)


def kafka_python_oauth(client: Mapping[str, Any]) -> Any | str:
    """kafka-python's token provider for OAUTHBEARER client settings, or why there is none."""
    from audit.collect.kafka_python_token import KafkaPythonTokenProvider

    spec = client.get(TOKEN_PROVIDER)
    extensions = _extensions(str(client.get("sasl.oauthbearer.extensions") or ""))
    if spec:
        return KafkaPythonTokenProvider(str(spec), None, extensions)
    if str(client.get("sasl.oauthbearer.method") or "").lower() == "oidc":
        missing = [
            key
            for key in (
                "sasl.oauthbearer.token.endpoint.url",
                "sasl.oauthbearer.client.id",
                "sasl.oauthbearer.client.secret",
            )
            if not client.get(key)
        ]
        if missing:
            return f"OIDC needs {', '.join(missing)}"
        oidc = OidcClientCredentials(
            str(client["sasl.oauthbearer.token.endpoint.url"]),
            str(client["sasl.oauthbearer.client.id"]),
            str(client["sasl.oauthbearer.client.secret"]),
            str(client.get("sasl.oauthbearer.scope") or ""),
            client.get("https.ca.location") or client.get("ssl.ca.location"),
        )
        return KafkaPythonTokenProvider(None, oidc, extensions)
    return (
        "SASL OAUTHBEARER needs a token_provider (module:function) or sasl.oauthbearer.method: oidc "
        "for kafka-python"
    )


def aws_msk_iam() -> tuple[str, float]:
    """Amazon MSK's IAM login as an OAUTHBEARER token (``token_provider:
    audit.collect.logins:aws_msk_iam``), signed by AWS's signer with the default AWS
    credential chain (environment, profile, instance or pod role) for the region in
    ``AWS_REGION`` (or ``AWS_DEFAULT_REGION``). The broker checks the signature and the
    IAM policy's ``kafka-cluster:*`` actions; the token itself is a presigned URL."""
    try:
        from aws_msk_iam_sasl_signer import MSKAuthTokenProvider
    except ImportError:
        raise ConfigError(
            "token_provider audit.collect.logins:aws_msk_iam needs AWS's signer: "
            "pip install 'kafka-mirror-audit[msk]'"
        ) from None
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if not region:
        raise ConfigError("MSK IAM login: set AWS_REGION to the cluster's region")
    token, expiry_ms = MSKAuthTokenProvider.generate_auth_token(region)
    return str(token), float(expiry_ms) / 1000.0
