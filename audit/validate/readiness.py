"""Readiness figures: what a failover now would lose and make consumers reprocess.

Both are Spark aggregates over the comparison tables; only two numbers reach the driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ReadinessFigures:
    # Sum over in-scope partitions of max(0, source LEO - destination LEO); a partition
    # missing on the destination loses everything the source still retains.
    expected_loss_records: int
    # Sum over synced (group, partition) pairs of max(0, clamp(source committed) - destination committed).
    expected_reprocess_records: int


def readiness_figures(spark: Any, run_dir: Path) -> ReadinessFigures:
    from pyspark.sql import functions as F

    parts = spark.read.parquet(str(run_dir / "compare" / "partitions.parquet")).where("in_scope")
    loss_per_partition = F.when(F.col("dst_present"), F.greatest(F.lit(0), F.col("lag_records"))).otherwise(
        F.col("src_retained_records")
    )
    loss = parts.agg(F.coalesce(F.sum(loss_per_partition), F.lit(0)).alias("x")).first()["x"]
    offsets = spark.read.parquet(str(run_dir / "compare" / "group_offsets.parquet")).where(
        F.col("sync_candidate") & F.col("dst_committed_offset").isNotNull()
    )
    reprocess = offsets.agg(
        F.coalesce(F.sum(F.greatest(F.lit(0), -F.col("sync_delta"))), F.lit(0)).alias("x")
    ).first()["x"]
    return ReadinessFigures(int(loss), int(reprocess))
