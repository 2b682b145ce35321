"""Record-level comparison: both sides' chunk checksums, gaps and record epochs.

A record scan reads the same chunks on both clusters, so chunks join on their bounds. A
chunk is ``same`` when checksum and gaps agree; on a compacted topic the two log cleaners
legitimately keep different offsets, so a chunk whose narrowing found the records equal
wherever both sides hold one is ``tolerated`` and its gaps are not compared, nor its record
epochs (each side's epoch runs cover other records). A differing compacted chunk that was
not narrowed (past ``records.narrow_max_chunks``) is ``unverified``: whether only
compaction sets it apart is not known yet, so it neither fails CM-DATA-1 nor counts as
verified, and the next run narrows it.
"""

from __future__ import annotations

from typing import Any

from audit.collect.records.pairs import CHUNK_KEY, paired_chunks
from audit.compare.batches import with_scope
from audit.compare.sql import TableRows
from audit.config import AuditConfig

ROWS = TableRows(
    "record_chunk_diffs",
    ("topic", "partition", "chunk_start"),
    shown=(
        "chunk_end",
        "chunk_status",
        "divergence_offset",
        "divergence_kind",
        "source_record",
        "destination_record",
        "src_record_count",
        "dst_record_count",
        "src_gap_count",
        "dst_gap_count",
        "src_max_record_epoch",
        "dst_max_record_epoch",
        "dst_leader_epoch",
    ),
)


def compare_record_chunks(
    src_chunks: Any,
    dst_chunks: Any,
    divergences: Any | None,
    dst_partitions: Any,
    topic_scope: Any,
    cfg: AuditConfig,
) -> Any:
    """One row per chunk read on either side, with its status and, where the chunk was
    narrowed, its first divergent record."""
    from pyspark.sql import functions as F

    keys = list(CHUNK_KEY)
    j = paired_chunks(src_chunks, dst_chunks)
    if divergences is not None:
        j = j.join(
            divergences.select(
                *keys,
                F.col("offset").alias("divergence_offset"),
                F.col("kind").alias("divergence_kind"),
                "source_record",
                "destination_record",
            ),
            keys,
            "left",
        )
    else:
        j = (
            j.withColumn("divergence_offset", F.lit(None).cast("long"))
            .withColumn("divergence_kind", F.lit(None).cast("string"))
            .withColumn("source_record", F.lit(None).cast("string"))
            .withColumn("destination_record", F.lit(None).cast("string"))
        )
    dle = dst_partitions.select("topic", "partition", F.col("leader_epoch").alias("dst_leader_epoch"))
    j = j.join(dle, ["topic", "partition"], "left")
    both = F.col("src_present") & F.col("dst_present")
    checksums_equal = F.col("src_checksum") == F.col("dst_checksum")
    gaps_equal = F.col("src_gaps_checksum") == F.col("dst_gaps_checksum")
    status = (
        F.when(~F.col("dst_present"), F.lit("missing_on_destination"))
        .when(~F.col("src_present"), F.lit("missing_on_source"))
        .when(F.col("agree"), F.lit("same"))
        .when(F.col("compacted") & (F.col("divergence_kind") == "compaction_only"), F.lit("tolerated"))
        .when(F.col("compacted") & F.col("divergence_kind").isNull(), F.lit("unverified"))
        .otherwise(F.lit("differs"))
    )
    return (
        with_scope(j, topic_scope)
        .withColumn("checksums_equal", F.when(both, checksums_equal))
        .withColumn("gaps_equal", F.when(both & ~F.col("compacted"), gaps_equal))
        .withColumn("chunk_status", status)
        .withColumn(
            "dst_epoch_within_dle",
            F.when(
                F.col("dst_present")
                & F.col("dst_max_record_epoch").isNotNull()
                & F.col("dst_leader_epoch").isNotNull(),
                F.col("dst_max_record_epoch") <= F.col("dst_leader_epoch"),
            ),
        )
        # The epoch runs pin the epoch of every offset a chunk holds: equal runs, equal
        # epochs offset by offset (where both sides hold the same offsets).
        .withColumn("epochs_equal", F.when(both, F.col("src_epoch_runs") == F.col("dst_epoch_runs")))
        # That holds only where both sides hold the same records: on a compacted topic
        # whose chunks differ (tolerated), each cleaner removed other records, and with
        # them other epochs.
        .withColumn(
            "epochs_must_match",
            F.lit(cfg.mirror.preserves_batch_epochs) & both & (~F.col("compacted") | checksums_equal),
        )
    )
