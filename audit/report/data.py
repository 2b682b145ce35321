"""The bounded slices of the comparison tables that the report shows.

Only the worst N rows per chart reach the driver (Spark sorts and limits), so the report's
size and the driver's memory stay flat however many partitions and groups there are.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHART_ROWS = 40


@dataclass(frozen=True)
class ReportData:
    totals: dict[str, int]
    lag: tuple[dict[str, Any], ...]
    epochs: tuple[dict[str, Any], ...]
    group_positions: tuple[dict[str, Any], ...]


def _rows(df: Any) -> tuple[dict[str, Any], ...]:
    return tuple(r.asDict() for r in df.collect())


def collect_report_data(spark: Any, run_dir: Path, limit: int = CHART_ROWS) -> ReportData:
    from pyspark.sql import functions as F

    parts = spark.read.parquet(str(run_dir / "compare" / "partitions.parquet")).where("in_scope")
    offsets = spark.read.parquet(str(run_dir / "compare" / "group_offsets.parquet"))
    t = parts.agg(
        F.count("*").alias("partitions"),
        F.coalesce(F.sum(F.greatest(F.lit(0), F.col("lag_records"))), F.lit(0)).alias("total_lag_records"),
        F.sum(F.col("dst_present").cast("int")).alias("mirrored_partitions"),
    ).first()
    totals = {k: int(t[k] or 0) for k in ("partitions", "total_lag_records", "mirrored_partitions")}
    totals["group_partitions"] = offsets.where("topic_in_scope").count()
    lag = parts.where("dst_present").orderBy(F.desc("lag_records"), "topic", "partition").limit(limit)
    epochs = parts.where("dst_present").orderBy(F.asc("epoch_headroom"), "topic", "partition").limit(limit)
    positions = (
        offsets.where("topic_in_scope AND dst_partition_known")
        .withColumn("dist", F.abs(F.coalesce("sync_delta", F.lit(0))))
        .orderBy(F.desc("dist"), "group_id", "topic", "partition")
        .limit(limit)
    )
    return ReportData(
        totals=totals,
        lag=_rows(
            lag.select(
                "topic", "partition", "lag_records", "lag_seconds", "src_high_watermark", "dst_high_watermark"
            )
        ),
        epochs=_rows(
            epochs.select("topic", "partition", "src_leader_epoch", "dst_leader_epoch", "epoch_headroom")
        ),
        group_positions=_rows(
            positions.select(
                "group_id",
                "topic",
                "partition",
                "dst_log_start_offset",
                "dst_high_watermark",
                "dst_committed_offset",
                "expected_offset",
                "dst_active",
            )
        ),
    )
