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
and is resolved there: ``librdkafka_config`` before every confluent-kafka client, the
kafka-python provider at its first token. Loading the configuration only checks the
name's shape (``check_spec``): a configuration file names code that runs when a cluster is
reached, never when it is read, so an offline ``audit`` of snapshots imports none of it.

A token endpoint over plain http would carry the client secret in clear (HTTP Basic, from
librdkafka, kafka-python's provider and the Java client alike): the configuration refuses
it unless the cluster's ``token_endpoint_allow_plaintext_credentials`` says it is accepted
(``audit.config_checks``), as ``output.pushgateway_allow_plaintext_credentials`` does for
a Pushgateway. Whatever the endpoint answers that is not a token (no HTTP, a broken
answer, no JSON) is a ``ClusterError``, one line naming the endpoint.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import importlib
import json
import math
import os
import re
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from audit.config import TOKEN_PROVIDER
from audit.errors import ClusterError, ConfigError
from audit.redaction import REDACTED

# librdkafka's property naming an OIDC token endpoint.
TOKEN_ENDPOINT = "sasl.oauthbearer.token.endpoint.url"
# A token is renewed this long before it expires.
_RENEW_BEFORE_SECONDS = 60.0
_SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")

TokenFunction = Callable[[], tuple[str, float]]


def sasl_mechanism(properties: Mapping[str, Any]) -> str:
    """The SASL mechanism librdkafka properties name, upper case ('' for none): librdkafka
    takes ``sasl.mechanism`` and ``sasl.mechanisms`` alike, so both are read."""
    return str(properties.get("sasl.mechanism") or properties.get("sasl.mechanisms") or "").upper()


def check_spec(spec: str, where: str) -> None:
    """``module:function`` in shape, refused at load naming ``where``; nothing is imported.
    Importing runs the module's code, which has no business running when a configuration is
    only read (an offline ``audit``, a config check of snapshots): a module that prints would
    break ``--output json``, one that fails would fail a job that never needed it. It is
    imported where a client of its cluster is made (``load_provider``)."""
    if not _SPEC.fullmatch(spec):
        raise ConfigError(f"{where}: {spec!r} is not module:function (e.g. mypackage.tokens:fetch)")


def load_provider(spec: str, where: str | None = None) -> TokenFunction:
    """The provider ``spec`` names, imported now: where a live client needs its first token.
    Whatever the module prints while it is imported goes to stderr, so that stdout keeps
    only what the command writes there (``--output json``)."""
    where = where or f"token_provider {spec}"
    check_spec(spec, where)
    module_name, _, name = spec.partition(":")
    try:
        with contextlib.redirect_stdout(sys.stderr):
            module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"{where}: cannot import {module_name} ({exc}): install it where mirror-audit runs"
        ) from None
    except Exception as exc:  # the module's own code failed: a user's error, said in one line
        raise ConfigError(f"{where}: importing {module_name} failed: {type(exc).__name__}: {exc}") from None
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
        where = f"OIDC token endpoint {endpoint_shown(self.url)}"
        check = f"check that {TOKEN_ENDPOINT} is the identity provider's token endpoint"
        try:
            with urllib.request.urlopen(request, timeout=30, context=context) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raise ClusterError(
                f"{where} refused the client credentials of {self.client_id} (HTTP {exc.code}): check "
                "sasl.oauthbearer.client.id and sasl.oauthbearer.client.secret"
            ) from None
        except OSError as exc:  # URLError included: no connection, TLS refused, timed out
            reason = " ".join(str(getattr(exc, "reason", exc)).split())
            raise ClusterError(f"{where} did not answer: {reason}: check the URL and the network") from None
        except (http.client.InvalidURL, ValueError):  # a port that is not a number, no scheme urllib knows
            raise ClusterError(f"{where} is not an http(s) URL urllib can ask: {check}") from None
        except http.client.HTTPException as exc:
            # BadStatusLine, IncompleteRead, LineTooLong...: what answered there does not speak
            # HTTP, or broke off mid-answer. Its bytes are not quoted: they could be anything.
            raise ClusterError(f"{where} gave no valid HTTP answer ({type(exc).__name__}): {check}") from None
        try:
            body = json.loads(raw)
        except ValueError:  # not UTF-8, not JSON: a login page, a proxy's error page
            raise ClusterError(f"{where} answered with something that is not JSON: {check}") from None
        token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise ClusterError(f"{where} answered without an access_token: {check}")
        expires_in = body.get("expires_in")
        lifetime = (
            float(expires_in)
            if isinstance(expires_in, int | float) and math.isfinite(expires_in) and expires_in >= 0
            else _jwt_lifetime(token)  # none, or one no clock can use (JSON's NaN, Infinity)
        )
        return token, time.time() + lifetime


# A host as an error may show it: a name or an IPv4 or [IPv6] address, and a port. Anything
# else where the host goes (a password holding "/" in a malformed URL) is not shown.
_SHOWN_HOST = re.compile(r"([A-Za-z0-9._~-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]+)?")


def endpoint_shown(url: str) -> str:
    """A token endpoint as an error may name it: scheme and host, never its userinfo, path,
    query or fragment (``https://idp.example.com/***``). The configuration holds the whole
    URL as a secret (its property name says token), so the log mask would blank it whole;
    its host alone still says which endpoint it was, and cannot be a credential."""
    scheme, sep, rest = url.partition("://")
    host = re.split(r"[/?#]", rest, maxsplit=1)[0].rpartition("@")[2]
    if not sep or scheme.lower() not in ("http", "https") or not _SHOWN_HOST.fullmatch(host):
        return REDACTED
    return f"{scheme}://{host}/{REDACTED}"


def plaintext_token_endpoint(properties: Mapping[str, Any]) -> str | None:
    """The token endpoint these client properties name, where it is not https: the client
    secret would travel to it in clear. None where there is none, or it is https."""
    url = str(properties.get(TOKEN_ENDPOINT) or "")
    return url if url and not url.lower().startswith("https://") else None


def _jwt_lifetime(token: str) -> float:
    """Seconds until a JWT's ``exp``; an hour where the token says nothing readable (an
    ``exp`` of NaN or Infinity included: a token kept forever would never be renewed)."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        left = float(claims["exp"]) - time.time()
    except (IndexError, ValueError, KeyError, TypeError):
        return 3600.0
    return max(0.0, left) if math.isfinite(left) else 3600.0


def oauth_extensions(text: str) -> dict[str, str]:
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
