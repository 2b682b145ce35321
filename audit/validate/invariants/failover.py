"""The failover's invariants: the stop's own state (also the last invariant of an audit),
what failover verify checks after the stop against the readiness check before it, and
what failback readiness checks before mirroring back."""

from __future__ import annotations

from audit.validate.invariants.declaration import Invariant

FAILOVER_1 = Invariant(
    "CM-FAILOVER-1",
    statement=(
        "after a stop: destination LEO equals the last mirrored offset plus the control records the stop "
        "wrote, no transaction left open on the destination, DLE > SLE; no partition FAILED"
    ),
    needs="mirror_partitions (the mirror's state: mirror.state_file or snapshot --mirror-state)",
    remediation=(
        "After the mirror's stop the destination is not where it should be: records, an open transaction or "
        "a partition in state FAILED. Read the partition's error in the mirror's state, abort open "
        "destination transactions (`kafka-transactions abort`), elect leaders to raise DLE, and do not move "
        "consumers until it passes."
    ),
    details=("mirror_state",),
    inputs=(
        "dst:mirror_partitions",
        "dst:mirror_partitions.last_mirror_offset",
        "dst:mirror_partitions.last_mirror_epoch",
        "src:partitions.leader_epoch",
        "dst:partitions.leader_epoch",
        "dst:partitions",
    ),
)


FAILOVER_2 = Invariant(
    "CM-FAILOVER-2",
    statement=(
        "no partition lost more records at the stop (source LEO at the stop - last mirrored offset) than "
        "the readiness check before it predicted"
    ),
    needs="mirror_partitions with LastMirrorOffset, and the readiness run (--before)",
    remediation=(
        "The stop lost more records than the readiness check predicted: the source took writes after the "
        "check. Stop producers before the readiness check next time (`readiness --wait-drained`), and "
        "replay the lost range from the source if it is still readable."
    ),
    inputs=("dst:mirror_partitions", "dst:mirror_partitions.last_mirror_offset"),
)


FAILOVER_3 = Invariant(
    "CM-FAILOVER-3",
    statement=(
        "every synced group resumes on the destination inside [log start, LEO] and skips no record it had "
        "not processed on the source (records it reads again are counted)"
    ),
    needs="group_offsets of both sides",
    remediation=(
        "A group resumes outside the destination's retained range or skips records: reset it before its "
        "consumers start (`kafka-consumer-groups --reset-offsets --group G --topic T:P --to-offset O "
        "--execute`, O = the source committed offset clamped to [log start, LEO])."
    ),
    inputs=(
        "dst:group_offsets",
        "dst:mirror_partitions",
        "dst:mirror_partitions.last_mirror_offset",
        "dst:partitions",
    ),
)


FAILBACK_1 = Invariant(
    "CM-FAILBACK-1",
    statement=(
        "mirroring back truncates at most max_failback_truncation_records records of any partition of the "
        "old source (records past the last mirrored offset)"
    ),
    needs="mirror_partitions with LastMirrorOffset (the state recorded at the stop)",
    remediation=(
        "Mirroring back would truncate records the old source has past the last mirrored offset. Copy them "
        "to the new source first (replay them from the old source), or raise "
        "max_failback_truncation_records once the loss is accepted."
    ),
    inputs=(
        "dst:mirror_partitions",
        "dst:mirror_partitions.last_mirror_offset",
        "src:partitions",
    ),
)


FAILBACK_2 = Invariant(
    "CM-FAILBACK-2",
    statement=(
        "no group committed on the old source past the offset mirroring back truncates to (warn: its "
        "position would point into records that are replaced)"
    ),
    needs="mirror_partitions with LastMirrorOffset, and group offsets",
    remediation=(
        "A group on the old source committed past the offset mirroring back truncates to: its consumers "
        "would point into replaced records. Reset it on the old source to the last mirrored offset before "
        "failing back (`kafka-consumer-groups --reset-offsets`)."
    ),
    inputs=("dst:mirror_partitions", "dst:mirror_partitions.last_mirror_offset"),
)


FAILBACK_3 = Invariant(
    "CM-FAILBACK-3",
    statement=(
        "no transaction open on the old source: its coordinator could write a second marker after the "
        "failover's ABORT"
    ),
    needs="partitions",
    remediation=(
        "A transaction is open on the old source; its coordinator could write a second marker after the "
        "failover's abort. Abort it on the old source (`kafka-transactions abort`) before failing back."
    ),
    inputs=("src:partitions",),
)


# failover verify: the destination after the stop against the readiness check before it.
FAILOVER_VERIFY: tuple[Invariant, ...] = (FAILOVER_1, FAILOVER_2, FAILOVER_3)

# failback readiness: mirroring back truncates the old source to the last mirrored offset.
FAILBACK: tuple[Invariant, ...] = (FAILBACK_1, FAILBACK_2, FAILBACK_3)
