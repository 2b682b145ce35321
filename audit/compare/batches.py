"""Batch-level comparison jobs: record batches and transaction markers of both sides.

A byte-for-byte mirror (KIP-1279, Cluster Linking) copies every record batch unchanged, so
inside the offset range both sides hold, each batch must match its source batch in base
and last offset, CRC (which covers attributes, producer fields and every record), producer
id and epoch and attributes. The partition leader epoch is outside the CRC (the mirror may
rewrite it), so it is checked apart: never above the destination's leader epoch, and equal
to the source's only where the mirror promises to keep it.

Every table here grows with the data (a row per batch) and stays in Spark.
"""

from __future__ import annotations

from typing import Any

from audit.collect.batches.closure import transaction_closure
from audit.compare.sql import DST_EPOCH, TableRows, causes
from audit.config import AuditConfig
from audit.schemas import BATCH_SIDE, MARKER_SIDE


def _uncompared(status: str) -> tuple[tuple[str, str], ...]:
    """Why a row of a partition not wholly compared is unchecked (``status`` null there), on
    both tables that leave such a partition unchecked."""
    return (
        (
            "the remote tier of a tiered partition (remote tier not read: the segment scan read the "
            "local log only)",
            f"{status} IS NULL AND remote_tier_unread",
        ),
        (
            "the batches of the partition on one side (no scan read any, though both sides hold records)",
            f"{status} IS NULL",
        ),
    )


# How the data-level tables' rows are named (key, example columns): declared with the
# tables, as ``Comparison`` declares them for the SQL ones.
BATCH_DIFF_ROWS = TableRows(
    "batch_diffs",
    ("topic", "partition", "base_offset"),
    shown=(
        "batch_status",
        "differing_fields",
        "src_last_offset",
        "dst_last_offset",
        "src_crc",
        "dst_crc",
        "src_producer_id",
        "dst_producer_id",
        "src_producer_epoch",
        "dst_producer_epoch",
        "src_attributes",
        "dst_attributes",
        "src_partition_leader_epoch",
        "dst_partition_leader_epoch",
        "dst_leader_epoch",
        "dst_file",
        "dst_position",
    ),
    causes=causes(*_uncompared("batch_status"), DST_EPOCH),
)

MARKER_DIFF_ROWS = TableRows(
    "marker_diffs",
    ("topic", "partition", "offset"),
    shown=(
        "marker_status",
        "src_marker",
        "dst_marker",
        "src_producer_id",
        "dst_producer_id",
        "dst_file",
        "dst_position",
    ),
    causes=causes(*_uncompared("marker_status")),
)

TXN_CLOSURE_ROWS = TableRows(
    "txn_closure",
    ("side", "topic", "partition", "base_offset"),
    shown=(
        "last_offset",
        "producer_id",
        "producer_epoch",
        "control_type",
        "last_stable_offset",
    ),
    causes=causes(
        ("the last stable offset of the partition (absent from the snapshot)", "last_stable_offset IS NULL")
    ),
)

SCAN_ISSUE_ROWS = TableRows(
    "scan_issues",
    ("side", "topic", "partition", "file", "position"),
    shown=(
        "kind",
        "severity",
        "detail",
    ),
)

COMMIT_EPOCH_ROWS = TableRows(
    "commit_epochs",
    ("group_id", "topic", "partition"),
    shown=(
        "src_committed_offset",
        "dst_committed_offset",
        "dst_committed_leader_epoch",
        "batch_leader_epoch",
        "batch_base_offset",
    ),
    causes=causes(
        (
            "the destination batch holding the committed offset (not among the batches read)",
            "batch_leader_epoch IS NULL",
        ),
    ),
)

ROWS = (BATCH_DIFF_ROWS, MARKER_DIFF_ROWS, TXN_CLOSURE_ROWS, SCAN_ISSUE_ROWS, COMMIT_EPOCH_ROWS)

# The fields a byte-for-byte copy keeps; a difference in any is a differing batch (the
# others of BATCH_SIDE are shown beside them: implied by the CRC or outside it).
BATCH_FIELDS = ("last_offset", "crc", "producer_id", "producer_epoch", "attributes")


def with_scope(df: Any, topic_scope: Any) -> Any:
    """``in_scope`` from the verdicts on topic names (``compare/scope.py``); a row with no
    topic (a segment outside any partition directory) cannot be shown to be out of scope,
    so it counts."""
    from pyspark.sql import functions as F

    verdicts = topic_scope.select(F.col("topic").alias("_scope_topic"), F.col("in_scope").alias("_in_scope"))
    return (
        df.join(verdicts, df["topic"] == verdicts["_scope_topic"], "left")
        .withColumn("in_scope", F.when(F.col("topic").isNull(), F.lit(True)).otherwise(F.col("_in_scope")))
        .drop("_scope_topic", "_in_scope")
    )


def covered_ranges(batches: Any, prefix: str) -> Any:
    """Per partition: [first base offset, end of the last batch) the scan covered."""
    from pyspark.sql import functions as F

    return batches.groupBy("topic", "partition").agg(
        F.min("base_offset").alias(f"{prefix}first_offset"),
        (F.max("last_offset") + 1).alias(f"{prefix}end_offset"),
    )


def common_range(src_batches: Any, dst_batches: Any) -> Any:
    """Per partition scanned on both sides: [range_start, range_end), the offsets both hold."""
    from pyspark.sql import functions as F

    return (
        covered_ranges(src_batches, "src_")
        .join(covered_ranges(dst_batches, "dst_"), ["topic", "partition"], "inner")
        .withColumn("range_start", F.greatest("src_first_offset", "dst_first_offset"))
        .withColumn("range_end", F.least("src_end_offset", "dst_end_offset"))
    )


def _side(batches: Any, prefix: str) -> Any:
    from pyspark.sql import functions as F

    return batches.select(
        "topic", "partition", "base_offset", *[F.col(c).alias(prefix + c) for c in BATCH_SIDE]
    ).withColumn(f"{prefix}present", F.lit(True))


def uncompared_partitions(
    src_batches: Any, dst_batches: Any, src_partitions: Any, dst_partitions: Any
) -> Any:
    """Partitions both snapshots say hold records (high watermark past the log start) whose
    retained offsets were not all compared, one unchecked row each, never passed by
    omission; ``base_offset`` is where the comparison would have started (the later log
    start):

    - a side's scan read no batch of it (a log dir scanned without the partition's replica,
      a fetch that read nothing): ``remote_tier_unread`` where that side is tiered, since
      all its log dir holds then is in the remote tier;
    - a tiered side's scan began above the common log start: the older offsets lie in the
      remote tier, which a scan of the brokers' log dirs does not hold
      (``remote_tier_unread``). Only tiered partitions: a compacted or partly scanned
      partition may also begin above its log start, but tiered storage refuses compacted
      topics, so there the gap is the remote tier's.

    A partition empty on a side has nothing to compare; what it lacks is the metadata
    invariants'."""
    from pyspark.sql import functions as F

    def holding(parts: Any, batches: Any, prefix: str) -> Any:
        return (
            parts.where(F.col("high_watermark") > F.col("log_start_offset"))
            .select(
                "topic",
                "partition",
                F.col("log_start_offset").alias(f"{prefix}log_start"),
                F.coalesce(F.col("remote_storage"), F.lit(False)).alias(f"{prefix}tiered"),
            )
            .join(covered_ranges(batches, prefix), ["topic", "partition"], "left")
        )

    start = F.greatest("src_log_start", "dst_log_start")
    src_unread, dst_unread = F.col("src_first_offset").isNull(), F.col("dst_first_offset").isNull()

    def below_remote(prefix: str) -> Any:
        return F.coalesce(F.col(f"{prefix}tiered") & (F.col(f"{prefix}first_offset") > start), F.lit(False))

    unread = src_unread | dst_unread
    return (
        holding(src_partitions, src_batches, "src_")
        .join(holding(dst_partitions, dst_batches, "dst_"), ["topic", "partition"])
        .where(unread | below_remote("src_") | below_remote("dst_"))
        .select(
            "topic",
            "partition",
            start.alias("base_offset"),
            F.when(unread, (src_unread & F.col("src_tiered")) | (dst_unread & F.col("dst_tiered")))
            .otherwise(F.lit(True))
            .alias("remote_tier_unread"),
        )
    )


def compare_batches(
    src_batches: Any,
    dst_batches: Any,
    src_partitions: Any,
    dst_partitions: Any,
    topic_scope: Any,
    cfg: AuditConfig,
) -> Any:
    """One row per batch start offset inside the common range of a partition, either side,
    and one per partition whose retained offsets were not all compared
    (``uncompared_partitions``).

    ``batch_status``: same | differs | missing_on_destination | extra_on_destination, or
    null where the partition was not read (unchecked); ``differing_fields`` names what
    differs. ``dst_epoch_within_dle``: the destination batch's partition leader epoch is <=
    the destination partition's leader epoch (DLE); ``epochs_equal``: the epochs of both
    sides agree (asserted only when ``mirror.preserves_batch_epochs``)."""
    from pyspark.sql import functions as F

    ranges = common_range(src_batches, dst_batches).select("topic", "partition", "range_start", "range_end")
    in_range = (F.col("base_offset") >= F.col("range_start")) & (F.col("base_offset") < F.col("range_end"))
    s = _side(src_batches, "src_").join(ranges, ["topic", "partition"]).where(in_range)
    d = _side(dst_batches, "dst_").join(ranges, ["topic", "partition"]).where(in_range)
    d = d.drop("range_start", "range_end")
    dle = dst_partitions.select("topic", "partition", F.col("leader_epoch").alias("dst_leader_epoch"))
    j = (
        s.drop("range_start", "range_end")
        .join(d, ["topic", "partition", "base_offset"], "full_outer")
        .join(ranges, ["topic", "partition"], "left")
        .join(dle, ["topic", "partition"], "left")
        .withColumn("src_present", F.coalesce("src_present", F.lit(False)))
        .withColumn("dst_present", F.coalesce("dst_present", F.lit(False)))
    )
    # A batch is on one side at least; a row on neither is a partition no scan read.
    uncompared = (
        uncompared_partitions(src_batches, dst_batches, src_partitions, dst_partitions)
        .join(dle, ["topic", "partition"], "left")
        .withColumn("src_present", F.lit(False))
        .withColumn("dst_present", F.lit(False))
    )
    j = j.unionByName(uncompared, allowMissingColumns=True)
    diffs = F.concat_ws(
        ",",
        *[F.when(~F.col(f"src_{c}").eqNullSafe(F.col(f"dst_{c}")), F.lit(c)) for c in BATCH_FIELDS],
    )
    status = (
        F.when(~F.col("src_present") & ~F.col("dst_present"), F.lit(None).cast("string"))
        .when(~F.col("dst_present"), F.lit("missing_on_destination"))
        .when(~F.col("src_present"), F.lit("extra_on_destination"))
        .when(F.col("differing_fields") != "", F.lit("differs"))
        .otherwise(F.lit("same"))
    )
    return (
        with_scope(j, topic_scope)
        .withColumn("differing_fields", F.when(F.col("src_present") & F.col("dst_present"), diffs))
        .withColumn("batch_status", status)
        .withColumn("batches_identical", F.col("batch_status") == "same")
        .withColumn(
            "dst_epoch_within_dle",
            F.when(
                F.col("dst_present") & F.col("dst_leader_epoch").isNotNull(),
                F.col("dst_partition_leader_epoch") <= F.col("dst_leader_epoch"),
            ),
        )
        .withColumn(
            "epochs_equal",
            F.when(
                F.col("src_present") & F.col("dst_present"),
                F.col("src_partition_leader_epoch") == F.col("dst_partition_leader_epoch"),
            ),
        )
        .withColumn(
            "epochs_must_match",
            F.lit(cfg.mirror.preserves_batch_epochs) & F.col("src_present") & F.col("dst_present"),
        )
    )


def compare_commit_epochs(group_offsets: Any, dst_batches: Any) -> Any:
    """CM-EPOCH-3 exactly, where the destination's batches were read: a commit the sync
    moved up to the destination's log start (the source's committed offset lies below it)
    carries the leader epoch of the destination batch holding that offset, as KIP-1279's
    prototype writes a clamped commit (the epoch at the offset, from its log's epoch cache).
    One row per such commit of the ``group_offsets`` comparison. A commit clamped to the
    destination's LEO is not here: no batch holds that offset (records appended since
    would carry a later epoch), so it keeps only the <= DLE check. A commit whose offset no
    batch read holds leaves ``epoch_at_offset_matches`` null: unchecked, never passed.

    The commits are few (one per group partition moved by the clamp) and broadcast; the
    batches are streamed past them once."""
    from pyspark.sql import functions as F

    key = ["group_id", "topic", "partition"]
    moved = group_offsets.where(
        F.col("sync_candidate")
        & (F.col("expected_offset") != F.col("src_committed_offset"))
        & (F.col("dst_committed_offset") == F.col("expected_offset"))
        & (F.col("dst_committed_offset") < F.col("dst_high_watermark"))
    ).select(
        *key,
        "src_committed_offset",
        "dst_committed_offset",
        "dst_committed_leader_epoch",
        F.col("topic_in_scope").alias("in_scope"),
    )
    batches = dst_batches.select(
        F.col("topic").alias("b_topic"),
        F.col("partition").alias("b_partition"),
        "base_offset",
        "last_offset",
        "partition_leader_epoch",
    )
    holding = (
        batches.join(
            F.broadcast(moved.select(*key, "dst_committed_offset")),
            (F.col("b_topic") == F.col("topic"))
            & (F.col("b_partition") == F.col("partition"))
            & (F.col("base_offset") <= F.col("dst_committed_offset"))
            & (F.col("last_offset") >= F.col("dst_committed_offset")),
        )
        .groupBy(*key)
        .agg(
            F.max("base_offset").alias("batch_base_offset"),
            F.max_by("partition_leader_epoch", "base_offset").alias("batch_leader_epoch"),
        )
    )
    return moved.join(holding, key, "left").withColumn(
        "epoch_at_offset_matches",
        F.when(
            F.col("batch_leader_epoch").isNotNull(),
            F.coalesce(F.col("dst_committed_leader_epoch") == F.col("batch_leader_epoch"), F.lit(False)),
        ),
    )


def compare_markers(
    src_markers: Any,
    dst_markers: Any,
    src_batches: Any,
    dst_batches: Any,
    src_partitions: Any,
    dst_partitions: Any,
    topic_scope: Any,
) -> Any:
    """One row per marker offset inside the common range, either side: CM-TXN-2 asks that
    both sides have it, of the same type. And one unchecked row (``marker_status`` null)
    per partition whose retained offsets were not all compared (``uncompared_partitions``:
    unread on a side, or a tiered side's remote tier not read): the markers there were not
    compared either, so CM-TXN-2 cannot pass over them by their absence."""
    from pyspark.sql import functions as F

    ranges = common_range(src_batches, dst_batches).select("topic", "partition", "range_start", "range_end")
    in_range = (F.col("offset") >= F.col("range_start")) & (F.col("offset") < F.col("range_end"))

    def side(markers: Any, prefix: str) -> Any:
        return (
            markers.join(ranges, ["topic", "partition"])
            .where(in_range)
            .select("topic", "partition", "offset", *[F.col(c).alias(prefix + c) for c in MARKER_SIDE])
            .withColumn(f"{prefix}present", F.lit(True))
        )

    uncompared = (
        uncompared_partitions(src_batches, dst_batches, src_partitions, dst_partitions)
        .withColumnRenamed("base_offset", "offset")
        .withColumn("src_present", F.lit(False))
        .withColumn("dst_present", F.lit(False))
    )
    j = (
        side(src_markers, "src_")
        .join(side(dst_markers, "dst_"), ["topic", "partition", "offset"], "full_outer")
        .withColumn("src_present", F.coalesce("src_present", F.lit(False)))
        .withColumn("dst_present", F.coalesce("dst_present", F.lit(False)))
        .unionByName(uncompared, allowMissingColumns=True)
    )
    status = (
        F.when(~F.col("src_present") & ~F.col("dst_present"), F.lit(None).cast("string"))
        .when(~F.col("dst_present"), F.lit("missing_on_destination"))
        .when(~F.col("src_present"), F.lit("extra_on_destination"))
        .when(~F.col("src_control_type").eqNullSafe(F.col("dst_control_type")), F.lit("type_differs"))
        .otherwise(F.lit("same"))
    )
    return (
        with_scope(j, topic_scope)
        .withColumn("marker_status", status)
        .withColumn("markers_match", F.col("marker_status") == "same")
    )


def compare_transactions(
    src_batches: Any | None,
    dst_batches: Any | None,
    src_partitions: Any,
    dst_partitions: Any,
    topic_scope: Any,
) -> Any:
    """CM-TXN-3, per side that was scanned: transactional batches below the partition's last
    stable offset must have a closing marker (``unclosed_below_lso``), and no marker may
    close a producer epoch's transaction twice (``closes_twice``)."""
    from pyspark.sql import functions as F

    frames = []
    for side, batches, parts in (
        ("source", src_batches, src_partitions),
        ("destination", dst_batches, dst_partitions),
    ):
        if batches is None:
            continue
        lso = parts.select("topic", "partition", F.col("last_stable_offset").alias("last_stable_offset"))
        frames.append(
            transaction_closure(batches)
            .join(lso, ["topic", "partition"], "left")
            .select(
                F.lit(side).alias("side"),
                "topic",
                "partition",
                "base_offset",
                "last_offset",
                "producer_id",
                "producer_epoch",
                "is_control",
                "control_type",
                "closing_offset",
                "closes_twice",
                "last_stable_offset",
            )
        )
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return with_scope(out, topic_scope).withColumn(
        "unclosed_below_lso",
        F.when(
            ~F.col("is_control"),
            # Unknown (null: unchecked) where the partition's last stable offset is.
            F.col("closing_offset").isNull() & (F.col("base_offset") < F.col("last_stable_offset")),
        ),
    )


def compare_scan_issues(src_issues: Any | None, dst_issues: Any | None, topic_scope: Any) -> Any:
    """Both sides' scan issues in one table: errors (unreadable, corrupt data) fail CM-DATA-2,
    warnings warn, informational rows (a segment still being written) pass."""
    from pyspark.sql import functions as F

    frames = [
        issues.withColumn("side", F.lit(side))
        for side, issues in (("source", src_issues), ("destination", dst_issues))
        if issues is not None
    ]
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    # The replica directories Kafka sets aside (-future, -delete, -stray) are not segments
    # outside a partition: their rows carry the topic and are "info".
    return with_scope(out, topic_scope)
