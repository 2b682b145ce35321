"""The core of the read-only adapter over confluent-kafka's AdminClient (``KafkaAdmin``):
one cluster, one role name for messages, one timeout for every call, and the one mapping
of client failures to a ``ClusterError`` that names the cluster and the call. The reads
are grouped by what they read (kafka_admin.py: topics and offsets; group_reads.py: groups
and their commits), each a class over this one, so that every call still goes through
the same error mapping, timeouts and concurrency bound.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from confluent_kafka import (
    KafkaError,
    KafkaException,
)
from confluent_kafka.admin import (
    AdminClient,
)

from audit.collect.logins import librdkafka_config
from audit.collect.metadata.permissions import permissions_summary
from audit.config import ClusterConfig
from audit.errors import ClusterError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: str | None
    leaders: dict[int, int | None]  # partition -> leader broker id


@dataclass(frozen=True)
class OffsetInfo:
    offset: int
    timestamp_ms: int | None
    leader_epoch: int | None


@dataclass(frozen=True)
class GroupInfo:
    group_id: str
    group_type: str
    state: str
    # None where no client here can describe the group (a streams group: neither Python
    # client speaks StreamsGroupDescribe); its state still says whether it is active.
    member_count: int | None


@dataclass(frozen=True)
class RawRecord:
    partition: int
    offset: int
    timestamp_ms: int | None
    key: bytes | None
    value: bytes | None


@dataclass(frozen=True)
class CommittedOffset:
    topic: str
    partition: int
    offset: int
    leader_epoch: int | None
    metadata: str | None


# Where the admin client's librdkafka log lines go: nowhere. Each error among them also
# reaches error_cb, and from there the one-line ClusterError; logged too, a wrong password
# would print a line per retry before that message. (Without a logger librdkafka would
# write them to stderr.)
_SILENT = logging.getLogger("audit.collect.rdkafka.admin")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False

# Errors that say why no call can succeed (the broker refused the login or the TLS
# handshake). The transport errors and "all brokers down" that follow are only their
# consequence, so these lead the message whenever one was seen.
_REFUSED = frozenset({KafkaError._AUTHENTICATION, KafkaError._SSL})
# Partition errors of a leadership in motion, retried until the call's timeout.
# confluent_kafka.OFFSET_INVALID: the offset of a ListOffsets answer that carries none.
OFFSET_INVALID = -1001
_NOT_YET = frozenset(
    {
        KafkaError.OFFSET_NOT_AVAILABLE,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.FENCED_LEADER_EPOCH,
    }
)


def _enum_name(value: Any) -> str:
    name = getattr(value, "name", None)
    return str(name if name is not None else value).upper()


class AdminBase:
    """One cluster, one role name for messages, one timeout for every call."""

    def __init__(self, role: str, cfg: ClusterConfig) -> None:
        self.role = role
        self.cfg = cfg
        self.timeout = cfg.timeout_seconds
        self._last_error: str | None = None
        self._auth_error: str | None = None
        self._lock = threading.Lock()
        # Partition leaders and broker addresses as last described, so an error reading a
        # partition names the broker it was read from (a dead broker is the usual cause).
        self._leaders: dict[tuple[str, int], int | None] = {}
        self._brokers: dict[int, str] = {}
        self._batched_offsets_refused = False
        settings: dict[str, Any] = {
            **cfg.client_settings(),
            "error_cb": self._on_error,
            "logger": _SILENT,
        }
        try:
            self._admin = AdminClient(librdkafka_config(settings))
        except KafkaException as exc:
            raise ClusterError(f"{role} cluster: invalid client settings: {_describe(exc)}") from exc
        except (TypeError, ValueError) as exc:
            raise ClusterError(f"{role} cluster: invalid client settings: {exc}") from exc

    # -- error handling -------------------------------------------------------------

    def _on_error(self, err: KafkaError) -> None:
        with self._lock:
            if err.code() in _REFUSED:
                self._auth_error = err.str()
            else:
                self._last_error = err.str()

    def _fail(self, call: str, exc: BaseException) -> ClusterError:
        # librdkafka hands its error events to error_cb only from poll(); list_topics and
        # the admin futures do not serve them. Without this, a wrong password surfaces as
        # the call's own "Broker transport failure" and the reason is lost.
        try:
            self._admin.poll(0)
        except Exception:  # the failure being reported matters more than this one
            log.debug("serving the client's error callbacks failed", exc_info=True)
        detail = _describe(exc)
        hint = "check bootstrap_servers, network and credentials"
        if "AUTHORIZATION" in detail.upper():
            hint = (
                "grant the auditor's principal the read-only ACLs under Permissions in "
                f"docs/configuration.md ({permissions_summary()})"
            )
        with self._lock:
            last, refused = self._last_error, self._auth_error
        if refused:
            return ClusterError(
                f"{self.role} cluster ({self.cfg.bootstrap_servers}): {call} failed: the connection was "
                f"refused: {refused}; check the credentials (sasl.username, sasl.password) and "
                "security.protocol, sasl.mechanism and ssl.* in the cluster's properties"
            )
        if last and last not in detail:
            detail = f"{detail} (last client error: {last})"
        return ClusterError(
            f"{self.role} cluster ({self.cfg.bootstrap_servers}): {call} failed: {detail}; {hint}"
        )

    def _result(self, call: str, future: Any) -> Any:
        try:
            return future.result(timeout=self.timeout + 5)
        except (KafkaException, TimeoutError) as exc:
            raise self._fail(call, exc) from exc
        except Exception as exc:  # concurrent.futures.TimeoutError and client-side errors
            raise self._fail(call, exc) from exc

    # -- calls ------------------------------------------------------------------------

    def cluster_id(self) -> str | None:
        md = self._metadata()
        return str(md.cluster_id) if md.cluster_id else None

    def _metadata(self) -> Any:
        try:
            md = self._admin.list_topics(timeout=self.timeout)
        except KafkaException as exc:
            raise self._fail("list_topics (metadata)", exc) from exc
        self._brokers.update({b.id: f"{b.host}:{b.port}" for b in md.brokers.values()})
        return md

    def _partition(self, topic: str, partition: int) -> str:
        """``topic-p on broker N (host:port)``: the partition and the leader it was read from."""
        leader = self._leaders.get((topic, partition))
        if leader is None:
            return f"{topic}-{partition}"
        address = self._brokers.get(leader)
        return f"{topic}-{partition} on broker {leader}" + (f" ({address})" if address else "")


def _known(value: int | None) -> int | None:
    """A timestamp or leader epoch as Kafka's clients give it, where a negative one (-1)
    means none."""
    return value if value is not None and value >= 0 else None


def _chunks(items: list[str], size: int) -> list[list[str]]:
    return [items[i : i + size] for i in range(0, len(items), max(1, size))]


def _describe(exc: BaseException | Any) -> str:
    arg = exc.args[0] if isinstance(exc, BaseException) and exc.args else exc
    if isinstance(arg, KafkaError):
        return f"{arg.name()}: {arg.str()}"
    text = str(exc)
    return text or type(exc).__name__
