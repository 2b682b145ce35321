"""The offset-preserving emulator as a process that mirrors until it is stopped, and stops
the way a KIP-1279 mirror stops: for the demo's and the tests' failovers only.

``mirror_once`` (``mirror.py``) copies what is committed, once. A KIP-1279 mirror instead
fetches continuously and READ_UNCOMMITTED, so a transaction open on the source is open on
the destination too, and its stop (``handleStopping`` in the prototype) records where the
partition stopped, bumps the leader epoch, aborts the transactions still in flight and
writes a pid-reset control record. This process does what a released broker allows of
that: each cycle copies every partition from the destination's LEO to the source's high
watermark with offsets kept (a transaction still open on the source is written inside a
transaction the emulator keeps open on the destination, and closed the way the source
closes it), syncs the inactive groups' offsets with the clamp, and writes its per-partition
state in the DescribeClusterMirrors shape (``mirror_state.describe_response``), so the
audit reads it through the same import as a real mirror's. On SIGTERM it stops: last
mirrored offset (the destination's LEO) and leader epoch recorded, open transactions
aborted with real ABORT markers through the destination's transaction coordinator, state
STOPPED. It cannot write the pid-reset record (control type 7): no released broker takes
one from a client. Topics listed in the control file are PAUSED: not copied until removed.

It writes only to the sandbox's destination cluster, as ``mirror.py`` does, and holds the
same limit: one transactional producer at a time per partition on the source.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import IsolationLevel, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from audit import regex
from audit.collect.metadata.mirror_state import MirrorPartitionRecord, describe_response
from audit.fsutil import atomic_write_json
from audit.sandbox.mirror import (
    PartitionWriter,
    offsets_by_tp,
    source_records,
    split_segments,
    sync_group_offsets,
)
from audit.sandbox.traffic import client_conf, scan_messages

log = logging.getLogger("audit.sandbox.mirror_process")

MIRROR_NAME = "sandbox-mirror"
# Seconds between two syncs of share groups (each starts a JVM for the Java Admin).
SHARE_SYNC_SECONDS = 10.0
# The destination keeps an open transaction as long as the source does (up to the
# brokers' transaction.max.timeout.ms, 15 minutes by default).
TXN_TIMEOUT_MS = 900_000


@dataclass
class _Partition:
    topic: str
    partition: int
    writer: PartitionWriter | None = None
    open_from: int | None = None  # source offset where the destination's open transaction began
    source_offset: int | None = None
    destination_offset: int | None = None
    state: str = "MIRRORING"
    last_mirror_offset: int | None = None
    last_mirror_epoch: int | None = None

    def record(self) -> MirrorPartitionRecord:
        return MirrorPartitionRecord(
            MIRROR_NAME,
            self.topic,
            self.partition,
            self.state,
            self.source_offset,
            self.destination_offset,
            self.last_mirror_epoch,
            self.last_mirror_offset,
            None,
        )


class ContinuousMirror:
    """Copies every partition of the topics matching ``topics`` (a regex, RE2) from the
    source to the same partition of the same topic on the destination, cycle after cycle."""

    def __init__(
        self, src: str, dst: str, topics: str, groups: str | None, state_path: Path, control_path: Path
    ) -> None:
        self.src, self.dst = src, dst
        self.topics, self.groups = topics, groups
        self.state_path, self.control_path = state_path, control_path
        self.src_admin = AdminClient(client_conf(src))
        self.dst_admin = AdminClient(client_conf(dst))
        self.parts: dict[tuple[str, int], _Partition] = {}
        self._share_sync_due = 0.0

    # ------------------------------------------------------------------ a cycle

    def cycle(self) -> None:
        self._discover()
        paused = self._paused_topics()
        tps = [TopicPartition(t, p) for t, p in self.parts]
        if not tps:
            self._write_state()
            return
        src_hw = offsets_by_tp(self.src_admin, tps, OffsetSpec.latest())
        src_lso = offsets_by_tp(self.src_admin, tps, OffsetSpec.latest(), IsolationLevel.READ_COMMITTED)
        dst_leo = offsets_by_tp(self.dst_admin, tps, OffsetSpec.latest())
        for key, part in sorted(self.parts.items()):
            part.source_offset = src_hw[key]
            part.state = "PAUSED" if part.topic in paused else "MIRRORING"
            if part.state == "MIRRORING":
                self._copy(part, dst_leo[key], src_lso[key], src_hw[key])
        # Where the destination ends after the copies: one request for every partition.
        for key, end in offsets_by_tp(self.dst_admin, tps, OffsetSpec.latest()).items():
            self.parts[key].destination_offset = end
        if self.groups:
            self._sync_groups()
        self._write_state()

    def _discover(self) -> None:
        """The partitions of matching topics that exist on both clusters."""
        src = self.src_admin.list_topics(timeout=30).topics
        dst = self.dst_admin.list_topics(timeout=30).topics
        for topic, md in src.items():
            if topic.startswith("__") or not regex.full_match(self.topics, topic) or topic not in dst:
                continue
            for p in md.partitions:
                if p in dst[topic].partitions and (topic, p) not in self.parts:
                    self.parts[(topic, p)] = _Partition(topic, p)

    def _paused_topics(self) -> set[str]:
        try:
            return set(json.loads(self.control_path.read_text()).get("paused_topics") or [])
        except (OSError, ValueError):
            return set()

    def _copy(self, part: _Partition, start: int, lso: int, hw: int) -> None:
        """[start, hw) of one partition, offsets kept: closed transactions replayed and closed
        the same way, the open one (from the source's LSO on) written into a transaction
        kept open here until the source closes it."""
        if start >= hw:
            return
        first = start if part.open_from is None else min(part.open_from, start)
        # Records at or past the LSO are still undecided: committed only where a committed
        # read from the open transaction's start up to the LSO holds them.
        records = source_records(self.src, part.topic, part.partition, start, hw, first, lso)
        writer = self._writer(part)
        for i, seg in enumerate(split_segments(records, start, hw)):
            if seg.marker_offset is not None:
                if i == 0 and part.open_from is not None:
                    # The source closed the transaction that is open here: the same way.
                    writer.send_in_open(seg.records)
                    committed = _committed_at(self.src, part, part.open_from, lso)
                    writer.close_open(commit=committed)
                    part.open_from = None
                else:
                    writer.write(seg)
                continue
            below = [r for r in seg.records if r.offset < lso]
            above = [r for r in seg.records if r.offset >= lso]
            writer.send_plain(below)
            if above:
                if part.open_from is None:
                    writer.begin_open()
                    part.open_from = above[0].offset
                writer.send_in_open(above)

    def _writer(self, part: _Partition) -> PartitionWriter:
        if part.writer is None:
            part.writer = PartitionWriter(self.dst, part.topic, part.partition, TXN_TIMEOUT_MS)
        return part.writer

    def _sync_groups(self) -> None:
        assert self.groups is not None
        listed = self.src_admin.list_consumer_groups().result(timeout=30)
        groups = [g.group_id for g in listed.valid if regex.full_match(self.groups, g.group_id)]
        if groups:
            sync_group_offsets(self.src, self.dst, groups)
        if time.monotonic() >= self._share_sync_due:
            self._sync_share_groups()

    def _sync_share_groups(self) -> None:
        """Share groups' start offsets, as KIP-1279's coordinator syncs them: every
        ``SHARE_SYNC_SECONDS`` (each sync starts a JVM for the Java Admin), and only where
        the source lists a matching share group (librdkafka's listing leaves them out)."""
        from audit.collect.metadata.kafka_admin import KafkaAdmin
        from audit.config import ClusterConfig
        from audit.sandbox.share_groups import sync_share_group_offsets

        self._share_sync_due = time.monotonic() + SHARE_SYNC_SECONDS
        _, share, _ = KafkaAdmin("source", ClusterConfig(self.src)).groups_by_type(())
        matching = [g.group_id for g in share if regex.full_match(self.groups or "", g.group_id)]
        if matching:
            sync_share_group_offsets(self.src, self.dst, matching)

    def _write_state(self) -> None:
        records = [p.record() for _, p in sorted(self.parts.items())]
        atomic_write_json(self.state_path, describe_response(records))

    # ------------------------------------------------------------------ the stop

    def stop(self) -> None:
        """KIP-1279's stop, as far as a released broker allows: per partition the last
        mirrored position (the destination's LEO and leader epoch) recorded, the transaction
        in flight aborted (a real ABORT marker), state STOPPED."""
        tps = [TopicPartition(t, p) for t, p in self.parts]
        if tps:
            futures = self.dst_admin.list_offsets({tp: OffsetSpec.latest() for tp in tps}, request_timeout=30)
            positions = {(tp.topic, tp.partition): f.result(timeout=30) for tp, f in futures.items()}
            src_hw = offsets_by_tp(self.src_admin, tps, OffsetSpec.latest())
        for key, part in sorted(self.parts.items()):
            info = positions[key]
            part.last_mirror_offset = int(info.offset)
            part.last_mirror_epoch = None if info.leader_epoch is None else int(info.leader_epoch)
            part.source_offset = src_hw[key]
            if part.open_from is not None and part.writer is not None:
                part.writer.close_open(commit=False)
                part.open_from = None
            part.state = "STOPPED"
        if tps:
            dst_leo = offsets_by_tp(self.dst_admin, tps, OffsetSpec.latest())
            for key, part in self.parts.items():
                part.destination_offset = dst_leo[key]
        self._write_state()
        log.info("mirror stopped: %d partitions STOPPED, state in %s", len(self.parts), self.state_path)


def _committed_at(src: str, part: _Partition, offset: int, lso: int) -> bool:
    """Whether the record at ``offset`` (the first of a transaction) was committed."""
    return any(
        m.offset() == offset
        for m in scan_messages(
            src, part.topic, part.partition, offset, min(lso, offset + 1), "read_committed"
        )
    )


# ---------------------------------------------------------------------- the process


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m audit.sandbox.mirror_process")
    parser.add_argument("--source", required=True)
    parser.add_argument("--destination", required=True)
    parser.add_argument("--topics", default=".*")
    parser.add_argument("--groups")
    parser.add_argument("--state", required=True, type=Path)
    parser.add_argument("--control", required=True, type=Path)
    parser.add_argument("--interval", type=float, default=0.5)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)-7s %(name)s: %(message)s")
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    mirror = ContinuousMirror(
        args.source, args.destination, args.topics, args.groups, args.state, args.control
    )
    while not stopping.is_set():
        try:
            mirror.cycle()
        except Exception:  # a broker moving its leaders mid-cycle: the next cycle resumes
            log.warning("mirror cycle failed; retrying", exc_info=True)
        stopping.wait(args.interval)
    mirror.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
