"""kafka-python's side of a token login (``audit.collect.logins``), apart so that importing
the logins does not import kafka-python where only librdkafka is used."""

from __future__ import annotations

from kafka.net.sasl.oauth import AbstractTokenProvider

from audit.collect.logins import TokenProvider


class KafkaPythonTokenProvider(TokenProvider, AbstractTokenProvider):  # type: ignore[misc]
    """A ``TokenProvider`` kafka-python accepts: it checks the class its provider derives from."""
