"""The bounded slices of the comparison tables that the report shows.

Only the worst N rows per chart reach the driver (Spark sorts and limits), so the report's
size and the driver's memory stay flat however many partitions and groups there are. The
in-process engine's frames are already in memory; the same slices are taken with pandas.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from audit.compare.run import Compared

CHART_ROWS = 40


@dataclass(frozen=True)
class ReportData:
    totals: Mapping[str, int | None]
    lag: tuple[dict[str, Any], ...]
    epochs: tuple[dict[str, Any], ...]
    group_positions: tuple[dict[str, Any], ...]


def _rows(df: Any) -> tuple[dict[str, Any], ...]:
    return tuple(r.asDict() for r in df.collect())


LAG_COLUMNS = ("topic", "partition", "lag_records", "lag_seconds", "src_high_watermark", "dst_high_watermark")
EPOCH_COLUMNS = ("topic", "partition", "src_leader_epoch", "dst_leader_epoch", "epoch_headroom")
POSITION_COLUMNS = (
    "group_id",
    "topic",
    "partition",
    "dst_log_start_offset",
    "dst_high_watermark",
    "dst_committed_offset",
    "expected_offset",
    "dst_active",
)


def collect_report_data(compared: Compared, limit: int = CHART_ROWS) -> ReportData:
    if "partitions" not in compared.frames:  # mode mm2: no equal-offset partition charts
        return _mm2(compared.frames)
    if compared.engine == "local":
        return _local(compared.frames["partitions"], compared.frames["group_offsets"], limit)
    return _spark(compared.frames["partitions"], compared.frames["group_offsets"], limit)


def _spark(partitions: Any, offsets: Any, limit: int) -> ReportData:
    from pyspark.sql import functions as F

    parts = partitions.where("in_scope")
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
        lag=_rows(lag.select(*LAG_COLUMNS)),
        epochs=_rows(epochs.select(*EPOCH_COLUMNS)),
        group_positions=_rows(positions.select(*POSITION_COLUMNS)),
    )


def _local(partitions: Any, offsets: Any, limit: int) -> ReportData:
    parts = partitions[partitions["in_scope"].fillna(False)]
    mirrored = parts[parts["dst_present"]]
    totals = {
        "partitions": len(parts),
        "total_lag_records": int(parts["lag_records"].clip(lower=0).sum()),
        "mirrored_partitions": len(mirrored),
        "group_partitions": int(offsets["topic_in_scope"].fillna(False).sum()),
    }
    # Spark's orderBy puts nulls first ascending and last descending; so does na_position here.
    lag = mirrored.sort_values(
        ["lag_records", "topic", "partition"], ascending=[False, True, True], na_position="last"
    )
    epochs = mirrored.sort_values(["epoch_headroom", "topic", "partition"], na_position="first")
    known = offsets[offsets["topic_in_scope"].fillna(False) & offsets["dst_partition_known"].fillna(False)]
    known = known.assign(dist=known["sync_delta"].fillna(0).abs())
    positions = known.sort_values(
        ["dist", "group_id", "topic", "partition"], ascending=[False, True, True, True]
    )
    return ReportData(
        totals=totals,
        lag=_records(lag.head(limit), LAG_COLUMNS),
        epochs=_records(epochs.head(limit), EPOCH_COLUMNS),
        group_positions=_records(positions.head(limit), POSITION_COLUMNS),
    )


def _records(df: Any, columns: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
    """Plain Python values (None for missing), as Spark's Row.asDict() gives them."""
    import pyarrow as pa

    return tuple(pa.Table.from_pandas(df[list(columns)], preserve_index=False).to_pylist())


def _mm2(frames: dict[str, Any]) -> ReportData:
    """Mode mm2: the lag chart shows unreplicated records per partition (from the offset
    syncs); there are no leader-epoch or group-position charts under translation."""
    from pyspark.sql import functions as F

    parts = frames["mm2_partitions"].where("in_scope")
    t = parts.agg(
        F.count("*").alias("partitions"),
        F.coalesce(F.sum(F.greatest(F.lit(0), F.col("unreplicated_records"))), F.lit(0)).alias("lag"),
        F.sum(F.col("dst_present").cast("int")).alias("mirrored"),
    ).first()
    lag = (
        parts.where("has_sync")
        .orderBy(F.desc("unreplicated_records"), "topic", "partition")
        .limit(CHART_ROWS)
        .select(
            "topic",
            "partition",
            F.col("unreplicated_records").alias("lag_records"),
            F.lit(None).cast("double").alias("lag_seconds"),
            "src_high_watermark",
            "dst_high_watermark",
        )
    )
    return ReportData(
        totals={
            "partitions": int(t["partitions"] or 0),
            "total_lag_records": int(t["lag"] or 0),
            "mirrored_partitions": int(t["mirrored"] or 0),
            "group_partitions": frames["mm2_group_offsets"].where("in_scope").count(),
        },
        lag=_rows(lag),
        epochs=(),
        group_positions=(),
    )


# --------------------------------------------------------------------------- batch level

DIVERGENCE_PARTITIONS = 20
BATCH_HEADER_FIELDS = (
    "last_offset",
    "crc",
    "producer_id",
    "producer_epoch",
    "attributes",
    "compression",
    "is_transactional",
    "is_control",
    "control_type",  # a marker's type (0 ABORT, 1 COMMIT): a changed marker shows here
    "partition_leader_epoch",
    "record_count",
    "size_bytes",
    "base_sequence",
    "file",
    "position",
)


def _first_per_partition(bad: Any, order: str, count_as: str, limit: int) -> Any:
    """The first row by ``order`` of each partition among ``bad`` rows, with how many bad
    rows the partition has (``count_as``); the partitions with the most first, at most
    ``limit`` (a bounded slice: Spark sorts and limits before anything reaches the driver)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    per_partition = Window.partitionBy("topic", "partition")
    return (
        bad.withColumn("n", F.row_number().over(per_partition.orderBy(order)))
        .withColumn(count_as, F.count("*").over(per_partition))
        .where("n = 1")
        .orderBy(F.desc(count_as), "topic", "partition")
        .limit(limit)
    )


def first_batch_divergence(compared: Compared, limit: int = DIVERGENCE_PARTITIONS) -> list[dict[str, Any]]:
    """Per partition, the first batch that is not the same on both sides, with both
    headers side by side ("fields": name, source, destination), at most ``limit``
    partitions (the worst first: the most differing batches). Empty when batches were not
    compared."""
    df = compared.frames.get("batch_diffs")
    if df is None:
        return []

    first = _first_per_partition(
        df.where("in_scope AND batch_status != 'same'"), "base_offset", "differing_batches", limit
    )
    out = []
    for r in first.collect():
        row = r.asDict()
        out.append(
            {
                "topic": row["topic"],
                "partition": row["partition"],
                "base_offset": row["base_offset"],
                "status": row["batch_status"],
                "differing_fields": row["differing_fields"],
                "differing_batches": row["differing_batches"],
                "fields": [
                    {"name": f, "source": row.get(f"src_{f}"), "destination": row.get(f"dst_{f}")}
                    for f in BATCH_HEADER_FIELDS
                ],
            }
        )
    return out


# --------------------------------------------------------------------------- record level


def first_record_divergence(compared: Compared, limit: int = DIVERGENCE_PARTITIONS) -> list[dict[str, Any]]:
    """Per partition, its first chunk that is not the same on both sides, with the first
    divergent record where the chunk was narrowed (offset, kind, both sides abbreviated),
    the partitions with the most differing chunks first, at most ``limit``."""
    df = compared.frames.get("record_chunk_diffs")
    if df is None:
        return []
    from pyspark.sql import functions as F

    bad = df.where("in_scope AND chunk_status NOT IN ('same', 'tolerated', 'unverified')")
    first = _first_per_partition(bad, "chunk_start", "differing_chunks", limit).select(
        "topic",
        "partition",
        "chunk_start",
        "chunk_end",
        "chunk_status",
        "differing_chunks",
        F.col("divergence_offset").alias("offset"),
        F.col("divergence_kind").alias("kind"),
        "source_record",
        "destination_record",
    )
    return [r.asDict() for r in first.collect()]
