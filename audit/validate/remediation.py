"""What an operator does about a failing invariant: the cause it usually has and the
command or setting that fixes it, per invariant ID of the catalogue (``catalogue.py``).

Kept beside the catalogue and tested to cover every ID in it, so a new invariant cannot
ship without its advice. The report shows it next to the failing invariant; summary.json
carries it for whoever acts on the JSON. Commands are Kafka's own tools as shipped
(``kafka-*.sh`` in a Kafka distribution, ``kafka-*`` in Confluent's).
"""

from __future__ import annotations

REMEDIATION: dict[str, str] = {
    "CM-TOPIC-1": (
        "Usually the topic is outside the mirror's topic filter, was created on the source after "
        "the mirror's last topic refresh, or had partitions added on one side only. Add it to the "
        "mirror's filter (or wait for its refresh interval), and make the partition counts equal: "
        "`kafka-topics --alter --topic T --partitions N` on the side that has fewer. A topic ID "
        "that differs means the destination topic was created by hand: delete it and let the "
        "mirror create it."
    ),
    "CM-OFFSET-1": (
        "The destination has more records than the source: something other than the mirror "
        "writes to the destination topic, or the source was truncated (an unclean leader "
        "election). Stop the other producer (destination topics of a mirror must be read-only: "
        "deny WRITE with an ACL), then re-mirror the partition from the source."
    ),
    "CM-OFFSET-2": (
        "The source deleted records the mirror had not copied yet: its retention is shorter than "
        "the mirror's backlog. Raise the source topic's retention (`kafka-configs --alter "
        "--entity-type topics --entity-name T --add-config retention.ms=...`) or the mirror's "
        "throughput (more mirror tasks, a higher replication quota); the records already deleted "
        "are lost on the destination."
    ),
    "CM-LAG-1": (
        "The mirror is behind: throttled (replication quotas), under-provisioned, or stopped. "
        "Check the mirror's state and errors, raise its throughput (tasks, fetch sizes, quota), "
        "or raise max_lag_records / max_lag_seconds if the lag is what the business accepts."
    ),
    "CM-EPOCH-1": (
        "A destination leader epoch below the source's lets a failover truncate records. Raise "
        "the destination epoch with a leader election on the affected partitions "
        "(`kafka-leader-election --election-type PREFERRED --topic T --partition P`, after a "
        "reassignment that makes another replica preferred if the leader is already preferred), "
        "and check that the mirror's proactive epoch bumping is enabled."
    ),
    "CM-EPOCH-2": (
        "The destination epoch is only just above the source's: one more source election and "
        "CM-EPOCH-1 fails. Bump the destination epochs ahead (`kafka-leader-election "
        "--election-type PREFERRED`), and check the mirror's epoch bumping keeps pace."
    ),
    "CM-EPOCH-3": (
        "A destination group committed offset carries a leader epoch above its partition's: the "
        "commit was made on another cluster or before a truncation. Reset the group within the "
        "partition (`kafka-consumer-groups --reset-offsets --group G --topic T:P --to-offset O "
        "--execute`, with the group stopped) so its next commit carries the current epoch."
    ),
    "CM-GROUP-1": (
        "The destination group offset is ahead of the source's (clamped) committed offset: "
        "consumers would skip records after a failover; behind it, they would reprocess. Check "
        "that the mirror's group offset sync runs and includes the group; an inactive group can "
        "be set with `kafka-consumer-groups --reset-offsets --group G --topic T:P --to-offset O "
        "--execute` on the destination, O = the expected offset in the report."
    ),
    "CM-GROUP-2": (
        "A destination committed offset outside [log start, LEO]: consumers would reset by "
        "auto.offset.reset on a failover. With the group stopped, reset it into the range: "
        "`kafka-consumer-groups --bootstrap-server DEST --reset-offsets --group G --topic T:P "
        "--to-offset O --execute` with log start <= O <= LEO (or --to-earliest / --to-latest)."
    ),
    "CM-GROUP-3": (
        "A group excluded from the audit's scope is synced by the mirror, or an active "
        "destination group was misread. Align the mirror's group filter with scope.groups, or "
        "add the group to the scope."
    ),
    "CM-TXN-1": (
        "A transaction open on the source keeps the last stable offset back, so read_committed "
        "consumers and the mirror stall behind it. Find it with `kafka-transactions "
        "find-hanging --broker-id N`, and if its producer is gone, abort it: `kafka-transactions "
        "--bootstrap-server SRC abort --topic T --partition P --start-offset O`."
    ),
    "CM-SCOPE-1": (
        "A Kafka Streams application's internal topics or groups are mirrored: its state stores "
        "do not fail over with them. Exclude the application's internal topics and groups from "
        "the mirror (or from scope), and plan the application's failover from its own changelogs."
    ),
    "CM-DATA-1": (
        "Records differ between the clusters at the same offset: the destination was written by "
        "something other than the mirror, or a partition was re-created or truncated on one side. "
        "Compare the first divergent record shown, stop any other writer to the destination, "
        "and re-mirror the partition from the divergence."
    ),
    "CM-DATA-2": (
        "Record batches differ (CRC, producer, attributes) or a segment could not be read. A CRC "
        "difference with equal offsets is corruption or a foreign writer: re-mirror the partition; "
        "an unreadable segment on a broker disk: check the disk and let the replica refetch it "
        "(`kafka-reassign-partitions` to move the replica)."
    ),
    "CM-TXN-2": (
        "Transaction markers differ between the clusters: consumers with read_committed would "
        "see different records. Check the mirror copies control batches unchanged; re-mirror "
        "the partition from the first differing marker."
    ),
    "CM-TXN-3": (
        "A transactional batch below the last stable offset has no marker, or a transaction is "
        "closed twice. Abort a hanging transaction with `kafka-transactions abort --topic T "
        "--partition P --start-offset O`; a double close on the destination needs the partition "
        "re-mirrored."
    ),
    "CM-EPOCH-4": (
        "Batches on the destination carry leader epochs above the partition's, or other than the "
        "source's where the mirror preserves them: a failover could truncate. Check the mirror's "
        "epoch handling, and bump the destination epoch (`kafka-leader-election`) above the "
        "batches'."
    ),
    "CM-FAILOVER-1": (
        "After the mirror's stop the destination is not where it should be: records, an open "
        "transaction or a partition in state FAILED. Read the partition's error in the mirror's "
        "state, abort open destination transactions (`kafka-transactions abort`), elect leaders "
        "to raise DLE, and do not move consumers until it passes."
    ),
    "CM-FAILOVER-2": (
        "The stop lost more records than the readiness check predicted: the source took writes "
        "after the check. Stop producers before the readiness check next time "
        "(`readiness --wait-drained`), and replay the lost range from the source if it is still "
        "readable."
    ),
    "CM-FAILOVER-3": (
        "A group resumes outside the destination's retained range or skips records: reset it "
        "before its consumers start (`kafka-consumer-groups --reset-offsets --group G --topic "
        "T:P --to-offset O --execute`, O = the source committed offset clamped to [log start, LEO])."
    ),
    "CM-FAILBACK-1": (
        "Mirroring back would truncate records the old source has past the last mirrored "
        "offset. Copy them to the new source first (replay them from the old source), or raise "
        "max_failback_truncation_records once the loss is accepted."
    ),
    "CM-FAILBACK-2": (
        "A group on the old source committed past the offset mirroring back truncates to: its "
        "consumers would point into replaced records. Reset it on the old source to the last "
        "mirrored offset before failing back (`kafka-consumer-groups --reset-offsets`)."
    ),
    "CM-FAILBACK-3": (
        "A transaction is open on the old source; its coordinator could write a second marker "
        "after the failover's abort. Abort it on the old source (`kafka-transactions abort`) "
        "before failing back."
    ),
    "MM2-SYNC-1": (
        "MirrorMaker 2's offset syncs went backwards: the source topic was re-created or "
        "truncated, or two MM2 instances write the same offset-syncs topic. Check for a second "
        "MM2 cluster with the same source alias; restart MM2's MirrorSourceConnector."
    ),
    "MM2-CKPT-1": (
        "A checkpoint went backwards: a group was reset on the source, or two MM2 instances "
        "emit checkpoints for it. If the reset was intended, nothing to do; else look for a "
        "second MM2 with the same aliases."
    ),
    "MM2-CKPT-2": (
        "A checkpoint translates to an offset outside the target's retained range: the target "
        "topic's retention is shorter than the group's lag, or the target was truncated. Raise "
        "the target topic's retention, or reset the group on the target within the range."
    ),
    "MM2-CKPT-3": (
        "A checkpoint translates past what the offset syncs allow (over-translation): consumers "
        "would skip records. Upgrade MirrorMaker 2 (KAFKA-12468 and KAFKA-15906 changed the "
        "translation) and restart its MirrorCheckpointConnector."
    ),
    "MM2-CKPT-4": (
        "A group has no recent checkpoint: it is outside MM2's groups filter, or "
        "MirrorCheckpointConnector is not running or lags (emit.checkpoints.interval.seconds). "
        "Add the group to `groups`, and check the checkpoint connector's status."
    ),
    "MM2-GROUP-1": (
        "The target group's committed offset differs from its checkpoint: sync.group.offsets."
        "enabled is off, or the group is active on the target. Enable sync.group.offsets.enabled, "
        "or reset the group on the target to the checkpoint's downstream offset "
        "(`kafka-consumer-groups --reset-offsets --to-offset O --execute`)."
    ),
    "MM2-READY-1": (
        "A failover now would lose or reprocess records: replication is behind, the source still "
        "takes writes, or groups are active on the target. Stop producers, wait until the "
        "replicas catch up (`readiness --wait-drained`), stop target consumers, then check again."
    ),
}


def remediation(invariant_id: str) -> str | None:
    return REMEDIATION.get(invariant_id)
