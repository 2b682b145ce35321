"""kafka-python's side of a token login (``audit.collect.logins``), apart so that importing
the logins does not import kafka-python where only librdkafka is used."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka.net.sasl.oauth import AbstractTokenProvider

from audit.collect.logins import (
    TOKEN_ENDPOINT,
    OidcClientCredentials,
    TokenProvider,
    oauth_extensions,
)
from audit.config import TOKEN_PROVIDER


class KafkaPythonTokenProvider(TokenProvider, AbstractTokenProvider):  # type: ignore[misc]
    """A ``TokenProvider`` kafka-python accepts: it checks the class its provider derives from."""


def kafka_python_oauth(client: Mapping[str, Any]) -> Any | str:
    """kafka-python's token provider for OAUTHBEARER client settings, or why there is none."""
    spec = client.get(TOKEN_PROVIDER)
    extensions = oauth_extensions(str(client.get("sasl.oauthbearer.extensions") or ""))
    if spec:
        return KafkaPythonTokenProvider(str(spec), None, extensions)
    if str(client.get("sasl.oauthbearer.method") or "").lower() == "oidc":
        missing = [
            key
            for key in (
                TOKEN_ENDPOINT,
                "sasl.oauthbearer.client.id",
                "sasl.oauthbearer.client.secret",
            )
            if not client.get(key)
        ]
        if missing:
            return f"OIDC needs {', '.join(missing)}"
        oidc = OidcClientCredentials(
            str(client[TOKEN_ENDPOINT]),
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
