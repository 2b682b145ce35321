"""The comparison jobs of mode mm2: MirrorMaker 2's offset syncs and checkpoints against both
clusters' partitions and group offsets, one DataFrame per concern (Spark).

Names: a checkpoint names the replica topic on the target (``source.orders`` under the
default policy), an offset sync and a source group's commit name the source topic; the
configured replication policy maps one to the other (``Mm2Config.remote_topic``).
"""

from __future__ import annotations

from typing import Any

from audit.compare.scope import group_in_scope, mm2_topic_in_scope
from audit.compare.tables import ACTIVE_STATES
from audit.config import AuditConfig, Mm2Config


def _source_topic(col: Any, mm2: Mm2Config) -> Any:
    """The source topic of a replica name: the inverse of the replication policy (null when
    the name does not carry this source's prefix)."""
    from pyspark.sql import functions as F

    if mm2.replication_policy == "identity":
        return col
    prefix = mm2.source_alias + mm2.separator
    return F.when(col.startswith(prefix), F.substring(col, len(prefix) + 1, 1 << 30))


def _remote_topic(col: Any, mm2: Mm2Config) -> Any:
    from pyspark.sql import functions as F

    if mm2.replication_policy == "identity":
        return col
    return F.concat(F.lit(mm2.source_alias + mm2.separator), col)


def compare_syncs(syncs: Any, cfg: AuditConfig) -> Any:
    """One row per offset-sync record, with the one before it for the same partition
    (MM2-SYNC-1: both offsets only ever move forward)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    w = Window.partitionBy("topic", "partition").orderBy("record_partition", "record_offset")
    forward = (F.col("upstream_offset") >= F.col("prev_upstream_offset")) & (
        F.col("downstream_offset") >= F.col("prev_downstream_offset")
    )
    return (
        syncs.withColumn("in_scope", mm2_topic_in_scope(F.col("topic"), cfg.scope))
        .withColumn("prev_upstream_offset", F.lag("upstream_offset").over(w))
        .withColumn("prev_downstream_offset", F.lag("downstream_offset").over(w))
        .withColumn("monotonic", F.coalesce(forward, F.lit(True)))
    )


def compare_checkpoints(checkpoints: Any, syncs: Any | None, dst_partitions: Any, cfg: AuditConfig) -> Any:
    """One row per checkpoint record: its history (MM2-CKPT-1), whether it is the latest
    for its (group, topic, partition), its place in the target partition (MM2-CKPT-2) and
    the most it may translate to from the offset syncs (MM2-CKPT-3)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    mm2 = cfg.mirror.mm2
    key = ["group_id", "topic", "partition"]
    order = ["record_partition", "record_offset"]
    w = Window.partitionBy(*key).orderBy(*order)
    latest_first = Window.partitionBy(*key).orderBy(*[F.desc(c) for c in order])
    forward = (F.col("upstream_offset") >= F.col("prev_upstream_offset")) & (
        F.col("downstream_offset") >= F.col("prev_downstream_offset")
    )
    dparts = dst_partitions.select(
        "topic",
        "partition",
        F.col("log_start_offset").alias("dst_log_start_offset"),
        F.col("high_watermark").alias("dst_high_watermark"),
    )
    c = (
        checkpoints.withColumn("source_topic", _source_topic(F.col("topic"), mm2))
        .withColumn(
            "in_scope",
            group_in_scope(F.col("group_id"), cfg.scope)
            & mm2_topic_in_scope(F.col("source_topic"), cfg.scope),
        )
        .withColumn("prev_upstream_offset", F.lag("upstream_offset").over(w))
        .withColumn("prev_downstream_offset", F.lag("downstream_offset").over(w))
        .withColumn("not_backwards", F.coalesce(forward, F.lit(True)))
        .withColumn("is_latest", F.row_number().over(latest_first) == 1)
        .join(dparts, ["topic", "partition"], "left")
        .withColumn("dst_partition_known", F.col("dst_high_watermark").isNotNull())
        .withColumn(
            "in_target_range",
            (F.col("downstream_offset") >= F.col("dst_log_start_offset"))
            & (F.col("downstream_offset") <= F.col("dst_high_watermark")),
        )
    )
    if syncs is None:
        return (
            c.withColumn("sync_upstream_offset", F.lit(None).cast("long"))
            .withColumn("sync_downstream_offset", F.lit(None).cast("long"))
            .withColumn("max_downstream_offset", F.lit(None).cast("long"))
            .withColumn("over_translated", F.lit(None).cast("boolean"))
        )
    # The tightest bound: the sync with the highest upstream offset at or below the
    # checkpoint's; the downstream can be at most that sync's plus the records between.
    s = syncs.select(
        F.col("topic").alias("s_topic"),
        F.col("partition").alias("s_partition"),
        F.col("upstream_offset").alias("s_up"),
        F.col("downstream_offset").alias("s_down"),
    )
    ckpt_key = [*key, *order]
    best = (
        c.select(*ckpt_key, "source_topic", "upstream_offset")
        .join(
            s,
            (F.col("s_topic") == F.col("source_topic"))
            & (F.col("s_partition") == F.col("partition"))
            & (F.col("s_up") <= F.col("upstream_offset")),
        )
        .groupBy(*ckpt_key)
        .agg(F.max(F.struct("s_up", "s_down")).alias("sync"))
        .select(
            *ckpt_key,
            F.col("sync.s_up").alias("sync_upstream_offset"),
            F.col("sync.s_down").alias("sync_downstream_offset"),
        )
    )
    bound = F.col("sync_downstream_offset") + (F.col("upstream_offset") - F.col("sync_upstream_offset"))
    return (
        c.join(best, ckpt_key, "left")
        .withColumn("max_downstream_offset", bound)
        .withColumn("over_translated", F.col("downstream_offset") > F.col("max_downstream_offset"))
    )


def compare_group_offsets(
    src_offsets: Any,
    dst_offsets: Any,
    dst_groups: Any,
    checkpoints: Any,
    dst_partitions: Any,
    syncs: Any | None,
    cfg: AuditConfig,
) -> Any:
    """One row per in-scope source group commit on a mirrored topic: its latest checkpoint
    (MM2-CKPT-4: present, fresh) and the target group's offset (MM2-GROUP-1).

    ``first_sync_upstream_offset`` (the lowest upstream offset among the partition's offset
    syncs) explains many a missing checkpoint: MM2 translates no offset below a partition's
    first sync, so a commit there waits for the group to move past it."""
    from pyspark.sql import functions as F

    mm2 = cfg.mirror.mm2
    latest = checkpoints.where("is_latest").select(
        "group_id",
        F.col("topic").alias("remote_topic"),
        "partition",
        F.col("upstream_offset").alias("ckpt_upstream_offset"),
        F.col("downstream_offset").alias("ckpt_downstream_offset"),
        F.col("timestamp_ms").alias("ckpt_timestamp_ms"),
        F.col("max_downstream_offset").alias("ckpt_max_downstream_offset"),
    )
    mirrored = dst_partitions.select(F.col("topic").alias("remote_topic"), "partition").withColumn(
        "mirrored", F.lit(True)
    )
    replica_range = dst_partitions.select(
        F.col("topic").alias("remote_topic"),
        "partition",
        F.col("log_start_offset").alias("dst_log_start_offset"),
        F.col("high_watermark").alias("dst_high_watermark"),
    )
    target = dst_offsets.select(
        "group_id",
        F.col("topic").alias("remote_topic"),
        "partition",
        F.col("committed_offset").alias("dst_committed_offset"),
    )
    states = dst_groups.select(
        "group_id", F.col("state").alias("dst_state"), F.col("member_count").alias("dst_member_count")
    )
    active = F.coalesce(
        (F.col("dst_member_count") > 0) | F.col("dst_state").isin(*ACTIVE_STATES), F.lit(False)
    )
    commits = src_offsets.select(
        "group_id", "topic", "partition", F.col("committed_offset").alias("src_committed_offset")
    )
    if syncs is None:
        commits = commits.withColumn("first_sync_upstream_offset", F.lit(None).cast("long"))
    else:
        first_sync = syncs.groupBy("topic", "partition").agg(
            F.min("upstream_offset").alias("first_sync_upstream_offset")
        )
        commits = commits.join(first_sync, ["topic", "partition"], "left")
    keys = ["group_id", "remote_topic", "partition"]
    return (
        commits.withColumn("remote_topic", _remote_topic(F.col("topic"), mm2))
        .withColumn(
            "in_scope",
            group_in_scope(F.col("group_id"), cfg.scope) & mm2_topic_in_scope(F.col("topic"), cfg.scope),
        )
        .join(mirrored, ["remote_topic", "partition"], "left")
        .withColumn("mirrored", F.coalesce(F.col("mirrored"), F.lit(False)))
        .join(latest, keys, "left")
        .join(target, keys, "left")
        .join(replica_range, ["remote_topic", "partition"], "left")
        .join(states, ["group_id"], "left")
        .withColumn("dst_active", active)
        .withColumn("has_checkpoint", F.col("ckpt_upstream_offset").isNotNull())
        .withColumn("staleness_records", F.col("src_committed_offset") - F.col("ckpt_upstream_offset"))
        .withColumn("fresh", F.col("staleness_records") == 0)
        # What consumers would read again after a failover to the checkpoint: the commits
        # since the checkpoint, plus what MM2's conservative translation gave away.
        .withColumn(
            "reprocess_records",
            F.greatest(F.lit(0), F.col("staleness_records"))
            + F.greatest(
                F.lit(0),
                F.coalesce(F.col("ckpt_max_downstream_offset") - F.col("ckpt_downstream_offset"), F.lit(0)),
            ),
        )
        # An over-translated checkpoint moves consumers past records they never read.
        .withColumn(
            "skip_records",
            F.greatest(
                F.lit(0),
                F.coalesce(F.col("ckpt_downstream_offset") - F.col("ckpt_max_downstream_offset"), F.lit(0)),
            ),
        )
        .withColumn("sync_expected", F.lit(mm2.sync_group_offsets) & ~F.col("dst_active"))
        .withColumn(
            "synced_matches", F.col("dst_committed_offset").eqNullSafe(F.col("ckpt_downstream_offset"))
        )
        .withColumn(
            "dst_offset_in_range",
            (F.col("dst_committed_offset") >= F.col("dst_log_start_offset"))
            & (F.col("dst_committed_offset") <= F.col("dst_high_watermark")),
        )
    )


def compare_partitions(src_partitions: Any, dst_partitions: Any, syncs: Any | None, cfg: AuditConfig) -> Any:
    """One row per in-scope source partition with its replica and latest offset sync: how
    many records are not replicated yet, and whether the replica holds records the mirror
    did not write (MM2-READY-1).

    The replica's position in source offsets is the latest sync's upstream offset plus what
    the replica gained since that sync: upstream + (replica LEO - sync downstream).
    """
    from pyspark.sql import functions as F

    mm2 = cfg.mirror.mm2
    dparts = dst_partitions.select(
        F.col("topic").alias("remote_topic"),
        "partition",
        F.col("log_start_offset").alias("dst_log_start_offset"),
        F.col("high_watermark").alias("dst_high_watermark"),
    )
    p = (
        src_partitions.select(
            "topic",
            "partition",
            F.col("log_start_offset").alias("src_log_start_offset"),
            F.col("high_watermark").alias("src_high_watermark"),
            F.col("last_stable_offset").alias("src_last_stable_offset"),
        )
        .withColumn("in_scope", mm2_topic_in_scope(F.col("topic"), cfg.scope))
        .withColumn("remote_topic", _remote_topic(F.col("topic"), mm2))
        .join(dparts, ["remote_topic", "partition"], "left")
        .withColumn("dst_present", F.col("dst_high_watermark").isNotNull())
    )
    if syncs is None:
        p = p.withColumn("sync_upstream_offset", F.lit(None).cast("long")).withColumn(
            "sync_downstream_offset", F.lit(None).cast("long")
        )
    else:
        latest = syncs.groupBy("topic", "partition").agg(
            F.max(F.struct("upstream_offset", "downstream_offset")).alias("sync")
        )
        p = p.join(
            latest.select(
                "topic",
                "partition",
                F.col("sync.upstream_offset").alias("sync_upstream_offset"),
                F.col("sync.downstream_offset").alias("sync_downstream_offset"),
            ),
            ["topic", "partition"],
            "left",
        )
    mirrored_upstream = F.col("sync_upstream_offset") + (
        F.col("dst_high_watermark") - F.col("sync_downstream_offset")
    )
    return (
        p.withColumn("has_sync", F.col("sync_upstream_offset").isNotNull())
        .withColumn("unreplicated_records", F.col("src_high_watermark") - mirrored_upstream)
        # No sync yet: replicated only if the source holds nothing to replicate.
        .withColumn(
            "fully_replicated",
            F.when(F.col("has_sync"), F.col("unreplicated_records") <= 0).otherwise(
                F.col("src_high_watermark") == F.col("src_log_start_offset")
            ),
        )
        # More on the replica than the mirror wrote: another producer, or re-delivered duplicates.
        .withColumn("only_mirror_writes", F.col("unreplicated_records") >= 0)
        .withColumn("src_quiet", F.col("src_last_stable_offset") == F.col("src_high_watermark"))
    )
