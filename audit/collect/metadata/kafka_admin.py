"""Thin, read-only adapter over confluent-kafka's AdminClient.

It turns client objects into plain values and client failures into one ``ClusterError``
that names the cluster and the call. Only describe/list calls are made: nothing here
commits offsets, joins a group, creates a topic or writes a record.

The adapter is one class, ``KafkaAdmin``, so that every admin call goes through the same
error mapping, timeouts and concurrency bound (admin_base.py); its reads are written by
what they read: topics, offsets, access and records here, groups and their commits in
group_reads.py.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from typing import Any

from confluent_kafka import Consumer, IsolationLevel, KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import OffsetSpec

from audit.collect.logins import librdkafka_config
from audit.collect.metadata.admin_base import (
    _NOT_YET,
    OFFSET_INVALID,
    CommittedOffset,
    GroupInfo,
    OffsetInfo,
    RawRecord,
    TopicInfo,
    _describe,
    _enum_name,
    _known,
)
from audit.collect.metadata.group_reads import GroupReads
from audit.config import ClusterConfig
from audit.errors import ClusterError

log = logging.getLogger(__name__)

__all__ = [
    "OFFSET_INVALID",
    "CommittedOffset",
    "GroupInfo",
    "KafkaAdmin",
    "OffsetInfo",
    "RawRecord",
    "TopicInfo",
    "require_reachable",
]


def compaction(configs: dict[str, dict[str, str | None]]) -> dict[str, bool]:
    """Per topic whose ``cleanup.policy`` was read (``KafkaAdmin.topic_configs``), whether
    it includes compact."""
    return {t: "compact" in (c["cleanup.policy"] or "") for t, c in configs.items()}


class KafkaAdmin(GroupReads):
    """One cluster's reads: topics, offsets, access and records here, groups and their
    commits in ``GroupReads``, the connection and error mapping in ``AdminBase``."""

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

    def topic_configs(
        self, topics: Sequence[str], names: Sequence[str]
    ) -> tuple[dict[str, dict[str, str | None]], str | None]:
        """Per topic the values of the config entries ``names`` (None: the entry absent),
        for the topics whose config could be read, and why the others could not (None: all
        read). A topic left out is unknown: the caller says so, never assumes a default."""
        from confluent_kafka.admin import ConfigResource, ResourceType

        known: dict[str, dict[str, str | None]] = {}
        why: str | None = None
        if not topics:
            return known, why
        what = ", ".join(names)
        resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
        try:
            futures = self._admin.describe_configs(resources, request_timeout=self.timeout)
        except Exception as exc:  # refused before any answer
            return known, f"{what} not read: {_describe(exc)}"
        for res, fut in futures.items():
            try:
                entries = fut.result(timeout=self.timeout + 5)
            except Exception as exc:  # this topic's config refused (ACLs) or timed out
                why = why or f"{what} not read: {_describe(exc)}"
                continue
            known[res.name] = {n: (None if entries.get(n) is None else str(entries[n].value)) for n in names}
        return known, why

    def compaction(self, topics: Sequence[str]) -> tuple[dict[str, bool], str | None]:
        """Per topic whether its cleanup.policy includes compact, for the topics whose
        config could be read, and why the others could not (None: all read). A topic left
        out is unknown: the caller says so, never "not compacted"."""
        configs, why = self.topic_configs(topics, ("cleanup.policy",))
        return compaction(configs), why

    def compacted_topics(self, topics: Sequence[str]) -> frozenset[str]:
        """Topics whose cleanup.policy includes compact (``compaction``'s answer). Best
        effort for the records scans: a config read refused (ACLs) leaves a topic read as
        not compacted, which can only make a compaction gap look like a missing record (a
        false alarm, never a silent pass); the warning says so."""
        known, why = self.compaction(topics)
        if why is not None:
            log.warning("%s: %s: those topics' ranges are read as not compacted", self.role, why)
        return frozenset(t for t, compacted in known.items() if compacted)

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
