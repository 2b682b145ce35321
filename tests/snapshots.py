"""Hand-made snapshot pairs for unit and Spark tests: small, explicit, one fault at a time."""

from __future__ import annotations

from pathlib import Path

from audit.collect.metadata.mirror_state import MirrorPartitionRecord
from audit.snapshot import (
    GroupOffsetRecord,
    GroupRecord,
    Mm2CheckpointRecord,
    Mm2OffsetSyncRecord,
    OpenTransactionRecord,
    PartitionRecord,
    ShareGroupOffsetRecord,
    Snapshot,
    make_manifest,
    write_snapshot,
)

T0 = "2026-11-21T00:00:00.000Z"
T0_MS = 1_795_219_200_000


def part(topic: str = "orders", partition: int = 0, **kw: object) -> PartitionRecord:
    base: dict[str, object] = {
        "topic": topic,
        "partition": partition,
        "topic_id": f"id-{topic}",
        "leader": 1,
        "leader_epoch": 5,
        "log_start_offset": 0,
        "high_watermark": 100,
        "last_stable_offset": 100,
        "max_timestamp_ms": T0_MS - 1000,
        "open_txn_first_timestamp_ms": None,
        # A topic without a remote tier (tiered storage): its local log starts at its log start.
        "remote_storage": False,
        "local_retention_ms": -2,
        "local_retention_bytes": -2,
    }
    base.update(kw)
    base.setdefault("local_log_start_offset", base["log_start_offset"])
    return PartitionRecord(**base)  # type: ignore[arg-type]


def group(group_id: str, state: str = "EMPTY", members: int = 0, group_type: str = "classic") -> GroupRecord:
    return GroupRecord(group_id, group_type, state, members)


def offset(
    group_id: str, committed: int, topic: str = "orders", partition: int = 0, epoch: int | None = None
) -> GroupOffsetRecord:
    return GroupOffsetRecord(group_id, topic, partition, committed, epoch, None)


def share(group_id: str, start: int, topic: str = "orders", partition: int = 0) -> ShareGroupOffsetRecord:
    """A share group's start offset on a partition (its leader epoch and lag as a broker
    reports them: the epoch is not compared)."""
    return ShareGroupOffsetRecord(group_id, topic, partition, start, 0, None)


def write_pair(
    root: Path,
    src_parts: list[PartitionRecord],
    dst_parts: list[PartitionRecord],
    src_groups: list[GroupRecord] = (),  # type: ignore[assignment]
    dst_groups: list[GroupRecord] = (),  # type: ignore[assignment]
    src_offsets: list[GroupOffsetRecord] = (),  # type: ignore[assignment]
    dst_offsets: list[GroupOffsetRecord] = (),  # type: ignore[assignment]
    src_txns: list[OpenTransactionRecord] | None = None,
    src_syncs: list[Mm2OffsetSyncRecord] | None = None,
    dst_checkpoints: list[Mm2CheckpointRecord] | None = None,
    dst_mirror: list[MirrorPartitionRecord] | None = None,
    src_share: list[ShareGroupOffsetRecord] | None = (),  # type: ignore[assignment]
    dst_share: list[ShareGroupOffsetRecord] | None = (),  # type: ignore[assignment]
) -> tuple[Path, Path]:
    """A snapshot pair; ``src_share``/``dst_share`` are the share groups' start offsets
    (None: not read, as without a Kafka Java client)."""

    def manifest(role: str) -> dict[str, object]:
        return make_manifest(role, f"cluster-{role}", T0, T0, {}, {"bootstrap_servers": "x:9092"})  # type: ignore[arg-type]

    src = write_snapshot(
        root / "source",
        Snapshot(
            manifest("source"),
            tuple(src_parts),
            tuple(src_groups),
            tuple(src_offsets),
            None if src_txns is None else tuple(src_txns),
            mm2_offset_syncs=None if src_syncs is None else tuple(src_syncs),
            share_group_offsets=None if src_share is None else tuple(src_share),
        ),
    )
    dst = write_snapshot(
        root / "destination",
        Snapshot(
            manifest("destination"),
            tuple(dst_parts),
            tuple(dst_groups),
            tuple(dst_offsets),
            mm2_checkpoints=None if dst_checkpoints is None else tuple(dst_checkpoints),
            mirror_partitions=None if dst_mirror is None else tuple(dst_mirror),
            share_group_offsets=None if dst_share is None else tuple(dst_share),
        ),
    )
    return src, dst


def mirror(
    topic: str = "orders",
    partition: int = 0,
    state: str = "STOPPED",
    last_offset: int | None = 100,
    last_epoch: int | None = 5,
    source_offset: int | None = 100,
    error: str | None = None,
) -> MirrorPartitionRecord:
    """A partition of a mirror's state, as KIP-1279's DescribeClusterMirrors reports it."""
    return MirrorPartitionRecord(
        "a-to-b", topic, partition, state, source_offset, None, last_epoch, last_offset, error
    )


def write_markers(snapshot: Path, markers: list[tuple[str, int, int, int]]) -> None:
    """A markers table for a snapshot: (topic, partition, offset, control type) per control
    batch, as a segment scan or a fetch writes it (type 0 ABORT, 1 COMMIT, 7 KIP-1279's
    pid-reset record, which no released broker writes)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from audit.schemas import arrow_schema

    names = {0: "ABORT", 1: "COMMIT", 7: "PID_RESET"}
    rows = [
        {
            "topic": t,
            "partition": p,
            "offset": o,
            "marker": names.get(ct, f"UNKNOWN({ct})"),
            "control_type": ct,
            "control_version": 0,
            "coordinator_epoch": 0,
            "producer_id": 7,
            "producer_epoch": 0,
            "partition_leader_epoch": 6,
            "timestamp_ms": T0_MS,
            "file": None,
            "position": None,
        }
        for t, p, o, ct in markers
    ]
    schema = arrow_schema("markers")
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), snapshot / "markers.parquet")


def faulty_pair(root: Path) -> tuple[Path, Path]:
    """One fault per topic or group, each owned by one invariant (see test_audit_invariants);
    audit it with ``scope.groups.exclude: ['private']``."""
    src = [
        part("orders", leader_epoch=5, high_watermark=100),
        part("lagging", high_watermark=50_000),
        part("epoch", leader_epoch=9),
        part("headroom", leader_epoch=5),
        part("ahead", high_watermark=100),
        part("expired", log_start_offset=500, high_watermark=1000),
        part("missing"),
        part("txn", last_stable_offset=90, open_txn_first_timestamp_ms=T0_MS - 2_000_000),
        part("txn-recent", last_stable_offset=95, open_txn_first_timestamp_ms=T0_MS - 10_000),
        part("app-store-changelog"),
    ]
    dst = [
        part("orders", leader_epoch=8, high_watermark=100),
        part("lagging", high_watermark=100, leader_epoch=8),
        part("epoch", leader_epoch=8),
        part("headroom", leader_epoch=6),
        part("ahead", high_watermark=120, leader_epoch=8),
        part("expired", log_start_offset=0, high_watermark=400, leader_epoch=8),
        part("txn", leader_epoch=8, high_watermark=100),
        part("txn-recent", leader_epoch=8),
        part("app-store-changelog", leader_epoch=8),
    ]
    groups = [group(g) for g in ("g1", "g-ahead", "g-stale", "g-clamp", "g-epoch", "private", "app")]
    return write_pair(
        root,
        src,
        dst,
        src_groups=groups,
        dst_groups=[*groups, group("g-live", "STABLE", 1)],
        src_offsets=[
            offset("g1", 80),
            offset("g-ahead", 50),
            offset("g-stale", 90),
            offset("g-clamp", 150),
            offset("g-epoch", 70),
            offset("private", 10),
            offset("app", 10, topic="app-store-changelog"),
            offset("g-live", 5),
        ],
        dst_offsets=[
            offset("g1", 80, epoch=8),
            offset("g-ahead", 70),
            offset("g-stale", 60),
            offset("g-clamp", 100),
            offset("g-epoch", 70, epoch=9),
            offset("private", 10),
            offset("app", 10, topic="app-store-changelog"),
            offset("g-live", 130),
        ],
    )


def before_stop_pair(root: Path) -> tuple[Path, Path]:
    """The pair a readiness run sees before a stop: orders-0 10 records behind (100 on the
    source, 90 mirrored), g1 committed at 95 on the source and synced to 90."""
    return write_pair(
        root,
        [part("orders", 0, high_watermark=100)],
        [part("orders", 0, high_watermark=90, leader_epoch=8)],
        src_groups=[group("g1")],
        dst_groups=[group("g1")],
        src_offsets=[offset("g1", 95)],
        dst_offsets=[offset("g1", 90)],
    )


def after_stop_without_last_mirrored_offset(root: Path) -> Path:
    """The destination after the stop, its mirror state as the CLI's --describe --json rows
    give it: no LastMirrorOffset."""
    _, dst = write_pair(
        root,
        [],
        [part("orders", 0, high_watermark=91, last_stable_offset=91, leader_epoch=9)],
        dst_groups=[group("g1")],
        dst_offsets=[offset("g1", 90)],
        dst_mirror=[mirror("orders", 0, last_offset=None, last_epoch=8, source_offset=104)],
    )
    return dst
