"""The invariant catalogue (DESIGN.md): stable IDs, statements and the data each needs."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class Invariant:
    id: str
    statement: str
    # What must have been collected for the invariant to be checked; shown when it is skipped.
    needs: str
    # Why it is never checked in this mode (shown as the skip reason instead of ``needs``).
    not_applicable: str | None = None
    # Its comparison tables grow with the data and are computed by the Spark engine only.
    spark_only: bool = False


# The stop's own state: the last invariant of an audit and the first of failover verify.
STOP_STATE = Invariant(
    "CM-FAILOVER-1",
    "after a stop: destination LEO equals the last mirrored offset plus the control records "
    "the stop wrote, no transaction left open on the destination, DLE > SLE; no partition FAILED",
    "mirror_partitions (the mirror's state: mirror.state_file or snapshot --mirror-state)",
)

CLUSTER_MIRRORING: tuple[Invariant, ...] = (
    Invariant(
        "CM-TOPIC-1",
        "every in-scope source topic exists on the destination with the same partition count "
        "(and the same topic ID where the mirror promises it)",
        "partitions",
    ),
    Invariant("CM-OFFSET-1", "destination LEO <= source LEO for every partition", "partitions"),
    Invariant(
        "CM-OFFSET-2",
        "destination LEO >= source log start offset (else records were deleted before they "
        "were mirrored); warn when the backlog exceeds half of what the source retains",
        "partitions",
    ),
    Invariant("CM-LAG-1", "lag within max_lag_records and time lag within max_lag_seconds", "partitions"),
    Invariant(
        "CM-EPOCH-1",
        "destination leader epoch >= source leader epoch (DLE >= SLE) for every partition",
        "partitions",
    ),
    Invariant(
        "CM-EPOCH-2", "warn when DLE - SLE < epoch_headroom (proactive bumping is lagging)", "partitions"
    ),
    Invariant(
        "CM-EPOCH-3",
        "every destination committed offset carries a leader epoch <= DLE of its partition",
        "group_offsets",
    ),
    Invariant(
        "CM-GROUP-1",
        "for in-scope groups inactive on the destination: committed ahead of "
        "clamp(source committed) fails, behind it by more than group_sync_tolerance_records warns",
        "group_offsets",
    ),
    Invariant(
        "CM-GROUP-2",
        "every destination committed offset lies in [destination log start, destination LEO]",
        "group_offsets",
    ),
    Invariant(
        "CM-GROUP-3",
        "groups active on the destination are classified, never flagged as unsynced; "
        "excluded groups are not synced",
        "groups",
    ),
    Invariant(
        "CM-TXN-1",
        "open transactions on the source: none passes, open warns, older than "
        "max_open_txn_seconds fails (hanging)",
        "partitions",
    ),
    Invariant(
        "CM-SCOPE-1",
        "warn when mirrored topics or groups belong to a stateful Kafka Streams application",
        "partitions",
    ),
    Invariant(
        "CM-DATA-1",
        "record-level range checksums equal on the common offset range; the first divergent "
        "offset is reported",
        "record_chunks of both sides (records scan)",
        spark_only=True,
    ),
    Invariant(
        "CM-DATA-2",
        "record batches in the common range are identical (base/last offset, CRC, producer "
        "id/epoch, attributes) and every scanned batch is readable",
        "batches of both sides (segments scan or fetch)",
        spark_only=True,
    ),
    Invariant(
        "CM-TXN-2",
        "transaction markers sit at the same offsets with the same type on both sides",
        "markers of both sides (segments scan or fetch) or record_chunks (records scan)",
        spark_only=True,
    ),
    Invariant(
        "CM-TXN-3",
        "every transactional batch below the last stable offset is closed by a marker, and no "
        "transaction is closed twice",
        "batches of either side (segments scan or fetch)",
        spark_only=True,
    ),
    Invariant(
        "CM-EPOCH-4",
        "destination batch and record leader epochs never exceed DLE; equal to the source's "
        "where the mirror preserves them",
        "batches (segments scan or fetch) or record_chunks (records scan) of both sides",
        spark_only=True,
    ),
    STOP_STATE,
)

# failover verify: the destination after the stop against the readiness check before it.
FAILOVER_VERIFY: tuple[Invariant, ...] = (
    STOP_STATE,
    Invariant(
        "CM-FAILOVER-2",
        "no partition lost more records at the stop (source LEO at the stop - last mirrored "
        "offset) than the readiness check before it predicted",
        "mirror_partitions with LastMirrorOffset, and the readiness run (--before)",
    ),
    Invariant(
        "CM-FAILOVER-3",
        "every synced group resumes on the destination inside [log start, LEO] and skips no "
        "record it had not processed on the source (records it reads again are counted)",
        "group_offsets of both sides",
    ),
)

# failback readiness: mirroring back truncates the old source to the last mirrored offset.
FAILBACK: tuple[Invariant, ...] = (
    Invariant(
        "CM-FAILBACK-1",
        "mirroring back truncates at most max_failback_truncation_records records of any "
        "partition of the old source (records past the last mirrored offset)",
        "mirror_partitions with LastMirrorOffset (the state recorded at the stop)",
    ),
    Invariant(
        "CM-FAILBACK-2",
        "no group committed on the old source past the offset mirroring back truncates to "
        "(warn: its position would point into records that are replaced)",
        "mirror_partitions with LastMirrorOffset, and group offsets",
    ),
    Invariant(
        "CM-FAILBACK-3",
        "no transaction open on the old source: its coordinator could write a second marker "
        "after the failover's ABORT",
        "partitions",
    ),
)

MM2: tuple[Invariant, ...] = (
    Invariant("MM2-SYNC-1", "offset syncs are monotonic per partition", "mm2_offset_syncs"),
    Invariant("MM2-CKPT-1", "checkpoints never go backwards", "mm2_checkpoints"),
    Invariant(
        "MM2-CKPT-2", "checkpoint downstream offsets lie in [target log start, target LEO]", "mm2_checkpoints"
    ),
    Invariant("MM2-CKPT-3", "no over-translation of checkpoints", "mm2_checkpoints"),
    Invariant("MM2-CKPT-4", "every in-scope source group has a fresh checkpoint", "mm2_checkpoints"),
    Invariant(
        "MM2-GROUP-1",
        "target committed == checkpoint downstream for groups inactive on the target",
        "mm2_checkpoints",
    ),
    Invariant("MM2-READY-1", "failover preconditions hold", "mm2_checkpoints"),
)


# The CM invariants that still mean something when offsets are translated; in mode mm2
# they run on the mm2 comparison tables (expectations/mm2_*.json): partition presence
# through the replication policy, unreplicated records per partition, and target group
# offsets within the replica's range.
CM_IN_MM2 = ("CM-TOPIC-1", "CM-LAG-1", "CM-GROUP-2")


def mm2_catalogue() -> tuple[Invariant, ...]:
    """Mode mm2's invariants, then the cluster-mirroring ones: those of ``CM_IN_MM2`` as
    they are, the others skipped as not applicable."""
    reason = "assumes equal offsets on both clusters: not applicable in mode mm2"
    return MM2 + tuple(
        inv if inv.id in CM_IN_MM2 else dataclasses.replace(inv, not_applicable=reason)
        for inv in CLUSTER_MIRRORING
    )


def known_ids() -> frozenset[str]:
    """Every invariant ID of every job of both modes (what ``readiness.accept_unchecked``
    may name)."""
    return frozenset(inv.id for inv in (*CLUSTER_MIRRORING, *FAILOVER_VERIFY, *FAILBACK, *MM2))
