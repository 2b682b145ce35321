"""The invariants of offset-preserving mirrors (mode cluster-mirroring): KIP-1279 Cluster
Mirroring and Confluent Cluster Linking, offsets equal on both sides."""

from __future__ import annotations

from audit.validate.invariants.declaration import Invariant
from audit.validate.invariants.failover import FAILOVER_1

TOPIC_1 = Invariant(
    "CM-TOPIC-1",
    statement=(
        "every in-scope source topic exists on the destination with the same partition count (and the same "
        "topic ID where the mirror promises it)"
    ),
    needs="partitions",
    remediation=(
        "Usually the topic is outside the mirror's topic filter, was created on the source after the "
        "mirror's last topic refresh, or had partitions added on one side only. Add it to the mirror's "
        "filter (or wait for its refresh interval), and make the partition counts equal: `kafka-topics "
        "--alter --topic T --partitions N` on the side that has fewer. A topic ID that differs means the "
        "destination topic was created by hand: delete it and let the mirror create it."
    ),
    inputs=("src:partitions.topic_id", "dst:partitions.topic_id"),
)


OFFSET_1 = Invariant(
    "CM-OFFSET-1",
    statement="destination LEO <= source LEO for every partition",
    needs="partitions",
    remediation=(
        "The destination has more records than the source: something other than the mirror writes to the "
        "destination topic, or the source was truncated (an unclean leader election). Stop the other "
        "producer (destination topics of a mirror must be read-only: deny WRITE with an ACL), then "
        "re-mirror the partition from the source."
    ),
    inputs=("dst:partitions",),
)


OFFSET_2 = Invariant(
    "CM-OFFSET-2",
    statement=(
        "destination LEO >= source log start offset (else records were deleted before they were mirrored); "
        "warn when the backlog exceeds half of what the source retains"
    ),
    needs="partitions",
    remediation=(
        "The source deleted records the mirror had not copied yet: its retention is shorter than the "
        "mirror's backlog. Raise the source topic's retention (`kafka-configs --alter --entity-type topics "
        "--entity-name T --add-config retention.ms=...`) or the mirror's throughput (more mirror tasks, a "
        "higher replication quota); the records already deleted are lost on the destination."
    ),
    inputs=("dst:partitions",),
)


LAG_1 = Invariant(
    "CM-LAG-1",
    statement="lag within max_lag_records and time lag within max_lag_seconds",
    needs="partitions",
    remediation=(
        "The mirror is behind: throttled (replication quotas), under-provisioned, or stopped. Check the "
        "mirror's state and errors, raise its throughput (tasks, fetch sizes, quota), or raise "
        "max_lag_records / max_lag_seconds if the lag is what the business accepts."
    ),
    inputs=("src:partitions.max_timestamp_ms", "dst:partitions.max_timestamp_ms"),
)


EPOCH_1 = Invariant(
    "CM-EPOCH-1",
    statement="destination leader epoch >= source leader epoch (DLE >= SLE) for every partition",
    needs="partitions",
    remediation=(
        "A destination leader epoch below the source's lets a failover truncate records. Raise the "
        "destination epoch with a leader election on the affected partitions (`kafka-leader-election "
        "--election-type PREFERRED --topic T --partition P`, after a reassignment that makes another "
        "replica preferred if the leader is already preferred), and check that the mirror's proactive epoch "
        "bumping is enabled."
    ),
    inputs=("src:partitions.leader_epoch", "dst:partitions.leader_epoch"),
)


EPOCH_2 = Invariant(
    "CM-EPOCH-2",
    statement="warn when DLE - SLE < epoch_headroom (proactive bumping is lagging)",
    needs="partitions",
    remediation=(
        "The destination epoch is only just above the source's: one more source election and CM-EPOCH-1 "
        "fails. Bump the destination epochs ahead (`kafka-leader-election --election-type PREFERRED`), and "
        "check the mirror's epoch bumping keeps pace."
    ),
    inputs=("src:partitions.leader_epoch", "dst:partitions.leader_epoch"),
)


EPOCH_3 = Invariant(
    "CM-EPOCH-3",
    statement=(
        "every destination committed offset carries a leader epoch <= DLE of its partition; where the "
        "destination's batches were read, a commit the sync moved to the destination's log start carries "
        "the epoch of the batch there"
    ),
    needs="group_offsets (and, for the exact epoch, batches of the destination)",
    remediation=(
        "A destination group committed offset carries a leader epoch above its partition's: the commit was "
        "made on another cluster or before a truncation. Reset the group within the partition "
        "(`kafka-consumer-groups --reset-offsets --group G --topic T:P --to-offset O --execute`, with the "
        "group stopped) so its next commit carries the current epoch. A clamped commit with another epoch "
        "than the batch at its offset: the mirror's sync wrote a wrong epoch, and consumers validating "
        "their position after a failover may reset; reset the group to the offset the same way."
    ),
    inputs=("dst:partitions.leader_epoch", "dst:partitions"),
)


GROUP_1 = Invariant(
    "CM-GROUP-1",
    statement=(
        "for in-scope groups inactive on the destination: committed ahead of clamp(source committed) fails, "
        "behind it by more than group_sync_tolerance_records warns"
    ),
    needs="group_offsets",
    remediation=(
        "The destination group offset is ahead of the source's (clamped) committed offset: consumers would "
        "skip records after a failover; behind it, they would reprocess. Check that the mirror's group "
        "offset sync runs and includes the group; an inactive group can be set with `kafka-consumer-groups "
        "--reset-offsets --group G --topic T:P --to-offset O --execute` on the destination, O = the "
        "expected offset in the report (a share group: `kafka-share-groups --reset-offsets`, same options). "
        "A share group left unchecked had its start offsets unread: set java.kafka_classpath "
        "(docs/configuration.md, Share groups)."
    ),
    inputs=("dst:partitions",),
)


GROUP_2 = Invariant(
    "CM-GROUP-2",
    statement="every destination committed offset lies in [destination log start, destination LEO]",
    needs="group_offsets",
    remediation=(
        "A destination committed offset outside [log start, LEO]: consumers would reset by "
        "auto.offset.reset on a failover. With the group stopped, reset it into the range: "
        "`kafka-consumer-groups --bootstrap-server DEST --reset-offsets --group G --topic T:P --to-offset O "
        "--execute` with log start <= O <= LEO (or --to-earliest / --to-latest)."
    ),
    inputs=("dst:partitions",),
)


GROUP_4 = Invariant(
    "CM-GROUP-4",
    statement=(
        "warn when a synced group would never see more than max_unseen_records records of a partition: "
        "records it has not processed that the destination no longer holds (below its log start) while "
        "the source still does"
    ),
    needs="group_offsets",
    remediation=(
        "The group is behind the destination's log start: its consumers would resume at the destination's "
        "earliest record after a failover and never see the records in between, which the source still "
        "holds. Let the group catch up on the source before the failover, or raise the destination topic's "
        "retention (`kafka-configs --alter --entity-type topics --entity-name T --add-config "
        "retention.ms=...`) so the mirror keeps what its groups have not read; the records already deleted "
        "on the destination can be read from the source until it drops them."
    ),
    inputs=("src:partitions", "dst:partitions"),
)


GROUP_3 = Invariant(
    "CM-GROUP-3",
    statement=(
        "groups active on the destination are classified, never flagged as unsynced; excluded groups are "
        "not synced"
    ),
    needs="groups",
    remediation=(
        "A group excluded from the audit's scope is synced by the mirror, or an active destination group "
        "was misread. Align the mirror's group filter with scope.groups, or add the group to the scope."
    ),
)


TXN_1 = Invariant(
    "CM-TXN-1",
    statement=(
        "open transactions on the source: none passes, open warns, older than max_open_txn_seconds fails "
        "(hanging)"
    ),
    needs="partitions",
    remediation=(
        "A transaction open on the source keeps the last stable offset back, so read_committed consumers "
        "and the mirror stall behind it. Find it with `kafka-transactions find-hanging --broker-id N`, and "
        "if its producer is gone, abort it: `kafka-transactions --bootstrap-server SRC abort --topic T "
        "--partition P --start-offset O`."
    ),
    details=("open_transactions",),
)


SCOPE_1 = Invariant(
    "CM-SCOPE-1",
    statement="warn when mirrored topics or groups belong to a stateful Kafka Streams application",
    needs="partitions",
    remediation=(
        "A Kafka Streams application's internal topics or groups are mirrored: its state stores do not fail "
        "over with them. Exclude the application's internal topics and groups from the mirror (or from "
        "scope), and plan the application's failover from its own changelogs."
    ),
)


TIER_1 = Invariant(
    "CM-TIER-1",
    statement=(
        "no in-scope destination topic has tiered storage enabled (remote.storage.enable): KIP-1279's "
        "prototype moves such partitions to FAILED; mirror.tiered_destination sets the severity"
    ),
    needs="partitions",
    remediation=(
        "A KIP-1279 mirror does not write to a destination partition whose topic keeps a remote tier: it "
        "moves the partition to FAILED, and a failover would find it behind. Turn tiered storage off on "
        "the destination topic before the mirror reaches it (`kafka-configs --alter --entity-type topics "
        "--entity-name T --add-config remote.storage.enable=false,remote.log.delete.on.disable=true`, "
        "Kafka 3.9+), and turn it on again only after the failover. For a mirror whose vendor supports a "
        "tiered destination (Confluent Cluster Linking), set mirror.tiered_destination: warn."
    ),
    inputs=("dst:partitions.remote_storage",),
)


TIER_2 = Invariant(
    "CM-TIER-2",
    statement=(
        "warn when the destination's end is below the source's local log start: the mirror then reads from "
        "the source's remote tier (slower, and through the remote storage manager's own failures)"
    ),
    needs="partitions",
    remediation=(
        "The mirror is further behind than the source keeps on its brokers' disks (local.retention.ms / "
        "local.retention.bytes), so it fetches from the remote tier. Raise the mirror's throughput, or the "
        "source topic's local retention until it has caught up; watch the remote storage manager's fetch "
        "errors on the source brokers (RemoteFetchErrorsPerSec) meanwhile."
    ),
    inputs=("src:partitions.remote_storage",),
)


DATA_1 = Invariant(
    "CM-DATA-1",
    statement=(
        "record-level range checksums equal on the common offset range; the first divergent offset is "
        "reported"
    ),
    needs="record_chunks of both sides (records scan)",
    remediation=(
        "Records differ between the clusters at the same offset: the destination was written by something "
        "other than the mirror, or a partition was re-created or truncated on one side. Compare the first "
        "divergent record shown, stop any other writer to the destination, and re-mirror the partition from "
        "the divergence."
    ),
    spark_only=True,
    inputs=("src:record_chunks", "dst:record_chunks", "src:record_chunk_ranges", "dst:record_chunk_ranges"),
    details=("record_divergence",),
)


DATA_2 = Invariant(
    "CM-DATA-2",
    statement=(
        "record batches in the common range are identical (base/last offset, CRC, producer id/epoch, "
        "attributes) and every scanned batch is readable"
    ),
    needs="batches of both sides (segments scan or fetch)",
    remediation=(
        "Record batches differ (CRC, producer, attributes) or a segment could not be read. A CRC difference "
        "with equal offsets is corruption or a foreign writer: re-mirror the partition; an unreadable "
        "segment on a broker disk: check the disk and let the replica refetch it "
        "(`kafka-reassign-partitions` to move the replica)."
    ),
    spark_only=True,
    inputs=("src:batches", "dst:batches"),
    details=("batch_divergence",),
)


TXN_2 = Invariant(
    "CM-TXN-2",
    statement="transaction markers sit at the same offsets with the same type on both sides",
    needs="markers of both sides (segments scan or fetch) or record_chunks (records scan)",
    remediation=(
        "Transaction markers differ between the clusters: consumers with read_committed would see different "
        "records. Check the mirror copies control batches unchanged; re-mirror the partition from the first "
        "differing marker."
    ),
    spark_only=True,
    inputs=("src:markers", "dst:markers", "src:batches", "dst:batches"),
)


TXN_3 = Invariant(
    "CM-TXN-3",
    statement=(
        "every transactional batch below the last stable offset is closed by a marker, and no transaction "
        "is closed twice"
    ),
    needs="batches of either side (segments scan or fetch)",
    remediation=(
        "A transactional batch below the last stable offset has no marker, or a transaction is closed "
        "twice. Abort a hanging transaction with `kafka-transactions abort --topic T --partition P "
        "--start-offset O`; a double close on the destination needs the partition re-mirrored."
    ),
    spark_only=True,
    inputs=("src:partitions", "dst:partitions"),
)


EPOCH_4 = Invariant(
    "CM-EPOCH-4",
    statement=(
        "destination batch and record leader epochs never exceed DLE; equal to the source's where the "
        "mirror preserves them"
    ),
    needs="batches (segments scan or fetch) or record_chunks (records scan) of both sides",
    remediation=(
        "Batches on the destination carry leader epochs above the partition's, or other than the source's "
        "where the mirror preserves them: a failover could truncate. Check the mirror's epoch handling, and "
        "bump the destination epoch (`kafka-leader-election`) above the batches'."
    ),
    spark_only=True,
    inputs=("dst:partitions.leader_epoch", "dst:record_chunks.max_record_epoch"),
)


# An audit's catalogue, in report order; the stop's own state last (after a stop, an audit
# judges it too).
CLUSTER_MIRRORING: tuple[Invariant, ...] = (
    TOPIC_1,
    OFFSET_1,
    OFFSET_2,
    LAG_1,
    EPOCH_1,
    EPOCH_2,
    EPOCH_3,
    GROUP_1,
    GROUP_2,
    GROUP_3,
    GROUP_4,
    TXN_1,
    SCOPE_1,
    TIER_1,
    TIER_2,
    DATA_1,
    DATA_2,
    TXN_2,
    TXN_3,
    EPOCH_4,
    FAILOVER_1,
)
