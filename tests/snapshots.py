"""Hand-made snapshot pairs for unit and Spark tests: small, explicit, one fault at a time."""

from __future__ import annotations

from pathlib import Path

from audit.snapshot import (
    GroupOffsetRecord,
    GroupRecord,
    OpenTransactionRecord,
    PartitionRecord,
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
    }
    base.update(kw)
    return PartitionRecord(**base)  # type: ignore[arg-type]


def group(group_id: str, state: str = "EMPTY", members: int = 0, group_type: str = "classic") -> GroupRecord:
    return GroupRecord(group_id, group_type, state, members)


def offset(
    group_id: str, committed: int, topic: str = "orders", partition: int = 0, epoch: int | None = None
) -> GroupOffsetRecord:
    return GroupOffsetRecord(group_id, topic, partition, committed, epoch, None)


def write_pair(
    root: Path,
    src_parts: list[PartitionRecord],
    dst_parts: list[PartitionRecord],
    src_groups: list[GroupRecord] = (),  # type: ignore[assignment]
    dst_groups: list[GroupRecord] = (),  # type: ignore[assignment]
    src_offsets: list[GroupOffsetRecord] = (),  # type: ignore[assignment]
    dst_offsets: list[GroupOffsetRecord] = (),  # type: ignore[assignment]
    src_txns: list[OpenTransactionRecord] | None = None,
) -> tuple[Path, Path]:
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
        ),
    )
    dst = write_snapshot(
        root / "destination",
        Snapshot(manifest("destination"), tuple(dst_parts), tuple(dst_groups), tuple(dst_offsets)),
    )
    return src, dst
