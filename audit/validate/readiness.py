"""Readiness figures: what a failover now would lose and make consumers reprocess.

Aggregates over the comparison tables in the engine that computed them: on Spark only two
numbers reach the driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from audit.compare.run import Compared


@dataclass(frozen=True)
class ReadinessFigures:
    # Sum over in-scope partitions of max(0, source LEO - destination LEO); a partition
    # missing on the destination loses everything the source still retains.
    expected_loss_records: int
    # Sum over synced (group, partition) pairs of max(0, clamp(source committed) - destination committed).
    expected_reprocess_records: int


def readiness_figures(compared: Compared) -> ReadinessFigures:
    if "mm2_partitions" in compared.frames:
        return _mm2(compared.frames["mm2_partitions"], compared.frames["mm2_group_offsets"])
    if compared.engine == "local":
        return _local(compared.frames["partitions"], compared.frames["group_offsets"])
    return _spark(compared.frames["partitions"], compared.frames["group_offsets"])


def _spark(partitions: Any, group_offsets: Any) -> ReadinessFigures:
    from pyspark.sql import functions as F

    parts = partitions.where("in_scope")
    loss_per_partition = F.when(F.col("dst_present"), F.greatest(F.lit(0), F.col("lag_records"))).otherwise(
        F.col("src_retained_records")
    )
    loss = parts.agg(F.coalesce(F.sum(loss_per_partition), F.lit(0)).alias("x")).first()["x"]
    offsets = group_offsets.where(F.col("sync_candidate") & F.col("dst_committed_offset").isNotNull())
    reprocess = offsets.agg(
        F.coalesce(F.sum(F.greatest(F.lit(0), -F.col("sync_delta"))), F.lit(0)).alias("x")
    ).first()["x"]
    return ReadinessFigures(int(loss), int(reprocess))


def _local(partitions: Any, group_offsets: Any) -> ReadinessFigures:
    parts = partitions[partitions["in_scope"].fillna(False)]
    loss = parts["lag_records"].clip(lower=0).where(parts["dst_present"], parts["src_retained_records"])
    synced = group_offsets[
        group_offsets["sync_candidate"].fillna(False) & group_offsets["dst_committed_offset"].notna()
    ]
    reprocess = (-synced["sync_delta"]).clip(lower=0)
    return ReadinessFigures(int(loss.sum()), int(reprocess.sum()))


def _mm2(partitions: Any, group_offsets: Any) -> ReadinessFigures:
    """Mode mm2: loss is what the replicas have not received (a partition without any
    offset sync loses all it retains); reprocessing is what translating each group's latest
    checkpoint makes its consumers read again."""
    from pyspark.sql import functions as F

    unreplicated = F.when(F.col("has_sync"), F.greatest(F.lit(0), F.col("unreplicated_records"))).otherwise(
        F.col("src_high_watermark") - F.col("src_log_start_offset")
    )
    loss = partitions.where("in_scope").agg(F.coalesce(F.sum(unreplicated), F.lit(0)).alias("x")).first()["x"]
    moving = group_offsets.where("in_scope AND mirrored AND has_checkpoint AND NOT dst_active")
    reprocess = moving.agg(F.coalesce(F.sum("reprocess_records"), F.lit(0)).alias("x")).first()["x"]
    return ReadinessFigures(int(loss), int(reprocess))
