"""The invariants of MirrorMaker 2 (mode mm2): offset syncs, checkpoints and translated
group offsets, and the cluster-mirroring invariants that still mean something when offsets
are translated."""

from __future__ import annotations

import dataclasses

from audit.validate.invariants import cluster_mirroring as cm
from audit.validate.invariants.declaration import Invariant

SYNC_1 = Invariant(
    "MM2-SYNC-1",
    statement="offset syncs are monotonic per partition",
    needs="mm2_offset_syncs",
    remediation=(
        "MirrorMaker 2's offset syncs went backwards: the source topic was re-created or truncated, or two "
        "MM2 instances write the same offset-syncs topic. Check for a second MM2 cluster with the same "
        "source alias; restart MM2's MirrorSourceConnector."
    ),
)


SKIP_1 = Invariant(
    "MM2-SKIP-1",
    statement=(
        "every source offset MirrorMaker 2 passed over between two offset syncs is a transaction marker "
        "(or, read committed, an aborted record) or compacted away: none was lost"
    ),
    needs="mm2_offset_syncs",
    remediation=(
        "MirrorMaker 2 passed over source records without copying them (the example shows the range and "
        "when): its position fell below the source's log start (retention deleted records it had not copied "
        "while it was stopped or behind, and its consumer reset to the earliest offset), or its committed "
        "position was moved past them. Where the source still holds them (the nightly's MM2-DATA-1 names "
        "the first), re-mirror the partition from there; where it does not, they are lost: restore them "
        "from elsewhere if they matter. Keep MirrorMaker 2's lag well inside the source's retention."
    ),
)


SKIP_2 = Invariant(
    "MM2-SKIP-2",
    statement=(
        "the source topic is the one the mirror has been copying: its id is the one the newest earlier run "
        "saw, and no offset sync names an offset past its end"
    ),
    needs="mm2_offset_syncs",
    remediation=(
        "The source topic has another id than the last run saw (both shown), or an offset sync names an "
        "upstream offset the source partition never reached: the source topic was deleted and recreated "
        "(or truncated) under the mirror, whose replica now mixes the old "
        "topic's copies with the new one's. Stop MirrorMaker 2 for the topic, delete the replica and the "
        "topic's offset syncs (or rename the new topic), and mirror it again from the start."
    ),
)


POS_1 = Invariant(
    "MM2-POS-1",
    statement=(
        "MirrorMaker 2's committed source position lies within what the source holds: not below its log "
        "start (loss in progress), not past its end (the topic recreated under the mirror), and, where it "
        "is behind, more than a margin above the log start"
    ),
    needs="mm2_positions (Kafka Connect's offsets topic: mirror.mm2.connect_offsets_topic)",
    remediation=(
        "Below the log start: retention deleted records MirrorMaker 2 has not copied (it is stopped or far "
        "behind); when it reads on, its consumer resets past them and they are lost (MM2-SKIP-1 will count "
        "them). Start or scale it now, and raise the source topic's retention.ms until it has caught up. "
        "Near the log start: the same is about to happen. Past the end: the source topic was truncated or "
        "recreated under the mirror: see MM2-SKIP-2."
    ),
)


TIER_1 = Invariant(
    "MM2-TIER-1",
    statement=(
        "warn when MirrorMaker 2's next source offset is below the source's local log start: it then reads "
        "from the source's remote tier (tiered storage: slower, and through the remote storage manager's "
        "own failures)"
    ),
    needs="mm2_positions (Kafka Connect's offsets topic: mirror.mm2.connect_offsets_topic)",
    remediation=(
        "MirrorMaker 2 is further behind than the source keeps on its brokers' disks (local.retention.ms / "
        "local.retention.bytes), so its consumer fetches from the remote tier. Scale it (tasks.max), or "
        "raise the source topic's local retention until it has caught up; watch the source brokers' "
        "remote fetch errors (RemoteFetchErrorsPerSec) meanwhile."
    ),
    inputs=("src:partitions.remote_storage",),
)


CKPT_1 = Invariant(
    "MM2-CKPT-1",
    statement="checkpoints never go backwards",
    needs="mm2_checkpoints",
    remediation=(
        "A checkpoint went backwards: a group was reset on the source, or two MM2 instances emit "
        "checkpoints for it. If the reset was intended, nothing to do; else look for a second MM2 with the "
        "same aliases."
    ),
)


CKPT_2 = Invariant(
    "MM2-CKPT-2",
    statement="checkpoint downstream offsets lie in [target log start, target LEO]",
    needs="mm2_checkpoints",
    remediation=(
        "A checkpoint translates to an offset outside the target's retained range: the target topic's "
        "retention is shorter than the group's lag, or the target was truncated. Raise the target topic's "
        "retention, or reset the group on the target within the range."
    ),
    inputs=("dst:partitions",),
)


CKPT_3 = Invariant(
    "MM2-CKPT-3",
    statement="no over-translation of checkpoints",
    needs="mm2_checkpoints",
    remediation=(
        "A checkpoint translates past what the offset syncs allow (over-translation): consumers would skip "
        "records. Upgrade MirrorMaker 2 (KAFKA-12468 and KAFKA-15906 changed the translation) and restart "
        "its MirrorCheckpointConnector."
    ),
    inputs=("src:mm2_offset_syncs",),
)


CKPT_4 = Invariant(
    "MM2-CKPT-4",
    statement="every in-scope source group has a fresh checkpoint",
    needs="mm2_checkpoints",
    remediation=(
        "A group has no recent checkpoint: it is outside MM2's groups filter, or MirrorCheckpointConnector "
        "is not running or lags (emit.checkpoints.interval.seconds). Add the group to `groups`, and check "
        "the checkpoint connector's status."
    ),
    inputs=("dst:mm2_checkpoints",),
)


GROUP_1 = Invariant(
    "MM2-GROUP-1",
    statement="target committed == checkpoint downstream for groups inactive on the target",
    needs="mm2_checkpoints",
    remediation=(
        "The target group's committed offset differs from its checkpoint: sync.group.offsets.enabled is "
        "off, or the group is active on the target. Enable sync.group.offsets.enabled, or reset the group "
        "on the target to the checkpoint's downstream offset (`kafka-consumer-groups --reset-offsets "
        "--to-offset O --execute`)."
    ),
    inputs=("dst:group_offsets",),
)


READY_1 = Invariant(
    "MM2-READY-1",
    statement="failover preconditions hold",
    needs="mm2_checkpoints",
    remediation=(
        "A failover now would lose or reprocess records: replication is behind, the source still takes "
        "writes, or groups are active on the target. Stop producers, wait until the replicas catch up "
        "(`readiness --wait-drained`), stop target consumers, then check again."
    ),
    inputs=("src:mm2_offset_syncs", "dst:partitions"),
)


MM2: tuple[Invariant, ...] = (
    SYNC_1,
    SKIP_1,
    SKIP_2,
    POS_1,
    TIER_1,
    CKPT_1,
    CKPT_2,
    CKPT_3,
    CKPT_4,
    GROUP_1,
    READY_1,
)

# Record level (audit/compare/mm2_records.py): a nightly records scan of both sides.
_DATA_NEEDS = "record_digests of both sides (records scan in mode mm2)"
# A partition the scan did not say it read (on either side), its replica absent, or no
# offset sync to end the compared range: unchecked. (A digest absent where the scan read is
# no unknown: it is a record that side does not hold.)
_DATA_INPUTS = (
    "src:record_digest_ranges",
    "dst:record_digest_ranges",
    "src:mm2_offset_syncs",
    "dst:partitions",
)

DATA_1 = Invariant(
    "MM2-DATA-1",
    statement="every source record in the compared range has its copy on the replica",
    needs=_DATA_NEEDS,
    inputs=_DATA_INPUTS,
    remediation=(
        "Source records never reached the replica: MirrorMaker 2 skipped them (its committed source "
        "position moved past them: a reset, or records truncated on the source before it read them) or its "
        "producer lost them (acks below all). The first missing offset is shown: re-mirror the partition "
        "from it (a one-off copy, or MirrorSourceConnector's offsets reset to it), and check the task's "
        "log for OffsetOutOfRange resets."
    ),
    spark_only=True,
    details=("mm2_first_missing",),
)

DATA_2 = Invariant(
    "MM2-DATA-2",
    statement="every replica record in the compared range is a copy of a source record",
    needs=_DATA_NEEDS,
    inputs=_DATA_INPUTS,
    remediation=(
        "The replica holds records no source record explains: another producer writes to the replica topic, "
        "or another source topic is mirrored into it (a replication policy mapping two topics to one name). "
        "Find the writer (kafka-acls --list on the replica topic; the producer ids of its batches) and stop "
        "it; only MirrorMaker 2 should write replica topics."
    ),
    spark_only=True,
)

DATA_3 = Invariant(
    "MM2-DATA-3",
    statement="no source record is copied to the replica more than once",
    needs=_DATA_NEEDS,
    inputs=_DATA_INPUTS,
    remediation=(
        "Records were copied twice: a MirrorSourceTask restarted behind its last committed position "
        "(at-least-once delivery). Consumers of the replica must tolerate them, or run MirrorMaker 2 with "
        "exactly.once.source.support=enabled and read_committed (Connect 3.5+), and set "
        "mirror.mm2.exactly_once so that duplicates fail this check."
    ),
    spark_only=True,
)

DATA_4 = Invariant(
    "MM2-DATA-4",
    statement="copies on the replica keep the source's record order",
    needs=_DATA_NEEDS,
    inputs=_DATA_INPUTS,
    remediation=(
        "Copies on the replica are out of the source's order: more than one task or MirrorMaker 2 instance "
        "wrote the partition, or a producer retried without idempotence. Check for a second MirrorMaker 2 "
        "cluster with the same source alias, and enable idempotence on its producer."
    ),
    spark_only=True,
)

MM2_DATA: tuple[Invariant, ...] = (DATA_1, DATA_2, DATA_3, DATA_4)

# The cluster-mirroring invariants that still mean something when offsets are translated;
# in mode mm2 they run on the mm2 comparison tables (expectations/mm2_*.json): partition
# presence through the replication policy, unreplicated records per partition, and target
# group offsets within the replica's range.
CM_IN_MM2 = (cm.TOPIC_1.id, cm.LAG_1.id, cm.GROUP_2.id)


def mm2_catalogue() -> tuple[Invariant, ...]:
    """Mode mm2's invariants (metadata, then record level), then the cluster-mirroring
    ones: those of ``CM_IN_MM2`` as they are, the others skipped as not applicable."""
    reason = "assumes equal offsets on both clusters: not applicable in mode mm2"
    return (
        MM2
        + MM2_DATA
        + tuple(
            inv if inv.id in CM_IN_MM2 else dataclasses.replace(inv, not_applicable=reason)
            for inv in cm.CLUSTER_MIRRORING
        )
    )
