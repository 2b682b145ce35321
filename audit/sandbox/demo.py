"""``mirror-audit demo``: the nightly audit end to end on the sandbox's real brokers.

Source traffic (keys, headers, committed and aborted transactions) is mirrored by the
offset-preserving emulator, groups are synced with the clamp, destination leader epochs
are bumped ahead of the source's by real leader moves, then the nightly audit runs.
Without ``--healthy`` six faults are injected on the real brokers first:

- payments-0: the source leader moves (a preferred election), so SLE rises above DLE (CM-EPOCH-1);
- billing: its destination offset is set beyond the destination LEO (CM-GROUP-2, CM-GROUP-1);
- analytics: its destination offset is left stale, behind the clamp (CM-GROUP-1 warning);
- orders-1: a transaction is left open on the source (CM-TXN-1 warning);
- audit-log: the destination has one partition fewer (CM-TOPIC-1);
- orders-2, offset 42: the mirror writes that record with another value (CM-DATA-1, found
  by the record-level verification and narrowed to the offset).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from audit.config import AuditConfig, ClusterConfig, OutputConfig, RecordsConfig, SparkConfig
from audit.pipeline import RunOutcome, nightly
from audit.sandbox.cluster import default_workdir
from audit.sandbox.demo_sandbox import demo_sandbox
from audit.sandbox.injected import InjectedFaults
from audit.sandbox.leaders import move_leaders
from audit.sandbox.mirror import SourceRecord, mirror_once, sync_group_offsets, wait_transactions_settled
from audit.sandbox.share_groups import share_groups_supported, start_share_consumer, sync_share_group_offsets
from audit.sandbox.state import SandboxState
from audit.sandbox.traffic import Record, client_conf, commit_offsets, produce, require_fresh_demo
from audit.validate.invariants import named

log = logging.getLogger(__name__)

TOPICS = {"orders": 3, "payments": 1, "audit-log": 3}
GROUPS = ("billing", "analytics", "shipping")
# A share group (KIP-932): real share consumers read payments; KIP-1279 syncs its start
# offsets with the same clamp as the consumer groups'.
# Two sessions acknowledge 20 records, then 10: the broker moves the start offset past the
# first session's at the second's fetch, so the group's start offset shows its progress.
SHARE_GROUP = ("notifications", "payments", (20, 10))  # group, topic, records acknowledged per session
EPOCH_BUMPS = 3  # the destination leads the source's leader epochs by this much
CORRUPTED = ("orders", 2, 42)  # the faulty demo's mirror writes this record differently
# What the faults above make the audit say; CM-EPOCH-2 warns as a consequence of the epoch
# fault (DLE below SLE is also short of headroom), CM-OFFSET-1 and -2 as a consequence of
# the partition missing from the destination (they cannot check it: unchecked, never passed).
INJECTED = InjectedFaults(
    fail=frozenset({named.CM_TOPIC_1, named.CM_EPOCH_1, named.CM_GROUP_1, named.CM_GROUP_2, named.CM_DATA_1}),
    warn=frozenset({named.CM_TXN_1, named.CM_EPOCH_2, named.CM_OFFSET_1, named.CM_OFFSET_2}),
)


def _create(bootstrap: str, topic: str, assignment: list[list[int]]) -> None:
    admin = AdminClient(client_conf(bootstrap))
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment)]
    )
    futures[topic].result(timeout=60)


def _traffic(src: str) -> None:
    for p in range(TOPICS["orders"]):
        produce(
            src,
            "orders",
            [
                Record(
                    f"order-{p}-{i}".encode(),
                    f'{{"amount": {i}}}'.encode(),
                    (("trace-id", f"{p}-{i}".encode()),),
                )
                for i in range(200)
            ],
            partition=p,
        )
    produce(
        src, "payments", [Record(f"pay-{i}".encode(), f"{i * 10}".encode()) for i in range(50)], partition=0
    )
    for p in range(TOPICS["audit-log"]):
        produce(src, "audit-log", [Record(None, f"event {i}".encode()) for i in range(30)], partition=p)
    txn = Producer(client_conf(src, **{"transactional.id": "demo-orders-writer"}))
    txn.init_transactions(30)
    for outcome in ("commit", "abort", "commit"):
        txn.begin_transaction()
        for i in range(5):
            txn.produce("orders", f"txn-{outcome}-{i}".encode(), b"k", partition=0)
        if outcome == "commit":
            txn.commit_transaction(30)
        else:
            txn.flush(30)  # abort purges unsent records: send them first so the abort is on the log
            txn.abort_transaction(30)


def _commit_groups(src: str) -> None:
    commit_offsets(src, "billing", {("orders", p): 150 for p in range(3)})
    commit_offsets(src, "analytics", {("orders", p): 180 for p in range(3)})
    commit_offsets(src, "shipping", {("payments", 0): 40})


def demo_config(state: SandboxState, out_root: Path) -> AuditConfig:
    return AuditConfig(
        source=ClusterConfig(state.cluster("source").bootstrap, timeout_seconds=20),
        destination=ClusterConfig(state.cluster("destination").bootstrap, timeout_seconds=20),
        # Record-level verification of everything both clusters hold, in chunks of 50
        # offsets so the report's coverage map has something to show.
        records=RecordsConfig(enabled=True, chunk_records=50, split_records=1000, incremental=False),
        spark=SparkConfig(master="local[2]", conf={"spark.sql.shuffle.partitions": "4"}),
        output=OutputConfig(root=str(out_root)),
    )


def _corrupt(topic: str, partition: int, record: SourceRecord) -> SourceRecord:
    if (topic, partition, record.offset) == CORRUPTED:
        return replace(record, value=b'{"amount": 9999}')
    return record


@contextlib.contextmanager
def prepared(healthy: bool, workdir: Path | None = None, keep: bool = False) -> Iterator[SandboxState]:
    """The demo's sandbox with its traffic mirrored and (unless ``healthy``) its faults
    injected, for the length of the block: a sandbox of its own, stopped after it, or the
    one running in ``workdir``, left running without the demo's topics and groups
    (``audit.sandbox.demo_sandbox``); ``keep`` leaves either as it is."""
    workdir = workdir or default_workdir()
    with demo_sandbox(workdir, 2, keep, "demo") as state:
        open_txn: Producer | None = None
        try:
            src, dst = state.cluster("source").bootstrap, state.cluster("destination").bootstrap
            require_fresh_demo(src, TOPICS, workdir)
            # Source leaders on node 1, except payments (node 2) whose leader a fault moves.
            _create(src, "orders", [[1, 2]] * TOPICS["orders"])
            _create(src, "payments", [[2, 1]])
            _create(src, "audit-log", [[1, 2]] * TOPICS["audit-log"])
            # Destination leaders moved to raise DLE ahead of SLE (the mirror's epoch bumps); the
            # faulty demo leaves payments' destination leader where it is.
            _create(dst, "orders", [[2, 1]] * TOPICS["orders"])
            _create(dst, "payments", [[2, 1]] if healthy else [[1, 2]])
            _create(dst, "audit-log", [[2, 1]] * (TOPICS["audit-log"] - (0 if healthy else 1)))
            bumped = [TopicPartition("orders", p) for p in range(3)]
            bumped += [
                TopicPartition("audit-log", p) for p in range(TOPICS["audit-log"] - (0 if healthy else 1))
            ]
            if healthy:
                bumped.append(TopicPartition("payments", 0))
            move_leaders(dst, bumped, EPOCH_BUMPS)

            _traffic(src)
            _commit_groups(src)
            wait_transactions_settled(src, list(TOPICS))
            n_dst_audit = TOPICS["audit-log"] - (0 if healthy else 1)
            copied = mirror_once(
                src,
                dst,
                list(TOPICS),
                lambda t, p: t != "audit-log" or p < n_dst_audit,
                tamper=None if healthy else _corrupt,
            )
            log.info("mirror emulator copied %d offsets", sum(copied.values()))

            def faults(gid: str, topic: str, partition: int, clamped: int) -> int:
                if healthy:
                    return clamped
                if gid == "billing" and partition == 0:
                    return clamped + 250  # beyond the destination LEO
                if gid == "analytics" and partition == 0:
                    return clamped - 60  # a stale sync
                return clamped

            sync_group_offsets(src, dst, list(GROUPS), faults)
            if share_groups_supported(src):
                share_group, share_topic, sessions = SHARE_GROUP
                for acknowledged in sessions:
                    start_share_consumer(src, share_group, share_topic, acknowledge=acknowledged).close()
                sync_share_group_offsets(src, dst, [share_group])
            else:
                log.info("Kafka %s has no share groups: the demo makes none", state.kafka_version)
            if not healthy:
                move_leaders(src, [TopicPartition("payments", 0)])
                open_txn = Producer(client_conf(src, **{"transactional.id": "demo-left-open"}))
                open_txn.init_transactions(30)
                open_txn.begin_transaction()
                for i in range(3):
                    open_txn.produce("orders", f"pending-{i}".encode(), partition=1)
                open_txn.flush(30)
            yield state
        finally:
            if open_txn is not None:
                try:
                    open_txn.abort_transaction(30)
                except Exception:  # the sandbox is going away or being cleared anyway
                    log.debug("aborting the demo's open transaction failed", exc_info=True)


def run_demo(
    healthy: bool,
    out: Path | None = None,
    keep: bool = False,
    workdir: Path | None = None,
    output_root: Path = Path("reports"),
) -> RunOutcome:
    with prepared(healthy, workdir, keep) as state:
        return nightly(demo_config(state, output_root), out)
