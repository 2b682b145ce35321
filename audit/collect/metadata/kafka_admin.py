"""Thin, read-only adapter over confluent-kafka's AdminClient.

It turns client objects into plain values and client failures into one ``ClusterError``
that names the cluster and the call. Only describe/list calls are made: nothing here
commits offsets, joins a group, creates a topic or writes a record.

One module a little over 400 lines, on purpose: the adapter is one class, so that every
admin call goes through the same error mapping, timeouts and concurrency bound, and a
reader sees in one place everything the auditor ever asks a cluster.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    KafkaError,
    KafkaException,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    OffsetSpec,
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


class KafkaAdmin:
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
                f"grant the auditor's principal the read-only ACLs under Permissions in the README "
                f"({permissions_summary()})"
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

    def topic_names(self) -> list[str]:
        md = self._metadata()
        return sorted(md.topics)

    def describe_topics(self, names: Sequence[str]) -> list[TopicInfo]:
        if not names:
            return []
        futures = self._admin.describe_topics(TopicCollection(list(names)), request_timeout=self.timeout)
        out = []
        for name in names:
            desc = self._result(f"describe_topics({name})", futures[name])
            topic_id = str(desc.topic_id) if getattr(desc, "topic_id", None) is not None else None
            leaders = {p.id: (p.leader.id if p.leader is not None else None) for p in desc.partitions}
            self._leaders.update({(name, p): leader for p, leader in leaders.items()})
            for p in desc.partitions:
                if p.leader is not None and p.leader.host:
                    self._brokers[p.leader.id] = f"{p.leader.host}:{p.leader.port}"
            out.append(TopicInfo(name, topic_id, leaders))
        return out

    def list_offsets(
        self, partitions: Iterable[tuple[str, int]], spec: str, committed: bool = False
    ) -> dict[tuple[str, int], OffsetInfo]:
        """``spec``: earliest | latest | max_timestamp; ``committed`` uses READ_COMMITTED (LSO).

        One ListOffsets request per leader for all its partitions (kafka-python) where it
        answers; what it does not answer (any error, a client setting kafka-python lacks)
        goes through librdkafka, which retries partitions whose leader is moving and names
        the partition and broker that fail."""
        tps = list(partitions)
        out = self.list_offsets_batched(tps, spec, committed)
        rest = [tp for tp in tps if tp not in out]
        if rest:
            out.update(self.list_offsets_per_partition(rest, spec, committed))
        return out

    def list_offsets_batched(
        self, partitions: Sequence[tuple[str, int]], spec: str, committed: bool = False
    ) -> dict[tuple[str, int], OffsetInfo]:
        """Offsets through kafka-python's ``list_partition_offsets``: one request per leader
        broker carrying all its partitions. For 50,000 partitions on four brokers it answers in
        1.5 s where librdkafka's ListOffsets took 9.5 s (about 0.2 ms a partition in the
        client), which made a readiness check at that size miss its minute. Partitions it
        leaves out (an offset no broker gives, a refused request) are the caller's to ask
        again the other way."""
        from audit.collect.metadata.transactions import kafka_python_admin, kafka_python_settings

        settings = kafka_python_settings(self.cfg)
        if not partitions or isinstance(settings, str) or self._batched_offsets_refused:
            return {}
        from kafka import IsolationLevel as KIsolation
        from kafka import OffsetSpec as KSpec
        from kafka import TopicPartition as KTopicPartition

        specs = {"earliest": KSpec.EARLIEST, "latest": KSpec.LATEST, "max_timestamp": KSpec.MAX_TIMESTAMP}
        wanted = specs[spec]
        level = KIsolation.READ_COMMITTED if committed else KIsolation.READ_UNCOMMITTED
        try:
            with kafka_python_admin(settings) as admin:
                answered = admin.list_partition_offsets(
                    {KTopicPartition(t, p): wanted for t, p in partitions},
                    isolation_level=level,
                    timeout_ms=int(self.timeout * 1000),
                )
        except Exception as exc:  # any refusal: the per-partition path gives the precise error
            from kafka.errors import BrokerResponseError

            # A broker's answer for some partition (a leader still settling) is this call's
            # alone; any other failure (kafka-python cannot connect, log in or speak the
            # version) is not tried again by this client: it would cost its timeout on
            # every call before the other way answers.
            if not isinstance(exc, BrokerResponseError):
                self._batched_offsets_refused = True
            log.info("%s: batched ListOffsets not used (%s): librdkafka's instead", self.role, _describe(exc))
            return {}
        out: dict[tuple[str, int], OffsetInfo] = {}
        for tp, info in answered.items():
            if info.offset is None or (info.offset < 0 and spec != "max_timestamp"):
                continue  # never an offset to record: asked again the other way
            out[(tp.topic, tp.partition)] = OffsetInfo(
                int(info.offset), _known(info.timestamp), _known(info.leader_epoch)
            )
        return out

    def list_offsets_per_partition(
        self, partitions: Iterable[tuple[str, int]], spec: str, committed: bool = False
    ) -> dict[tuple[str, int], OffsetInfo]:
        """Offsets through librdkafka, a future per partition."""
        specs: dict[str, Any] = {
            "earliest": OffsetSpec.earliest(),
            "latest": OffsetSpec.latest(),
            "max_timestamp": OffsetSpec.max_timestamp(),
        }
        request = {TopicPartition(t, p): specs[spec] for t, p in partitions}
        if not request:
            return {}
        level = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
        out: dict[tuple[str, int], OffsetInfo] = {}
        deadline, pause = time.monotonic() + self.timeout, 0.1
        while request:
            futures = self._admin.list_offsets(request, isolation_level=level, request_timeout=self.timeout)
            again = {}
            for tp, fut in futures.items():
                call = f"list_offsets({spec}, {self._partition(tp.topic, tp.partition)})"
                try:
                    info = fut.result(timeout=self.timeout + 5)
                except KafkaException as exc:
                    # Just after a leader change the new leader answers "not yet" (KIP-207)
                    # until its high watermark has caught up: asked again, not an error.
                    if exc.args[0].code() in _NOT_YET and time.monotonic() < deadline:
                        again[tp] = request[tp]
                        continue
                    raise self._fail(call, exc) from exc
                except Exception as exc:
                    raise self._fail(call, exc) from exc
                if info.offset == OFFSET_INVALID or (info.offset < 0 and spec != "max_timestamp"):
                    # librdkafka answers a partition whose leader is down (a broker killed
                    # mid-snapshot) with offset -1001 and no error: never an offset to record.
                    if time.monotonic() < deadline:
                        again[tp] = request[tp]
                        continue
                    raise ClusterError(
                        f"{self.role} cluster ({self.cfg.bootstrap_servers}): {call} got no offset "
                        f"(librdkafka offset {info.offset}) within {self.timeout:.0f}s: the partition's "
                        "leader did not answer; check that broker is up and the partition has a leader "
                        "(kafka-topics --describe), then run again"
                    )
                out[(tp.topic, tp.partition)] = OffsetInfo(
                    int(info.offset), _known(info.timestamp), _known(info.leader_epoch)
                )
            if again:
                log.debug("%s: list_offsets again for %d partitions (leaders moving)", self.role, len(again))
                time.sleep(pause)
                pause = min(1.0, pause * 2)
            request = again
        return out

    def offsets_for_times(self, wanted: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """The first offset at or after each timestamp (ms), or the end offset when none is."""
        if not wanted:
            return {}
        request = {TopicPartition(t, p): OffsetSpec.for_timestamp(ts) for (t, p), ts in wanted.items()}
        futures = self._admin.list_offsets(request, request_timeout=self.timeout)
        out: dict[tuple[str, int], int] = {}
        ends = None
        for tp, fut in futures.items():
            info = self._result(f"list_offsets(for_timestamp, {tp.topic}-{tp.partition})", fut)
            offset = int(info.offset)
            if offset < 0:  # no record at or after the timestamp: nothing in the window
                if ends is None:
                    ends = self.list_offsets(list(wanted), "latest")
                offset = ends[(tp.topic, tp.partition)].offset
            out[(tp.topic, tp.partition)] = offset
        return out

    def may_describe_cluster(self) -> bool | None:
        """Whether this principal may Describe the cluster (None: the cluster would not say).
        Without it Kafka's ListGroups answers only the groups the principal may Describe one
        by one, and says nothing of the others."""
        try:
            desc = self._admin.describe_cluster(
                include_authorized_operations=True, request_timeout=self.timeout
            ).result(timeout=self.timeout + 5)
        except Exception as exc:  # an old broker or a refused call: unknown, not an error
            log.debug("%s: describe_cluster failed: %s", self.role, _describe(exc))
            return None
        ops = desc.authorized_operations
        return ops is not None and any(_enum_name(op) in ("DESCRIBE", "ALL") for op in ops)

    def authorized_topic_operations(self, names: Sequence[str]) -> dict[str, frozenset[str] | None]:
        """Per topic, the operations the cluster says this principal may perform on it
        (DescribeTopics with authorized operations, KIP-430): what ``mirror-audit check``
        judges permissions by, so ACLs, RBAC and super users are all answered the same
        way. None for a topic the cluster would not say of."""
        if not names:
            return {}
        futures = self._admin.describe_topics(
            TopicCollection(list(names)), request_timeout=self.timeout, include_authorized_operations=True
        )
        out: dict[str, frozenset[str] | None] = {}
        for name in names:
            try:
                ops = futures[name].result(timeout=self.timeout + 5).authorized_operations
            except Exception as exc:
                log.debug("%s: describe_topics(%s) failed: %s", self.role, name, _describe(exc))
                out[name] = None
                continue
            out[name] = None if ops is None else frozenset(_enum_name(op) for op in ops)
        return out

    def may_describe_group(self, group_id: str) -> bool | None:
        """Whether this principal may Describe the group ``group_id`` (which need not exist:
        DescribeGroups creates nothing), from the cluster's answer; None where it says
        neither. A cluster that has never had a group answers "coordinator not available"
        while it makes its offsets topic: asked again until the timeout."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                self._admin.describe_consumer_groups([group_id], request_timeout=self.timeout)[
                    group_id
                ].result(timeout=self.timeout + 5)
                return True
            except Exception as exc:
                why = _describe(exc).upper()
                if "GROUP_AUTHORIZATION_FAILED" in why:
                    return False
                if "COORDINATOR" not in why or time.monotonic() > deadline:
                    log.debug("%s: describe_consumer_groups(%s) failed: %s", self.role, group_id, why)
                    return None
            time.sleep(0.5)

    def compacted_topics(self, topics: Sequence[str]) -> frozenset[str]:
        """Topics whose cleanup.policy includes compact. Best effort: config reads can be
        refused (ACLs), and compaction is then taken as unknown, not as a failure."""
        if not topics:
            return frozenset()
        from confluent_kafka.admin import ConfigResource, ResourceType

        resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
        out = set()
        try:
            for res, fut in self._admin.describe_configs(resources, request_timeout=self.timeout).items():
                policy = fut.result(timeout=self.timeout + 5).get("cleanup.policy")
                if policy is not None and "compact" in str(policy.value):
                    out.add(res.name)
        except Exception as exc:
            log.warning(
                "%s: cleanup.policy could not be read (%s): topics treated as not compacted",
                self.role,
                _describe(exc),
            )
        return frozenset(out)

    def list_groups(self) -> list[GroupInfo]:
        listing = self._result(
            "list_consumer_groups", self._admin.list_consumer_groups(request_timeout=self.timeout)
        )
        if listing.errors:
            log.warning(
                "%s: list_consumer_groups reported %d errors: %s",
                self.role,
                len(listing.errors),
                _describe(listing.errors[0]),
            )
        ids = [g.group_id for g in listing.valid]
        types = {g.group_id: _group_type(g) for g in listing.valid}
        states = {g.group_id: _enum_name(getattr(g, "state", "UNKNOWN")) for g in listing.valid}
        members: dict[str, int] = {}
        for chunk in _chunks(ids, 100):
            futures = self._admin.describe_consumer_groups(chunk, request_timeout=self.timeout)
            for gid in chunk:
                desc = self._result(f"describe_consumer_groups({gid})", futures[gid])
                members[gid] = len(desc.members or [])
                states[gid] = _enum_name(desc.state)
                if getattr(desc, "type", None) is not None:
                    types[gid] = _type_word(desc.type)
        return [GroupInfo(g, types[g], states[g], members.get(g, 0)) for g in ids]

    def groups_by_type(self, known: Collection[str]) -> tuple[list[GroupInfo], list[GroupInfo], str | None]:
        """Kafka Streams groups (KIP-1071, ``group.protocol=streams``) and share groups
        (KIP-932): librdkafka's group listing leaves both out, so the same ListGroups is
        asked through kafka-python, whose answer carries each group's type (ListGroups v5,
        brokers 4.0+). A streams group's committed offsets are read like any group's; a
        share group's start offsets only the Java client reads (``java_admin.py``), so its
        member count is left unknown here. Returns the streams groups, the share groups and,
        where they could not be listed, why (a manifest note: the group checks then cannot
        see them)."""
        from audit.collect.metadata.transactions import kafka_python_admin, kafka_python_settings

        settings = kafka_python_settings(self.cfg)
        if isinstance(settings, str):
            return [], [], f"streams and share groups not listed: {settings}"
        try:
            with kafka_python_admin(settings) as admin:
                listed = admin.list_groups()
        except Exception as exc:  # any failure is the note, never the snapshot's end
            log.warning("%s: streams and share groups could not be listed: %s", self.role, _describe(exc))
            return [], [], f"streams and share groups not listed: {_describe(exc)}"
        by_type: dict[str, list[GroupInfo]] = {"streams": [], "share": []}
        for g in listed:
            kind = g.get("group_type")
            if kind in by_type and g["group_id"] not in known:
                state = _state_word(str(g.get("group_state") or ""))
                by_type[kind].append(GroupInfo(str(g["group_id"]), kind, state, None))
        streams, share = (sorted(by_type[k], key=lambda g: g.group_id) for k in ("streams", "share"))
        return streams, share, None

    def committed_offsets(self, group_ids: Sequence[str]) -> dict[str, list[CommittedOffset]]:
        """Committed offsets per group: many groups per OffsetFetch request where the
        cluster allows it (KIP-709, brokers 3.0+), else one call per group. Through
        kafka-python even for one group: confluent-kafka reads commit metadata as a C string
        and runs past the end of metadata a Java client committed (no terminating NUL: a
        Kafka Streams application's), giving stray bytes or a UnicodeDecodeError."""
        ids = list(group_ids)
        if ids:
            batched = self.committed_offsets_batched(ids)
            if batched is not None:
                return batched
        return self.committed_offsets_per_group(ids)

    def committed_offsets_batched(self, group_ids: list[str]) -> dict[str, list[CommittedOffset]] | None:
        """Through kafka-python, whose ``list_group_offsets`` sends one OffsetFetch per
        coordinator for a whole batch of groups (librdkafka's asks one group per request,
        one request at a time per coordinator: thousands of round trips for thousands of
        groups). None where it cannot be used (a SASL mechanism kafka-python lacks, a broker
        before 3.0, any group-level error): the per-group path then answers, and names the
        group that fails."""
        from audit.collect.metadata.transactions import kafka_python_admin, kafka_python_settings

        settings = kafka_python_settings(self.cfg)
        if isinstance(settings, str):
            log.info("%s: batched OffsetFetch not used (%s): one group per request", self.role, settings)
            return None
        out: dict[str, list[CommittedOffset]] = {}
        try:
            with kafka_python_admin(settings) as admin:
                for chunk in _chunks(group_ids, GROUPS_PER_OFFSET_FETCH):
                    fetched = admin.list_group_offsets(chunk)
                    for gid in chunk:
                        rows = [
                            CommittedOffset(
                                tp.topic,
                                tp.partition,
                                int(om.offset),
                                _known(om.leader_epoch),
                                _committed_metadata(om.metadata),
                            )
                            for tp, om in (fetched.get(gid) or {}).items()
                            if om.offset is not None and om.offset >= 0
                        ]
                        out[gid] = sorted(rows, key=lambda c: (c.topic, c.partition))
        except Exception as exc:  # any refusal: the per-group calls give the precise error
            log.info(
                "%s: batched OffsetFetch not used (%s): one group per request", self.role, _describe(exc)
            )
            return None
        return out

    def committed_offsets_per_group(self, group_ids: Sequence[str]) -> dict[str, list[CommittedOffset]]:
        """Committed offsets per group; one call per group, at most ``max_concurrent_requests`` in flight."""
        out: dict[str, list[CommittedOffset]] = {}
        for chunk in _chunks(list(group_ids), self.cfg.max_concurrent_requests):
            futures = {
                gid: self._admin.list_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(gid)], request_timeout=self.timeout
                )[gid]
                for gid in chunk
            }
            for gid, fut in futures.items():
                try:
                    result = self._result(f"list_consumer_group_offsets({gid})", fut)
                except UnicodeDecodeError:
                    raise ClusterError(
                        f"{self.role} cluster ({self.cfg.bootstrap_servers}): group {gid}'s commit "
                        "metadata cannot be read by confluent-kafka (metadata committed without a "
                        "terminating NUL, as Java clients and Kafka Streams commit it); kafka-python "
                        "reads it: use settings kafka-python takes (see the batched OffsetFetch line "
                        "above)"
                    ) from None
                rows = []
                for tp in result.topic_partitions or []:
                    if tp.error is not None or tp.offset is None or tp.offset < 0:
                        continue
                    rows.append(
                        CommittedOffset(
                            tp.topic,
                            tp.partition,
                            int(tp.offset),
                            _known(getattr(tp, "leader_epoch", None)),
                            tp.metadata or None,
                        )
                    )
                out[gid] = rows
        return out

    def _reader(self) -> Any:
        """A consumer used by assignment only: no subscribe, no commit, so no group is
        joined or created, and nothing is written to the cluster."""
        settings: dict[str, Any] = {
            **self.cfg.client_settings(),
            "group.id": "mirror-audit-never-joined",  # librdkafka wants one; assign() never uses it
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "allow.auto.create.topics": False,
            "isolation.level": "read_uncommitted",
            "auto.offset.reset": "error",
            "logger": logging.getLogger(f"audit.collect.rdkafka.{self.role}"),
        }
        return Consumer(librdkafka_config(settings))

    def read_topic(self, topic: str) -> list[RawRecord] | None:
        """Every record of ``topic`` from log start to the high watermark at call time, or
        None if the topic does not exist. For small internal topics (MirrorMaker 2's offset
        syncs and checkpoints): the records are returned as a list."""
        if topic not in self.topic_names():
            return None
        (info,) = self.describe_topics([topic])
        tps = [(topic, p) for p in sorted(info.leaders)]
        start = self.list_offsets(tps, "earliest")
        end = self.list_offsets(tps, "latest")
        todo = {p: end[(t, p)].offset for t, p in tps if end[(t, p)].offset > start[(t, p)].offset}
        records: list[RawRecord] = []
        if not todo:
            return records
        consumer = self._reader()
        try:
            consumer.assign([TopicPartition(topic, p, start[(topic, p)].offset) for p in todo])
            deadline = time.monotonic() + self.timeout
            while todo:
                if time.monotonic() > deadline:
                    raise ClusterError(
                        f"{self.role} cluster: reading topic {topic} did not reach its end within "
                        f"{self.timeout:.0f}s ({len(todo)} partitions short); "
                        f"raise {self.role}.timeout_seconds"
                    )
                for msg in consumer.consume(num_messages=1000, timeout=0.5):
                    if msg.error() is not None:
                        continue
                    p, off = int(msg.partition() or 0), int(msg.offset() or 0)
                    if p not in todo or off >= todo[p]:  # written after we looked: next run's
                        continue
                    ts_type, ts = msg.timestamp()
                    records.append(RawRecord(p, off, ts if ts_type else None, msg.key(), msg.value()))
                # The position, not the last record seen: it also moves past transaction
                # markers, which are never delivered as records.
                for tp in consumer.position([TopicPartition(topic, p) for p in todo]):
                    if tp.offset >= todo[tp.partition]:
                        del todo[tp.partition]
        finally:
            consumer.close()
        return records

    def record_timestamps(self, positions: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """Timestamp of the record at each (topic, partition) offset, read uncommitted."""
        if not positions:
            return {}
        consumer = self._reader()
        found: dict[tuple[str, int], int] = {}
        try:
            consumer.assign([TopicPartition(t, p, off) for (t, p), off in positions.items()])
            deadline = time.monotonic() + self.timeout
            while len(found) < len(positions) and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is None:
                    continue
                if msg.error() is not None:
                    continue
                key = (str(msg.topic()), int(msg.partition() or 0))
                if key in positions and key not in found:
                    found[key] = int(msg.timestamp()[1])
                    consumer.pause([TopicPartition(key[0], key[1])])
        finally:
            consumer.close()
        missing = set(positions) - set(found)
        if missing:
            log.warning(
                "%s: no record read at the last stable offset of %d partitions within %.0fs",
                self.role,
                len(missing),
                self.timeout,
            )
        return found


def require_reachable(role: str, cfg: ClusterConfig, snapshot_cluster_id: str | None = None) -> KafkaAdmin:
    """One metadata call on the driver before Spark tasks read a cluster. A task that cannot
    connect only times out (a refused login looks like a silent broker to a consumer), so
    a wrong password or an unreachable cluster is caught here, in one line, instead of as
    every range unreadable after the read timeout. With ``snapshot_cluster_id`` it also
    refuses a cluster other than the one the snapshot was taken from: its offsets would be
    read against another cluster's ranges. Returns the admin, for the caller's next calls."""
    admin = KafkaAdmin(role, cfg)
    found = admin.cluster_id()
    if snapshot_cluster_id and found and found != snapshot_cluster_id:
        raise ClusterError(
            f"{role} cluster ({cfg.bootstrap_servers}) is cluster {found}, but its snapshot was taken "
            f"from cluster {snapshot_cluster_id}: give the configuration the snapshot was taken with"
        )
    return admin


def _group_type(listing: Any) -> str:
    t = getattr(listing, "type", None)
    return _type_word(t) if t is not None else "unknown"


def _type_word(value: Any) -> str:
    word = _enum_name(value).lower()
    return word if word in ("consumer", "classic", "share", "streams") else "unknown"


def _state_word(state: str) -> str:
    """A group state as ListGroups spells it (``NotReady``) in the snapshot's words
    (``NOT_READY``, as librdkafka's enum names them); UNKNOWN where the broker gave none."""
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "_", state).upper() or "UNKNOWN"


def _known(value: int | None) -> int | None:
    """A timestamp or leader epoch as Kafka's clients give it, where a negative one (-1)
    means none."""
    return value if value is not None and value >= 0 else None


def _committed_metadata(raw: str | None) -> str | None:
    """Commit metadata as its committer wrote it: librdkafka clients (confluent-kafka among
    them) commit it with their C string's terminating NUL, which the broker keeps and
    kafka-python returns; one trailing NUL is that artifact, not the committer's text."""
    if not raw:
        return None
    return (raw[:-1] or None) if raw.endswith("\x00") else raw


# Groups per batched OffsetFetch: one request per coordinator for each batch (its size grows
# with the groups' committed partitions, so batches stay well under a request's limits).
GROUPS_PER_OFFSET_FETCH = 1000


def _chunks(items: list[str], size: int) -> list[list[str]]:
    return [items[i : i + size] for i in range(0, len(items), max(1, size))]


def _describe(exc: BaseException | Any) -> str:
    arg = exc.args[0] if isinstance(exc, BaseException) and exc.args else exc
    if isinstance(arg, KafkaError):
        return f"{arg.name()}: {arg.str()}"
    text = str(exc)
    return text or type(exc).__name__
