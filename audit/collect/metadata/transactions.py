"""Open transactions, named the way ``kafka-transactions find-hanging`` names them.

confluent-kafka has no transaction admin calls (ListTransactions, DescribeTransactions,
DescribeProducers); kafka-python 3.x implements them, so this one adapter uses it. It is
best effort: where the cluster refuses (ACLs, an old broker, a SASL mechanism kafka-python
cannot do) the table is left out and CM-TXN-1 dates open transactions from the record at
the last stable offset instead.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from audit.collect.logins import sasl_mechanism
from audit.config import TOKEN_PROVIDER, ClusterConfig
from audit.snapshot import OpenTransactionRecord

log = logging.getLogger(__name__)

# librdkafka property -> kafka-python keyword.
_PROPERTY_MAP = {
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
}
_SUPPORTED_SASL = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
# An OAUTHBEARER login's settings beyond sasl.oauthbearer.*: the named token provider, and
# the CA of an https token endpoint (librdkafka's name).
_OAUTH_PROPERTIES = frozenset({TOKEN_PROVIDER, "https.ca.location"})
_OPEN_STATES = ["Ongoing", "PrepareCommit", "PrepareAbort"]


def kafka_python_settings(cfg: ClusterConfig) -> dict[str, Any] | str:
    """Keyword arguments for kafka-python's admin client, or why they cannot be built."""
    return kafka_python_from(cfg.client_settings(), cfg.timeout_seconds)


def kafka_python_from(
    client: dict[str, Any], timeout_seconds: float, ignored: frozenset[str] | None = None
) -> dict[str, Any] | str:
    """kafka-python's keywords for librdkafka client properties (``bootstrap.servers`` and
    the cluster's properties), or why they cannot be built. With ``ignored`` (the properties
    known not to matter to the caller) a property kafka-python has no keyword for is refused
    by name instead of left out: for a reader that must connect exactly as librdkafka would."""
    settings: dict[str, Any] = {
        "bootstrap_servers": str(client["bootstrap.servers"]).split(","),
        "client_id": "mirror-audit",
        "request_timeout_ms": int(timeout_seconds * 1000),
        # kafka-python waits 30 s by default for a first broker, whatever the request timeout;
        # an unreachable cluster or a refused login should cost the configured timeout only.
        "bootstrap_timeout_ms": int(timeout_seconds * 1000),
    }
    mechanism = sasl_mechanism(client)
    for key, value in client.items():
        if key in _PROPERTY_MAP:
            settings[_PROPERTY_MAP[key]] = value
        elif mechanism == "OAUTHBEARER" and (key in _OAUTH_PROPERTIES or key.startswith("sasl.oauthbearer.")):
            continue  # the token provider's (below)
        elif ignored is not None and key != "bootstrap.servers" and key not in ignored:
            return f"the property {key} has no kafka-python equivalent"
    if mechanism == "OAUTHBEARER":
        from audit.collect.kafka_python_token import kafka_python_oauth

        provider = kafka_python_oauth(client)
        if isinstance(provider, str):
            return provider
        settings["sasl_oauth_token_provider"] = provider
    elif mechanism and mechanism not in _SUPPORTED_SASL:
        return f"SASL mechanism {mechanism} is not supported by kafka-python here"
    return settings


@contextmanager
def kafka_python_admin(settings: dict[str, Any]) -> Iterator[Any]:
    """A kafka-python admin client for one batch of calls, closed after them; a failure to
    close a half-open client is logged, never raised over the calls' own result or error."""
    from kafka import KafkaAdminClient

    try:
        admin = KafkaAdminClient(**settings)
    except Exception as exc:
        # A client that fails to bootstrap stays alive inside kafka-python (its connection
        # manager keeps the error in a future); raised on, that error would gather the
        # frames of every caller it passes, and whatever clients they hold, for the life of
        # the process. The caller gets a copy of it, free of that history.
        raise _detached(exc) from None
    try:
        yield admin
    finally:
        try:
            admin.close()
        except Exception:  # closing a half-open client must not mask the result
            log.debug("closing kafka-python admin client failed", exc_info=True)


def _detached(exc: Exception) -> Exception:
    """A new exception of the same type and arguments (a wrapper naming the type where the
    type cannot be rebuilt from them), without the original's traceback."""
    try:
        fresh = copy.copy(exc)
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    fresh.__traceback__ = None
    return fresh


def collect_open_transactions(
    role: str, cfg: ClusterConfig, open_partitions: Sequence[tuple[str, int]]
) -> tuple[list[OpenTransactionRecord] | None, str]:
    """(rows, note): coordinator-side and partition-side open transactions, or None and why not."""
    settings = kafka_python_settings(cfg)
    if isinstance(settings, str):
        return None, f"unavailable: {settings}"
    try:
        from kafka import TopicPartition as KTopicPartition
    except ImportError as exc:  # pragma: no cover - a dependency of the package
        return None, f"unavailable: kafka-python is not installed ({exc})"
    try:
        with kafka_python_admin(settings) as admin:
            rows: list[OpenTransactionRecord] = []
            by_broker = admin.list_transactions(state_filters=_OPEN_STATES)  # {broker id: [listing]}
            ids = sorted({t.transactional_id for listings in by_broker.values() for t in listings})
            described = admin.describe_transactions(ids) if ids else {}
            for tid, d in described.items():
                state = getattr(d.state, "value", str(d.state))
                parts = sorted(d.topic_partitions) or [None]
                for tp in parts:
                    rows.append(
                        OpenTransactionRecord(
                            side="coordinator",
                            transactional_id=tid,
                            producer_id=int(d.producer_id),
                            producer_epoch=int(d.producer_epoch),
                            state=state,
                            topic=tp.topic if tp is not None else None,
                            partition=tp.partition if tp is not None else None,
                            start_offset=None,
                            start_timestamp_ms=int(d.transaction_start_time_ms)
                            if d.transaction_start_time_ms >= 0
                            else None,
                        )
                    )
            if open_partitions:
                producers = admin.describe_producers([KTopicPartition(t, p) for t, p in open_partitions])
                for tp, state in producers.items():
                    for prod in state.active_producers:
                        if prod.current_transaction_start_offset < 0:
                            continue
                        rows.append(
                            OpenTransactionRecord(
                                side="partition",
                                transactional_id=None,
                                producer_id=int(prod.producer_id),
                                producer_epoch=int(prod.producer_epoch),
                                state="Ongoing",
                                topic=tp.topic,
                                partition=tp.partition,
                                start_offset=int(prod.current_transaction_start_offset),
                                start_timestamp_ms=None,
                            )
                        )
            return rows, "collected with ListTransactions, DescribeTransactions and DescribeProducers"
    except Exception as exc:  # kafka-python raises many error types; all mean "not available"
        log.warning(
            "%s: transaction admin calls unavailable (%s); dating open transactions from the LSO record",
            role,
            type(exc).__name__,
        )
        return None, f"unavailable: {type(exc).__name__}: {exc}"[:300]


@dataclass(frozen=True)
class KafkaPythonProbe:
    """What ``mirror-audit check`` learns through kafka-python (the client of the
    transaction calls and the wire fetch): whether it connects, the broker's API level,
    and whether the principal may Describe transactional ids."""

    connects: bool
    # The newest Kafka release whose API versions the broker offers, as kafka-python infers
    # it from ApiVersions ("4.1"): the broker is that release or later.
    api_level: str | None
    may_describe_transactional_ids: bool | None
    detail: str = ""


def probe_kafka_python(cfg: ClusterConfig, transactional_id: str) -> KafkaPythonProbe:
    """Connect with kafka-python as the snapshot's transaction calls do and describe the
    transactional id ``transactional_id`` (which need not exist: DescribeTransactions
    writes nothing). Kafka answers an id it may not describe with an authorization error
    and an unknown one it may with "not found"."""
    settings = kafka_python_settings(cfg)
    if isinstance(settings, str):
        return KafkaPythonProbe(False, None, None, settings)
    try:
        with kafka_python_admin(settings) as admin:
            version = admin._manager.broker_version_data.broker_version  # inferred at bootstrap
            level = ".".join(str(v) for v in version[:2]) if version else None
            allowed, detail = _may_describe_transaction(admin, transactional_id, cfg.timeout_seconds)
            return KafkaPythonProbe(True, level, allowed, detail)
    except Exception as exc:  # kafka-python raises many error types; all mean "did not connect"
        return KafkaPythonProbe(False, None, None, f"{type(exc).__name__}: {exc}"[:200])


def _may_describe_transaction(admin: Any, transactional_id: str, timeout: float) -> tuple[bool | None, str]:
    """(may describe, why unknown). A cluster that has never had a transaction answers
    "coordinator not available" while it makes its transaction state topic: asked again
    until the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            admin.describe_transactions([transactional_id])
            return True, ""
        except Exception as exc:
            name = type(exc).__name__
            if "AuthorizationFailed" in name:
                return False, ""
            if name.startswith("TransactionalIdNotFound"):
                return True, ""
            if "Coordinator" not in name or time.monotonic() > deadline:
                return None, f"{name}: {exc}"[:200]
        time.sleep(0.5)


def transactional_producers(
    role: str, cfg: ClusterConfig, partitions: Sequence[tuple[str, int]]
) -> tuple[dict[tuple[str, int], int], str | None]:
    """Per partition how many transactional producers write it (DescribeProducers: active
    producers with a coordinator epoch, i.e. that have ended a transaction there, or with
    one open), for the partitions whose leaders answered, and why the others could not be
    read (None: all read). A partition left out is unknown.

    The brokers keep a producer's state until it has been idle for
    ``producer.id.expiration.ms`` (a day by default): a producer that wrote transactions
    only before that is no longer seen, and the caller's docs say so."""
    settings = kafka_python_settings(cfg)
    if isinstance(settings, str):
        return {}, f"producers not described: {settings}"
    if not partitions:
        return {}, None
    from kafka import TopicPartition as KTopicPartition

    try:
        with kafka_python_admin(settings) as admin:
            states = admin.describe_producers([KTopicPartition(t, p) for t, p in partitions])
    except Exception as exc:  # kafka-python raises many error types; all mean "not read"
        log.warning("%s: DescribeProducers failed (%s)", role, type(exc).__name__)
        return {}, f"producers not described: {type(exc).__name__}: {str(exc)[:200]}"
    found = {
        (tp.topic, tp.partition): sum(
            1
            for p in state.active_producers
            if p.coordinator_epoch >= 0 or p.current_transaction_start_offset >= 0
        )
        for tp, state in states.items()
    }
    missing = len(set(partitions) - set(found))
    return found, (f"producers not described for {missing} partitions" if missing else None)
