"""A cluster's login as the Kafka Java client takes it, translated from its librdkafka
properties: PLAINTEXT, SSL (PEM files given as their text), SASL PLAIN and SCRAM (a JAAS
line), OAUTHBEARER with OIDC client credentials (the client's own login handler). What
cannot be translated is said, never dropped: the Java Admin is then not started and its
reads are unchecked with that reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from audit.collect.logins import sasl_mechanism
from audit.config import TOKEN_PROVIDER

_JAAS_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
_OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
_OIDC_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
# librdkafka properties the Java client takes under the same name.
_SAME_NAME = frozenset({"security.protocol", "client.id"})
_TAKEN_ABOVE = frozenset(
    {"bootstrap.servers", "sasl.mechanism", "sasl.mechanisms", "sasl.username", "sasl.password"}
)
# librdkafka's PEM files -> the Java client's PEM key store, given as the files' text.
_PEM_KEYS = {
    "ssl.certificate.location": "ssl.keystore.certificate.chain",
    "ssl.key.location": "ssl.keystore.key",
}
# librdkafka properties that change nothing for a few admin reads.
_IRRELEVANT = frozenset({"socket.keepalive.enable", "broker.address.family", "log_level", "debug"})


def java_properties(client: Mapping[str, Any], timeout_seconds: float) -> dict[str, str] | str:
    """The Java client's properties for librdkafka client properties (``bootstrap.servers``
    and the cluster's own), or why they cannot be built."""
    timeout_ms = str(int(timeout_seconds * 1000))
    props = {
        "bootstrap.servers": str(client["bootstrap.servers"]),
        "client.id": "mirror-audit",
        "request.timeout.ms": timeout_ms,
        "default.api.timeout.ms": timeout_ms,
    }
    mechanism = sasl_mechanism(client)
    if mechanism == "OAUTHBEARER":
        oidc = _oidc_login(client)
        if isinstance(oidc, str):
            return oidc
        props.update(oidc)
    elif mechanism:
        if mechanism not in _JAAS_MODULES:
            return f"SASL mechanism {mechanism} is not supported for the Java client here"
        user, password = client.get("sasl.username"), client.get("sasl.password")
        if user is None or password is None:
            return f"SASL {mechanism} needs sasl.username and sasl.password"
        props["sasl.mechanism"] = mechanism
        props["sasl.jaas.config"] = (
            f'{_JAAS_MODULES[mechanism]} required username="{_jaas_quoted(str(user))}" '
            f'password="{_jaas_quoted(str(password))}";'
        )
    for key, value in client.items():
        if key in _TAKEN_ABOVE or (mechanism == "OAUTHBEARER" and key.startswith("sasl.oauthbearer.")):
            continue
        if key in _SAME_NAME:
            props[key] = str(value)
        elif key == "ssl.ca.location":
            props["ssl.truststore.type"] = "PEM"
            props["ssl.truststore.location"] = str(value)
        elif key in _PEM_KEYS:
            pem = _read(str(value))
            if pem is None:
                return f"{key} {value} cannot be read"
            props["ssl.keystore.type"] = "PEM"
            props[_PEM_KEYS[key]] = pem
        elif key == "ssl.key.password":
            props["ssl.key.password"] = str(value)
        elif key == "ssl.endpoint.identification.algorithm":
            props[key] = "" if str(value).lower() == "none" else str(value)
        elif key not in _IRRELEVANT:
            return f"the property {key} has no Java client equivalent here"
    return props


def _oidc_login(client: Mapping[str, Any]) -> dict[str, str] | str:
    """An OAUTHBEARER login with OIDC client credentials (librdkafka's
    ``sasl.oauthbearer.method=oidc``) as the Java client's own (KIP-768): its login callback
    handler asks the same token endpoint with the same client id and secret. Anything else
    (a ``token_provider``, librdkafka's unsecured JWTs) has no Java equivalent here."""
    if client.get(TOKEN_PROVIDER):
        return "a token_provider (a Python callable) cannot log the Java client in"
    if str(client.get("sasl.oauthbearer.method", "")).lower() != "oidc":
        return "OAUTHBEARER without sasl.oauthbearer.method: oidc is not supported for the Java client here"
    if client.get("https.ca.location"):
        return "https.ca.location (the token endpoint's CA) has no Java client equivalent here"
    url = client.get("sasl.oauthbearer.token.endpoint.url")
    client_id = client.get("sasl.oauthbearer.client.id")
    secret = client.get("sasl.oauthbearer.client.secret")
    if not (url and client_id and secret):
        return "OIDC needs sasl.oauthbearer.token.endpoint.url, .client.id and .client.secret"
    options = [f'clientId="{_jaas_quoted(str(client_id))}"', f'clientSecret="{_jaas_quoted(str(secret))}"']
    if client.get("sasl.oauthbearer.scope"):
        options.append(f'scope="{_jaas_quoted(str(client["sasl.oauthbearer.scope"]))}"')
    for pair in str(client.get("sasl.oauthbearer.extensions") or "").split(","):
        name, _, value = pair.partition("=")
        if name.strip():
            options.append(f'extension_{name.strip()}="{_jaas_quoted(value.strip())}"')
    return {
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.login.callback.handler.class": _OIDC_HANDLER,
        "sasl.oauthbearer.token.endpoint.url": str(url),
        "sasl.jaas.config": f"{_OAUTH_MODULE} required {' '.join(options)};",
    }


def java_system_properties(client: Mapping[str, Any]) -> dict[str, str]:
    """JVM system properties a login needs: since Kafka 4.0 the client fetches tokens only
    from URLs a system property allows."""
    url = client.get("sasl.oauthbearer.token.endpoint.url")
    if sasl_mechanism(client) == "OAUTHBEARER" and url:
        return {"org.apache.kafka.sasl.oauthbearer.allowed.urls": str(url)}
    return {}


def _jaas_quoted(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None
