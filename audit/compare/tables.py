"""The comparison jobs: source and destination snapshots in, one DataFrame per concern out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from audit.compare.scope import group_excluded, group_in_scope, topic_in_scope
from audit.config import AuditConfig

# States in which a group has (or is getting) live members: such a group on the destination
# is a running application there, never a target of offset sync.
ACTIVE_STATES = ("STABLE", "PREPARING_REBALANCING", "COMPLETING_REBALANCING", "ASSIGNING", "RECONCILING")

STREAMS_TOPIC = r"^(.+)-(?:[^-].*-)?(?:changelog|repartition)$"


@dataclass(frozen=True)
class SnapshotFrames:
    """One cluster's snapshot tables as DataFrames, plus when it was taken (epoch ms)."""

    partitions: Any
    groups: Any
    group_offsets: Any
    started_at_ms: int


def _prefixed(df: Any, prefix: str, keys: tuple[str, ...]) -> Any:
    from pyspark.sql import functions as F

    return df.select(
        *[F.col(k) for k in keys], *[F.col(c).alias(prefix + c) for c in df.columns if c not in keys]
    )


def compare_partitions(src: SnapshotFrames, dst: SnapshotFrames, cfg: AuditConfig) -> Any:
    """One row per (topic, partition) present on either side, with lag and epoch columns."""
    from pyspark.sql import functions as F

    keys = ("topic", "partition")
    s = _prefixed(src.partitions, "src_", keys).withColumn("src_present", F.lit(True))
    d = _prefixed(dst.partitions, "dst_", keys).withColumn("dst_present", F.lit(True))
    j = s.join(d, list(keys), "full_outer")
    src_ms = F.lit(src.started_at_ms)
    return (
        j.withColumn("src_present", F.coalesce("src_present", F.lit(False)))
        .withColumn("dst_present", F.coalesce("dst_present", F.lit(False)))
        .withColumn("in_scope", F.col("src_present") & topic_in_scope(F.col("topic"), cfg.scope))
        .withColumn("lag_records", F.col("src_high_watermark") - F.col("dst_high_watermark"))
        .withColumn("lag_seconds", (F.col("src_max_timestamp_ms") - F.col("dst_max_timestamp_ms")) / 1000.0)
        .withColumn("epoch_headroom", F.col("dst_leader_epoch") - F.col("src_leader_epoch"))
        .withColumn("src_retained_records", F.col("src_high_watermark") - F.col("src_log_start_offset"))
        # CM-OFFSET-2's warning: the backlog is more than half of what the source still keeps.
        .withColumn(
            "backlog_within_half_retention",
            F.col("lag_records") * 2 <= F.col("src_retained_records"),
        )
        .withColumn("src_open_txn", F.col("src_last_stable_offset") < F.col("src_high_watermark"))
        .withColumn(
            "open_txn_age_seconds",
            F.when(
                F.col("src_open_txn"),
                (src_ms - F.col("src_open_txn_first_timestamp_ms")) / 1000.0,
            ),
        )
        .withColumn("streams_internal_topic", F.col("topic").rlike(STREAMS_TOPIC))
    )


def compare_topics(partitions: Any, cfg: AuditConfig) -> Any:
    """One row per in-scope source topic: partition counts and topic ids on both sides."""
    from pyspark.sql import functions as F

    agg = partitions.groupBy("topic").agg(
        F.max(F.col("in_scope").cast("int")).cast("boolean").alias("in_scope"),
        F.sum(F.col("src_present").cast("int")).alias("src_partition_count"),
        F.sum(F.col("dst_present").cast("int")).alias("dst_partition_count"),
        F.first("src_topic_id", ignorenulls=True).alias("src_topic_id"),
        F.first("dst_topic_id", ignorenulls=True).alias("dst_topic_id"),
    )
    same_id = F.col("src_topic_id").eqNullSafe(F.col("dst_topic_id"))
    id_ok = same_id if cfg.mirror.preserves_topic_ids else F.lit(True)
    return agg.withColumn("dst_present", F.col("dst_partition_count") > 0).withColumn(
        "topic_mirrored",
        (F.col("dst_partition_count") == F.col("src_partition_count")) & id_ok,
    )


def _group_states(groups: Any, prefix: str) -> Any:
    from pyspark.sql import functions as F

    return groups.select(
        "group_id",
        F.col("group_type").alias(prefix + "group_type"),
        F.col("state").alias(prefix + "state"),
        F.col("member_count").alias(prefix + "member_count"),
    )


def compare_group_offsets(src: SnapshotFrames, dst: SnapshotFrames, cfg: AuditConfig) -> Any:
    """One row per (group, topic, partition) committed on either side, with the clamp.

    expected_offset = max(dst log start, min(src committed, dst LEO)): where a synced offset
    must sit so consumers neither skip records nor read past the destination's end.
    """
    from pyspark.sql import functions as F

    keys = ("group_id", "topic", "partition")
    s = _prefixed(src.group_offsets, "src_", keys)
    d = _prefixed(dst.group_offsets, "dst_", keys)
    dparts = dst.partitions.select(
        "topic",
        "partition",
        F.col("log_start_offset").alias("dst_log_start_offset"),
        F.col("high_watermark").alias("dst_high_watermark"),
        F.col("leader_epoch").alias("dst_leader_epoch"),
    )
    active = F.coalesce(
        (F.col("dst_member_count") > 0) | F.col("dst_state").isin(*ACTIVE_STATES), F.lit(False)
    )
    j = (
        s.join(d, list(keys), "full_outer")
        .join(dparts, ["topic", "partition"], "left")
        .join(_group_states(src.groups, "src_"), ["group_id"], "left")
        .join(_group_states(dst.groups, "dst_"), ["group_id"], "left")
    )
    clamp = F.greatest(
        F.col("dst_log_start_offset"), F.least(F.col("src_committed_offset"), F.col("dst_high_watermark"))
    )
    return (
        j.withColumn("topic_in_scope", topic_in_scope(F.col("topic"), cfg.scope))
        .withColumn("group_in_scope", group_in_scope(F.col("group_id"), cfg.scope))
        .withColumn("group_excluded", group_excluded(F.col("group_id"), cfg.scope))
        .withColumn("dst_active", active)
        .withColumn("dst_partition_known", F.col("dst_high_watermark").isNotNull())
        .withColumn("expected_offset", clamp)
        .withColumn("sync_delta", F.col("dst_committed_offset") - F.col("expected_offset"))
        # A missing destination commit counts as fully behind: consumers would fall back to
        # auto.offset.reset after failover.
        .withColumn(
            "sync_behind",
            F.coalesce(F.col("expected_offset") - F.col("dst_committed_offset"), F.col("expected_offset")),
        )
        .withColumn(
            "dst_offset_in_range",
            (F.col("dst_committed_offset") >= F.col("dst_log_start_offset"))
            & (F.col("dst_committed_offset") <= F.col("dst_high_watermark")),
        )
        .withColumn("commit_epoch_headroom", F.col("dst_leader_epoch") - F.col("dst_committed_leader_epoch"))
        .withColumn(
            "sync_candidate",
            F.col("topic_in_scope")
            & F.col("group_in_scope")
            & ~F.col("dst_active")
            & F.col("src_committed_offset").isNotNull()
            & F.col("dst_partition_known"),
        )
    )


def compare_groups(group_offsets: Any, partitions: Any, cfg: AuditConfig) -> Any:
    """One row per group seen on either side: scope, activity and sync classification."""
    from pyspark.sql import functions as F

    g = group_offsets.groupBy("group_id").agg(
        F.max(F.col("group_in_scope").cast("int")).cast("boolean").alias("group_in_scope"),
        F.max(F.col("group_excluded").cast("int")).cast("boolean").alias("group_excluded"),
        F.max(F.col("dst_active").cast("int")).cast("boolean").alias("dst_active"),
        F.first("src_state", ignorenulls=True).alias("src_state"),
        F.first("dst_state", ignorenulls=True).alias("dst_state"),
        F.first("dst_member_count", ignorenulls=True).alias("dst_member_count"),
        F.count("src_committed_offset").alias("src_committed_partitions"),
        F.count("dst_committed_offset").alias("dst_committed_partitions"),
    )
    classification = (
        F.when(F.col("dst_active"), F.lit("active-on-destination"))
        .when(F.col("group_excluded"), F.lit("excluded"))
        .when(~F.col("group_in_scope"), F.lit("out-of-scope"))
        .otherwise(F.lit("synced"))
    )
    # A Kafka Streams application's group id is its application.id, the prefix of its
    # <application.id>-...-changelog / -repartition topics.
    streams_topics = (
        partitions.where(F.col("in_scope") & F.col("streams_internal_topic")).select("topic").distinct()
    )
    apps = (
        g.select("group_id")
        .join(streams_topics, F.col("topic").startswith(F.concat(F.col("group_id"), F.lit("-"))), "inner")
        .select("group_id")
        .distinct()
        .withColumn("streams_application", F.lit(True))
    )
    g = g.join(apps, ["group_id"], "left").withColumn(
        "streams_application", F.coalesce(F.col("streams_application"), F.lit(False))
    )
    return g.withColumn("classification", classification).withColumn(
        # CM-GROUP-3: an excluded group inactive on the destination must carry no synced offsets.
        "excluded_but_synced",
        (F.col("classification") == "excluded")
        & (F.col("src_committed_partitions") > 0)
        & (F.col("dst_committed_partitions") > 0),
    )
