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
from typing import Any

from confluent_kafka import (
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


# A group's commits: offset, leader epoch (None: none), metadata, by (topic, partition).
Commits = dict[tuple[str, int], tuple[int, int | None, str | None]]
SYNCER_ID = "mirror-audit-sandbox-syncer"


def sync_group_offsets(
    src_bootstrap: str,
    dst_bootstrap: str,
    groups: list[str],
    adjust: Callable[[str, str, int, int], int] | None = None,
) -> int:
    """Set each inactive destination group to clamp(source committed) as the KIP-1279
    prototype's syncer writes it (showuon/kafka, MirrorSourceSyncer): an offset the clamp
    left alone carries the source commit's leader epoch and metadata; one it moved to the
    destination's log start or end carries the destination's epoch there (ListOffsets
    earliest / latest, the prototype's fallback to its log's epoch cache) and no metadata,
    and a partition without that epoch is not synced.

    ``adjust(group, topic, partition, clamped)`` lets the demo inject a faulty value.
    Groups with members on the destination are left alone. Returns offsets written.
    """
    from kafka.admin import KafkaAdminClient

    dst_admin = AdminClient(client_conf(dst_bootstrap))
    # One kafka-python client a side for the whole call (the continuous mirror syncs every
    # cycle): it reads and writes commits byte for byte, as the prototype's Java Admin does.
    src_commits = KafkaAdminClient(bootstrap_servers=src_bootstrap, client_id=SYNCER_ID)
    try:
        dst_commits = KafkaAdminClient(bootstrap_servers=dst_bootstrap, client_id=SYNCER_ID)
        try:
            return sum(_sync_group(src_commits, dst_commits, dst_admin, gid, adjust) for gid in groups)
        finally:
            dst_commits.close()
    finally:
        src_commits.close()


def _sync_group(
    src_commits: Any,
    dst_commits: Any,
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
    committed = retry_group_call(f"reading offsets of group {gid}", lambda: _source_commits(src_commits, gid))
    if not committed:
        return 0
    tps = [TopicPartition(topic, partition) for topic, partition in committed]
    start = ends_by_tp(dst_admin, tps, OffsetSpec.earliest())
    end = ends_by_tp(dst_admin, tps, OffsetSpec.latest())
    targets = {}
    for key, (offset, src_epoch, src_metadata) in sorted(committed.items()):
        (low, low_epoch), (high, high_epoch) = start[key], end[key]
        clamped = max(low, min(offset, high))
        epoch, metadata = src_epoch, src_metadata
        if clamped != offset:  # moved by the clamp: the destination's epoch there, no metadata
            epoch, metadata = (low_epoch if clamped == low else high_epoch), ""
            if epoch is None:
                continue
        targets[key] = (adjust(gid, key[0], key[1], clamped) if adjust else clamped, epoch, metadata)
    retry_group_call(f"syncing group {gid}", lambda: _write_commits(dst_commits, gid, targets))
    return len(targets)


def _write_commits(admin: Any, gid: str, commits: Commits) -> None:
    """Commit through kafka-python's admin ``admin``, which writes metadata byte for byte
    (confluent-kafka adds a NUL and refuses one inside)."""
    from kafka.errors import NoError
    from kafka.structs import OffsetAndMetadata
    from kafka.structs import TopicPartition as KafkaPartition

    errors = admin.alter_group_offsets(
        gid, {KafkaPartition(t, p): OffsetAndMetadata(o, m, e) for (t, p), (o, e, m) in commits.items()}
    )
    failed = {tp: err for tp, err in errors.items() if err is not NoError}
    if failed:
        raise SandboxError(f"syncing group {gid}: {failed}")


def _source_commits(admin: Any, gid: str) -> Commits:
    """A group's commits on the source: offset, leader epoch (None: none) and metadata as
    the committer wrote it, read through kafka-python's admin ``admin`` (confluent-kafka
    runs past the end of metadata a Java client committed)."""
    fetched = admin.list_group_offsets([gid]).get(gid) or {}
    return {
        (tp.topic, tp.partition): (
            int(om.offset),
            om.leader_epoch if om.leader_epoch is not None and om.leader_epoch >= 0 else None,
            om.metadata,
        )
        for tp, om in fetched.items()
        if om.offset is not None and om.offset >= 0
    }


def ends_by_tp(
    admin: AdminClient,
    tps: list[TopicPartition],
    spec: OffsetSpec,
    level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
) -> dict[tuple[str, int], tuple[int, int | None]]:
    """Each partition's offset for ``spec`` and the leader epoch ListOffsets gives with it
    (None: none)."""
    futures = admin.list_offsets({tp: spec for tp in tps}, isolation_level=level, request_timeout=30)
    out = {}
    for tp, future in futures.items():
        info = future.result(timeout=30)
        epoch = info.leader_epoch
        out[(tp.topic, tp.partition)] = (
            int(info.offset),
            epoch if epoch is not None and epoch >= 0 else None,
        )
    return out


def offsets_by_tp(
    admin: AdminClient,
    tps: list[TopicPartition],
    spec: OffsetSpec,
    level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
) -> dict[tuple[str, int], int]:
    return {key: offset for key, (offset, _) in ends_by_tp(admin, tps, spec, level).items()}
