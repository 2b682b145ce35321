"""An offset-preserving mirror emulator and group offset syncer, for the sandbox only.

Broker-native offset-preserving mirroring (KIP-1279) is not in a released Kafka, so the
demo and the tests stand in for it: this replicator copies each source partition to the
same partition on the destination such that every record lands at the same offset, with
its timestamp, key, value and headers, and every transaction marker (COMMIT or ABORT)
lands at the same offset too, by replaying committed and aborted transactions.

How it finds transactions without raw batch access: offsets missing from a
read_uncommitted scan are control records (markers); records missing from a
read_committed scan were aborted. The records between two markers are replayed as one
transaction closed the same way as on the source. This holds when at most one producer
writes a partition transactionally at a time, which is how the demo produces; it is a
stand-in, not a general replicator. It writes only to the destination sandbox cluster.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    OffsetSpec,
)

from audit.errors import SandboxError
from audit.sandbox.traffic import client_conf, headers_of, retry_group_call, scan_messages

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SourceRecord:
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    committed: bool


def source_records(
    bootstrap: str,
    topic: str,
    partition: int,
    start: int,
    end: int,
    committed_from: int | None = None,
    committed_to: int | None = None,
) -> list[SourceRecord]:
    """[start, end) read uncommitted, each record marked committed where a committed read
    of [committed_from, committed_to) (default: the same range) holds it."""
    uncommitted = scan_messages(bootstrap, topic, partition, start, end, "read_uncommitted")
    first = start if committed_from is None else committed_from
    last = end if committed_to is None else committed_to
    committed = {
        m.offset() for m in scan_messages(bootstrap, topic, partition, first, last, "read_committed")
    }
    return [
        SourceRecord(
            int(m.offset() or 0),
            int(m.timestamp()[1]),
            m.key(),
            m.value(),
            headers_of(m),
            m.offset() in committed,
        )
        for m in uncommitted
    ]


@dataclass(frozen=True)
class Segment:
    """Records up to (not including) a marker at ``marker_offset``; None: no marker follows."""

    records: tuple[SourceRecord, ...]
    marker_offset: int | None


def split_segments(records: list[SourceRecord], start: int, end: int) -> list[Segment]:
    """Cut the offset range [start, end) at every offset no record occupies (a control record)."""
    segments: list[Segment] = []
    current: list[SourceRecord] = []
    expected = start
    for r in records:
        while expected < r.offset:  # one marker per missing offset
            segments.append(Segment(tuple(current), expected))
            current = []
            expected += 1
        current.append(r)
        expected = r.offset + 1
    while expected < end:
        segments.append(Segment(tuple(current), expected))
        current = []
        expected += 1
    if current:
        segments.append(Segment(tuple(current), None))
    return segments


class PartitionWriter:
    """Writes one destination partition; a transactional producer per partition for replays
    (and, in the continuous emulator, for the transaction the source still has open)."""

    def __init__(self, bootstrap: str, topic: str, partition: int, txn_timeout_ms: int = 60_000) -> None:
        self.topic, self.partition = topic, partition
        self.plain = Producer(client_conf(bootstrap, **{"enable.idempotence": True, "linger.ms": 5}))
        self.txn = Producer(
            client_conf(
                bootstrap,
                **{
                    "transactional.id": f"mirror-emulator-{topic}-{partition}",
                    "transaction.timeout.ms": txn_timeout_ms,
                },
            )
        )
        self.txn.init_transactions(30)

    def _send(self, producer: Producer, records: tuple[SourceRecord, ...] | list[SourceRecord]) -> None:
        for r in records:
            producer.produce(
                self.topic,
                r.value,
                r.key,
                partition=self.partition,
                timestamp=r.timestamp_ms,
                headers=list(r.headers) or None,
            )
        producer.flush(60)

    def send_plain(self, records: list[SourceRecord]) -> None:
        if records:
            self._send(self.plain, records)

    def begin_open(self) -> None:
        """Open the transaction that stands for one the source has open."""
        self.txn.begin_transaction()

    def send_in_open(self, records: tuple[SourceRecord, ...] | list[SourceRecord]) -> None:
        if records:
            self._send(self.txn, records)

    def close_open(self, commit: bool) -> None:
        """Close it the way the source closed its own (a real COMMIT or ABORT marker)."""
        if commit:
            self.txn.commit_transaction(30)
        else:
            self.txn.abort_transaction(30)

    def write(self, seg: Segment) -> None:
        if seg.marker_offset is None:
            self._send(self.plain, seg.records)
            return
        aborted = [r for r in seg.records if not r.committed]
        if aborted:
            # Committed records before an aborted transaction were written outside it.
            first_aborted = seg.records.index(aborted[0])
            self._send(self.plain, seg.records[:first_aborted])
            self.txn.begin_transaction()
            self._send(self.txn, seg.records[first_aborted:])
            self.txn.abort_transaction(30)
        else:
            self.txn.begin_transaction()
            self._send(self.txn, seg.records)
            self.txn.commit_transaction(30)


def mirror_once(
    src_bootstrap: str,
    dst_bootstrap: str,
    topics: list[str],
    partition_filter: Callable[[str, int], bool] = lambda t, p: True,
    tamper: Callable[[str, int, SourceRecord], SourceRecord] | None = None,
) -> dict[tuple[str, int], int]:
    """Copy every partition from the destination's LEO up to the source's last stable offset.

    Returns the number of offsets copied per partition. Open transactions on the source are
    not copied (they would be beyond the LSO): the destination lags by them, as a real
    mirror that reads committed data would. ``tamper(topic, partition, record)`` lets the
    demo write a record differently at the same offset (a corrupting mirror).
    """
    src_admin = AdminClient(client_conf(src_bootstrap))
    dst_admin = AdminClient(client_conf(dst_bootstrap))
    copied: dict[tuple[str, int], int] = {}
    for topic in topics:
        n = len(src_admin.list_topics(topic, timeout=30).topics[topic].partitions)
        tps = [TopicPartition(topic, p) for p in range(n) if partition_filter(topic, p)]
        if not tps:
            continue
        src_lso = offsets_by_tp(src_admin, tps, OffsetSpec.latest(), IsolationLevel.READ_COMMITTED)
        dst_leo = offsets_by_tp(dst_admin, tps, OffsetSpec.latest())
        for tp in tps:
            start, end = dst_leo[(topic, tp.partition)], src_lso[(topic, tp.partition)]
            if start >= end:
                copied[(topic, tp.partition)] = 0
                continue
            records = source_records(src_bootstrap, topic, tp.partition, start, end)
            if tamper is not None:
                records = [tamper(topic, tp.partition, r) for r in records]
            writer = PartitionWriter(dst_bootstrap, topic, tp.partition)
            for seg in split_segments(records, start, end):
                writer.write(seg)
            # Transaction markers are appended asynchronously after commit/abort returns.
            got = _wait_offset(dst_admin, tp, end)
            if got != end:
                raise SandboxError(
                    f"mirror emulator: {topic}-{tp.partition} ended at offset {got} on the destination, "
                    f"expected {end} (interleaved transactional producers are not supported)"
                )
            copied[(topic, tp.partition)] = end - start
    return copied


def _wait_offset(admin: AdminClient, tp: TopicPartition, end: int, timeout: float = 30.0) -> int:
    deadline = time.monotonic() + timeout
    while True:
        got = offsets_by_tp(admin, [tp], OffsetSpec.latest())[(tp.topic, tp.partition)]
        if got >= end or time.monotonic() > deadline:
            return got
        time.sleep(0.1)


def wait_transactions_settled(bootstrap: str, topics: list[str], timeout: float = 30.0) -> None:
    """Wait until LSO == LEO everywhere: the markers of finished transactions are written."""
    admin = AdminClient(client_conf(bootstrap))
    md = admin.list_topics(timeout=30)
    tps = [TopicPartition(t, p) for t in topics for p in md.topics[t].partitions]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lso = offsets_by_tp(admin, tps, OffsetSpec.latest(), IsolationLevel.READ_COMMITTED)
        leo = offsets_by_tp(admin, tps, OffsetSpec.latest())
        if lso == leo:
            return
        time.sleep(0.1)
    raise SandboxError(f"transactions on {bootstrap} did not settle within {timeout:.0f}s")


def sync_group_offsets(
    src_bootstrap: str,
    dst_bootstrap: str,
    groups: list[str],
    adjust: Callable[[str, str, int, int], int] | None = None,
) -> int:
    """Set each inactive destination group to clamp(source committed) (the syncer's promise).

    ``adjust(group, topic, partition, clamped)`` lets the demo inject a faulty value.
    Groups with members on the destination are left alone. Returns offsets written.
    """
    src_admin = AdminClient(client_conf(src_bootstrap))
    dst_admin = AdminClient(client_conf(dst_bootstrap))
    return sum(_sync_group(src_admin, dst_admin, gid, adjust) for gid in groups)


def _sync_group(
    src_admin: AdminClient,
    dst_admin: AdminClient,
    gid: str,
    adjust: Callable[[str, str, int, int], int] | None,
) -> int:
    desc = retry_group_call(
        f"describing group {gid}",
        lambda: dst_admin.describe_consumer_groups([gid], request_timeout=30)[gid].result(timeout=30),
    )
    if desc.members:
        log.info("group %s is active on the destination: not synced", gid)
        return 0
    res = retry_group_call(
        f"reading offsets of group {gid}",
        lambda: src_admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(gid)])[gid].result(
            timeout=30
        ),
    )
    committed = [tp for tp in res.topic_partitions or [] if tp.offset is not None and tp.offset >= 0]
    if not committed:
        return 0
    tps = [TopicPartition(tp.topic, tp.partition) for tp in committed]
    start = offsets_by_tp(dst_admin, tps, OffsetSpec.earliest())
    end = offsets_by_tp(dst_admin, tps, OffsetSpec.latest())
    targets = []
    for tp in committed:
        key = (tp.topic, tp.partition)
        clamped = max(start[key], min(int(tp.offset), end[key]))
        value = adjust(gid, tp.topic, tp.partition, clamped) if adjust else clamped
        targets.append(TopicPartition(tp.topic, tp.partition, value))
    retry_group_call(
        f"syncing group {gid}",
        lambda: dst_admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(gid, targets)])[
            gid
        ].result(timeout=30),
    )
    return len(targets)


def offsets_by_tp(
    admin: AdminClient,
    tps: list[TopicPartition],
    spec: OffsetSpec,
    level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
) -> dict[tuple[str, int], int]:
    futures = admin.list_offsets({tp: spec for tp in tps}, isolation_level=level, request_timeout=30)
    return {(tp.topic, tp.partition): int(f.result(timeout=30).offset) for tp, f in futures.items()}
