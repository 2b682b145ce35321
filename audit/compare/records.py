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
from audit.compare.sql import DST_EPOCH, READ_IMPOSSIBLE, Cause, TableRows, causes
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
    causes=(
        *causes(
            READ_IMPOSSIBLE,
            (
                "the records of the range on the source (the scan did not read it whole: refused, failed, "
                "no task, or no account of it; see src_read_detail)",
                "src_read_whole IS NULL OR NOT src_read_whole",
            ),
            (
                "the records of the range on the destination (the scan did not read it whole: refused, "
                "failed, no task, or no account of it; see dst_read_detail)",
                "dst_read_whole IS NULL OR NOT dst_read_whole",
            ),
            DST_EPOCH,
            ("record leader epochs of the chunk (no record in it)", "dst_max_record_epoch IS NULL"),
        ),
        # Passed by its checks without being verified: a compacted chunk whose difference
        # the narrowing budget did not reach.
        Cause(
            "a compacted chunk not narrowed to a compaction-only difference (records.narrow_max_chunks)",
            "in_scope AND chunk_status = 'unverified'",
            passed_unverified=True,
        ),
    ),
)


def _read_accounts(src_ranges: Any | None, dst_ranges: Any | None) -> Any:
    """Per range a records scan planned (both sides plan the same ranges), what each side
    said it read (``record_chunk_ranges``): ``{side}_read_whole`` (read to its end: its
    chunks are all there is), ``read_impossible`` (an account contradicting itself: read_to
    outside the range, or complete short of its end) and why a side stopped. A side with no
    account of a range did not say it read it: null, never whole."""
    from pyspark.sql import functions as F

    key = ["topic", "partition", "start_offset", "end_offset"]

    def side(df: Any, prefix: str) -> Any:
        return df.groupBy(*key).agg(
            F.min(F.col("complete") & (F.col("read_to") == F.col("end_offset"))).alias(f"{prefix}read_whole"),
            F.max(
                (F.col("read_to") < F.col("start_offset"))
                | (F.col("read_to") > F.col("end_offset"))
                | (F.col("complete") & (F.col("read_to") != F.col("end_offset")))
            ).alias(f"{prefix}read_impossible"),
            F.min(F.when(~F.col("complete"), F.col("detail"))).alias(f"{prefix}read_detail"),
            F.max("compacted").alias(f"{prefix}compacted"),
        )

    sides = []
    template = src_ranges if src_ranges is not None else dst_ranges
    for df, prefix in ((src_ranges, "src_"), (dst_ranges, "dst_")):
        if df is None:  # no account at all on this side: the other side's ranges, unread here
            sides.append(
                side(template, prefix)
                .withColumn(f"{prefix}read_whole", F.lit(None).cast("boolean"))
                .withColumn(f"{prefix}read_impossible", F.lit(False))
                .withColumn(f"{prefix}read_detail", F.lit("no account of what the scan read on this side"))
            )
        else:
            sides.append(side(df, prefix))
    joined = sides[0].join(sides[1], key, "full_outer")
    unaccounted = F.lit("no account of the range")
    impossible = F.coalesce("src_read_impossible", F.lit(False)) | F.coalesce(
        "dst_read_impossible", F.lit(False)
    )
    return joined.select(
        *key,
        "src_read_whole",
        "dst_read_whole",
        impossible.alias("read_impossible"),
        *[
            F.coalesce(f"{p}read_detail", F.when(F.col(f"{p}read_whole").isNull(), unaccounted)).alias(
                f"{p}read_detail"
            )
            for p in ("src_", "dst_")
        ],
        F.coalesce("src_compacted", "dst_compacted", F.lit(False)).alias("range_compacted"),
    )


def compare_record_chunks(
    src_chunks: Any,
    dst_chunks: Any,
    divergences: Any | None,
    dst_partitions: Any,
    topic_scope: Any,
    cfg: AuditConfig,
    src_ranges: Any | None = None,
    dst_ranges: Any | None = None,
) -> Any:
    """One row per chunk read on either side, with its status and, where the chunk was
    narrowed, its first divergent record; a range a side did not read whole (refused,
    failed, no task, an impossible account, or none) is one row of its own instead of its
    chunks, with null statuses: its checks count it unchecked, never passed nor failed as
    records missing on the side whose read failed."""
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
    if src_ranges is None and dst_ranges is None:
        # Neither side says what it read (a scan of an earlier version): every chunk unread.
        j = (
            j.withColumn("src_read_whole", F.lit(None).cast("boolean"))
            .withColumn("dst_read_whole", F.lit(None).cast("boolean"))
            .withColumn("read_impossible", F.lit(False))
            .withColumn("src_read_detail", F.lit("no account of what the scan read (record_chunk_ranges)"))
            .withColumn("dst_read_detail", F.lit("no account of what the scan read (record_chunk_ranges)"))
        )
    else:
        reads = F.broadcast(_read_accounts(src_ranges, dst_ranges).alias("r"))
        read_whole = (
            F.coalesce(F.col("src_read_whole"), F.lit(False))
            & F.coalesce(F.col("dst_read_whole"), F.lit(False))
            & ~F.col("read_impossible")
        )
        placed = j.alias("c").join(
            reads,
            (F.col("c.topic") == F.col("r.topic"))
            & (F.col("c.partition") == F.col("r.partition"))
            & (F.col("c.chunk_start") >= F.col("r.start_offset"))
            & (F.col("c.chunk_start") < F.col("r.end_offset")),
            "left",
        )
        # Chunks of ranges read whole on both sides, and chunks no range accounts for (their
        # read columns null: unchecked); a range not read whole is one row of its own.
        chunks = placed.where(read_whole | F.col("r.start_offset").isNull()).select(
            "c.*", "src_read_whole", "dst_read_whole", "read_impossible", "src_read_detail", "dst_read_detail"
        )
        unread = reads.where(~read_whole).select(
            "topic",
            "partition",
            F.col("start_offset").alias("chunk_start"),
            F.col("end_offset").alias("chunk_end"),
            F.col("range_compacted").alias("compacted"),
            "src_read_whole",
            "dst_read_whole",
            "read_impossible",
            "src_read_detail",
            "dst_read_detail",
        )
        j = chunks.unionByName(unread, allowMissingColumns=True)
    dle = dst_partitions.select("topic", "partition", F.col("leader_epoch").alias("dst_leader_epoch"))
    j = j.join(dle, ["topic", "partition"], "left")
    # Judged only where both sides read the chunk's range whole: otherwise every status is
    # null (the checks' "missing": unchecked, with the cause coverage.py names).
    judged = (
        F.coalesce(F.col("src_read_whole"), F.lit(False))
        & F.coalesce(F.col("dst_read_whole"), F.lit(False))
        & ~F.coalesce(F.col("read_impossible"), F.lit(True))
    )

    def when_read(column: Any) -> Any:
        return F.when(judged, column)

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
        .withColumn("checksums_equal", when_read(F.when(both, checksums_equal)))
        .withColumn("gaps_equal", when_read(F.when(both & ~F.col("compacted"), gaps_equal)))
        .withColumn("chunk_status", when_read(status))
        .withColumn(
            "dst_epoch_within_dle",
            when_read(
                F.when(
                    F.col("dst_present")
                    & F.col("dst_max_record_epoch").isNotNull()
                    & F.col("dst_leader_epoch").isNotNull(),
                    F.col("dst_max_record_epoch") <= F.col("dst_leader_epoch"),
                )
            ),
        )
        # The epoch runs pin the epoch of every offset a chunk holds: equal runs, equal
        # epochs offset by offset (where both sides hold the same offsets).
        .withColumn(
            "epochs_equal", when_read(F.when(both, F.col("src_epoch_runs") == F.col("dst_epoch_runs")))
        )
        # That holds only where both sides hold the same records: on a compacted topic
        # whose chunks differ (tolerated), each cleaner removed other records, and with
        # them other epochs.
        .withColumn(
            "epochs_must_match",
            F.lit(cfg.mirror.preserves_batch_epochs) & both & (~F.col("compacted") | checksums_equal),
        )
    )
