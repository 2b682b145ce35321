"""MirrorMaker 2, record by record: every source record in the compared range matched to its
copy on the replica by content (mode mm2; MM2-DATA-1 to -4).

MirrorMaker 2 copies a record's key, value, headers (all, in order) and timestamp to the
same partition of the replica, at an offset of the target's choosing; it never copies a
control record, and an aborted transaction's records only when its consumer reads
uncommitted (its default). So a records scan in mode mm2 keeps one digest per record over
exactly those fields and no offset (``record_digests``), and what it read of each partition
(``record_digest_ranges``); the source is read with MirrorMaker 2's own isolation.

**The compared range** of a partition ends at the newest offset sync whose upstream record
and its copy were both read: a sync pairs an upstream offset with the offset its copy was
written at, so every source record up to it should be on the replica up to its copy,
and nothing past the replica's lag is called missing. It starts at the first copy on the
replica whose original the source still holds (or the oldest sync within both reads, where
that is earlier), so records expired on either side are outside it, never missing nor
unexplained. What the range leaves out is reported (``uncompared_src_offsets``), not passed.

**Matching** inside the range is by content and occurrence: the k-th source record with a
digest is the copy of the k-th replica record with that digest. A source record left
without a copy is missing (MM2-DATA-1); a replica record left over is a duplicate when the
source holds its content (MM2-DATA-3: re-delivery after a task restart), unexplained when it
does not (MM2-DATA-2: another producer, or another topic's records); matched copies whose
source offsets go back as the replica's offsets go forward break the order (MM2-DATA-4).
Matching over the whole range, not sync segment by sync segment, is deliberate: a task
restarted behind its last commit writes the replayed records after a sync whose upstream
offset lies before the replay, so segments would read its duplicates as strangers.

The query is the shared SQL of ``sql.py``: Spark runs it over a nightly scan's digests;
DuckDB runs it too (the fast tier's tests). Its matching is done by the aligner wherever it
can answer (mm2_alignment.py: each partition streamed in offset order, exactly this
query's tally or a fallback), and by the row-per-record steps below only for the
partitions it cannot; ``ROW_BY_ROW`` matches every partition row by row, the reference
the differential tests hold the aligner to. Compacted topics are not judged yet: the
cleaners of the two clusters remove different records, which this matching would call
missing and unexplained; their rows are unchecked, with that cause.
"""

from __future__ import annotations

from audit.compare.mm2_alignment import TALLY_COLUMNS, WINDOW, alignment_step
from audit.compare.sql import READ_IMPOSSIBLE, Comparison, Step, causes

# What a records scan read of each partition: one span per partition, [read_start,
# read_end); a range that stopped short ends the span where it stopped. ``read_whole``:
# every range was read to its end, so an empty span means an empty partition, not a read
# that returned nothing (refused, failed, no task, stopped early). ``read_possible``: no
# range contradicts itself (read_to outside [start, end], or complete short of its end);
# such a range says nothing about what was read, so the partition is not judged at all.
_READS = """
  SELECT {topic} AS topic, r.partition,
    min(r.start_offset) AS read_start,
    CASE WHEN min(CASE WHEN r.complete THEN 1 ELSE 0 END) = 1 THEN max(r.read_to)
      ELSE min(CASE WHEN NOT r.complete THEN r.read_to END) END AS read_end,
    min(CASE WHEN r.complete THEN 1 ELSE 0 END) = 1 AS read_whole,
    max(CASE WHEN r.read_to < r.start_offset OR r.read_to > r.end_offset
          OR (r.complete AND r.read_to <> r.end_offset) THEN 1 ELSE 0 END) = 0 AS read_possible,
    min(CASE WHEN NOT r.complete THEN r.detail END) AS read_detail,
    max(CASE WHEN r.compacted THEN 1 ELSE 0 END) = 1 AS compacted
  FROM {table} r {join}
  GROUP BY {topic}, r.partition
"""

_SRC_READS = _READS.format(topic="r.topic", table="{src_record_digest_ranges}", join="")
_DST_READS = _READS.format(
    topic="tn.topic",
    table="{dst_record_digest_ranges}",
    join="JOIN {topic_names} tn ON tn.remote_topic = r.topic",
)

# The query runs in steps, each materialized before the next (``Comparison.steps``): as
# common table expressions of one query, the windows over every record would be computed
# again for each later reference (on Spark, 32 s against 5 s for a few records, measured).

# Per source partition: what each side's scan read, the cut earlier runs verified through,
# and the offset syncs whose upstream record and its copy were both read (or both lie at or
# before the cut): the newest ends the compared range, the oldest may start it.
RANGES = f"""
WITH src_reads AS ({_SRC_READS}),
dst_reads AS ({_DST_READS}),
placed AS (
  SELECT s.topic, s.partition, tn.remote_topic, ts.in_scope AS in_scope,
    s.log_start_offset AS src_log_start_offset, s.high_watermark AS src_high_watermark,
    d.log_start_offset AS dst_log_start_offset, d.high_watermark AS dst_high_watermark,
    d.high_watermark IS NOT NULL AS dst_present,
    coalesce(sr.compacted, FALSE) OR coalesce(dr.compacted, FALSE) AS compacted,
    sr.read_start AS src_read_start,
    CASE WHEN sr.read_possible THEN sr.read_end END AS src_read_end,
    dr.read_start AS dst_read_start,
    CASE WHEN dr.read_possible THEN dr.read_end END AS dst_read_end,
    sr.read_whole AS src_read_whole, dr.read_whole AS dst_read_whole,
    sr.read_detail AS src_read_detail, dr.read_detail AS dst_read_detail,
    NOT sr.read_possible OR NOT dr.read_possible AS read_impossible,
    c.src_through AS cut_u, c.dst_through AS cut_d, c.verified_from
  FROM {{src_partitions}} s
  LEFT JOIN {{topic_scope}} ts ON ts.topic = s.topic
  LEFT JOIN {{topic_names}} tn ON tn.topic = s.topic
  LEFT JOIN {{dst_partitions}} d ON d.topic = tn.remote_topic AND d.partition = s.partition
  LEFT JOIN src_reads sr ON sr.topic = s.topic AND sr.partition = s.partition
  LEFT JOIN dst_reads dr ON dr.topic = s.topic AND dr.partition = s.partition
  LEFT JOIN {{src_record_digest_cuts}} c ON c.topic = s.topic AND c.partition = s.partition
),
syncs_read AS (
  SELECT y.topic, y.partition, y.upstream_offset, y.downstream_offset,
    row_number() OVER (PARTITION BY y.topic, y.partition
                       ORDER BY y.upstream_offset DESC, y.downstream_offset DESC) AS newest,
    row_number() OVER (PARTITION BY y.topic, y.partition
                       ORDER BY y.upstream_offset ASC, y.downstream_offset ASC) AS oldest
  FROM {{offset_syncs}} y
  JOIN placed p ON p.topic = y.topic AND p.partition = y.partition
  WHERE NOT p.compacted
    AND y.upstream_offset < p.src_read_end AND y.downstream_offset < p.dst_read_end
    AND ((y.upstream_offset >= p.src_read_start AND y.downstream_offset >= p.dst_read_start)
      OR (y.upstream_offset <= p.cut_u AND y.downstream_offset <= p.cut_d))
),
ends AS (
  SELECT n.topic, n.partition, n.upstream_offset AS end_u, n.downstream_offset AS end_d,
    o.upstream_offset AS first_sync_u, o.downstream_offset AS first_sync_d
  FROM syncs_read n
  JOIN syncs_read o ON o.topic = n.topic AND o.partition = n.partition AND o.oldest = 1
  WHERE n.newest = 1
)
SELECT p.*, e.end_u, e.end_d, e.first_sync_u, e.first_sync_d
FROM placed p LEFT JOIN ends e ON e.topic = p.topic AND e.partition = p.partition
"""

# Each side's records up to where its range ends, and the contents the source holds there,
# of the partitions the aligner left to be matched row by row.
_WINDOWS = """
src_w AS (
  SELECT r.topic, r.partition, r.offset, r.digest
  FROM {src_record_digests} r
  JOIN {mm2_record_ranges} e ON e.topic = r.topic AND e.partition = r.partition
  JOIN {mm2_record_alignments} a ON a.topic = e.topic AND a.partition = e.partition
  WHERE a.fallback IS NOT NULL AND r.offset >= e.src_read_start AND r.offset <= e.end_u
),
dst_w AS (
  SELECT tn.topic, r.partition, r.offset, r.digest
  FROM {dst_record_digests} r
  JOIN {topic_names} tn ON tn.remote_topic = r.topic
  JOIN {mm2_record_ranges} e ON e.topic = tn.topic AND e.partition = r.partition
  JOIN {mm2_record_alignments} a ON a.topic = e.topic AND a.partition = e.partition
  WHERE a.fallback IS NOT NULL AND r.offset >= e.dst_read_start AND r.offset <= e.end_d
),
src_contents AS (SELECT DISTINCT topic, partition, digest FROM src_w)"""

# Per partition with a range, where it starts: past a cut, just after it; else at the first
# copy on the replica whose original the source still holds (and at that original), or at
# the oldest sync where that is earlier.
_BOUNDS = f"""
WITH {_WINDOWS},
first_copy AS (
  SELECT d.topic, d.partition, min(d.offset) AS first_copy_d
  FROM dst_w d
  JOIN src_contents c ON c.topic = d.topic AND c.partition = d.partition AND c.digest = d.digest
  GROUP BY d.topic, d.partition
),
first_original AS (
  SELECT s.topic, s.partition, min(s.offset) AS first_copy_u
  FROM first_copy f
  JOIN dst_w d ON d.topic = f.topic AND d.partition = f.partition AND d.offset = f.first_copy_d
  JOIN src_w s ON s.topic = d.topic AND s.partition = d.partition AND s.digest = d.digest
  GROUP BY s.topic, s.partition
)
SELECT e.topic, e.partition,
  CASE WHEN e.cut_u IS NOT NULL THEN e.cut_u + 1
    ELSE greatest(e.src_read_start, least(fo.first_copy_u, e.first_sync_u)) END AS lo_u,
  CASE WHEN e.cut_d IS NOT NULL THEN e.cut_d + 1
    ELSE greatest(e.dst_read_start, least(fc.first_copy_d, e.first_sync_d)) END AS lo_d
FROM {{mm2_record_ranges}} e
JOIN {{mm2_record_alignments}} a ON a.topic = e.topic AND a.partition = e.partition
LEFT JOIN first_copy fc ON fc.topic = e.topic AND fc.partition = e.partition
LEFT JOIN first_original fo ON fo.topic = e.topic AND fo.partition = e.partition
WHERE a.fallback IS NOT NULL
UNION ALL
SELECT topic, partition, compared_src_start AS lo_u, compared_dst_start AS lo_d
FROM {{mm2_record_alignments}} WHERE fallback IS NULL
"""

# Per record of the range: matched to its copy by content and occurrence, and judged.
_PAIRS = f"""
WITH {_WINDOWS},
src_in AS (
  SELECT s.topic, s.partition, s.offset, s.digest,
    row_number() OVER (PARTITION BY s.topic, s.partition, s.digest ORDER BY s.offset) AS occurrence
  FROM src_w s JOIN {{mm2_record_bounds}} b ON b.topic = s.topic AND b.partition = s.partition
  WHERE s.offset >= b.lo_u
),
dst_in AS (
  SELECT d.topic, d.partition, d.offset, d.digest,
    row_number() OVER (PARTITION BY d.topic, d.partition, d.digest ORDER BY d.offset) AS occurrence
  FROM dst_w d JOIN {{mm2_record_bounds}} b ON b.topic = d.topic AND b.partition = d.partition
  WHERE d.offset >= b.lo_d
),
paired AS (
  SELECT coalesce(s.topic, d.topic) AS topic, coalesce(s.partition, d.partition) AS partition,
    s.offset AS src_offset, d.offset AS dst_offset, coalesce(s.digest, d.digest) AS digest,
    s.offset IS NOT NULL AND d.offset IS NOT NULL AS matched
  FROM src_in s
  FULL OUTER JOIN dst_in d ON d.topic = s.topic AND d.partition = s.partition
    AND d.digest = s.digest AND d.occurrence = s.occurrence
)
SELECT p.topic, p.partition, p.src_offset, p.dst_offset, p.matched,
  p.src_offset IS NOT NULL AND p.dst_offset IS NULL AS missing,
  p.src_offset IS NULL AND c.digest IS NOT NULL AS duplicate,
  p.src_offset IS NULL AND c.digest IS NULL AS unexplained,
  CASE WHEN p.matched THEN
    lag(p.src_offset) OVER (PARTITION BY p.topic, p.partition, p.matched ORDER BY p.dst_offset)
      > p.src_offset
  END AS out_of_order
FROM paired p
LEFT JOIN src_contents c ON c.topic = p.topic AND c.partition = p.partition AND c.digest = p.digest
"""

# The tally's columns the streaming aligner (native/src/align.rs) answers for a partition
# without a row per record: the same names, the same values (tests/unit/test_mm2_alignment.py).
ALIGNED_COLUMNS = TALLY_COLUMNS[1:]


# The tally per partition: the aligner's where it answered, the pairs' elsewhere.
_PARTITIONS = """
WITH tally AS (
  SELECT topic, partition,
    sum(CASE WHEN src_offset IS NOT NULL THEN 1 ELSE 0 END) AS compared_src_records,
    sum(CASE WHEN dst_offset IS NOT NULL THEN 1 ELSE 0 END) AS compared_dst_records,
    sum(CASE WHEN missing THEN 1 ELSE 0 END) AS missing_records,
    min(CASE WHEN missing THEN src_offset END) AS first_missing_offset,
    sum(CASE WHEN unexplained THEN 1 ELSE 0 END) AS unexplained_records,
    min(CASE WHEN unexplained THEN dst_offset END) AS first_unexplained_offset,
    sum(CASE WHEN duplicate THEN 1 ELSE 0 END) AS duplicate_records,
    min(CASE WHEN duplicate THEN dst_offset END) AS first_duplicate_offset,
    sum(CASE WHEN out_of_order THEN 1 ELSE 0 END) AS order_breaks,
    min(CASE WHEN out_of_order THEN dst_offset END) AS first_order_break_offset
  FROM {mm2_record_pairs} GROUP BY topic, partition
  UNION ALL
  SELECT topic, partition, compared_src_records, compared_dst_records,
    missing_records, first_missing_offset, unexplained_records, first_unexplained_offset,
    duplicate_records, first_duplicate_offset, order_breaks, first_order_break_offset
  FROM {mm2_record_alignments} WHERE fallback IS NULL
),
ranked AS (
  SELECT topic, partition, src_offset, dst_offset,
    row_number() OVER (PARTITION BY topic, partition ORDER BY src_offset) AS by_src,
    row_number() OVER (PARTITION BY topic, partition ORDER BY dst_offset) AS by_dst
  FROM {mm2_record_pairs} WHERE matched
),
-- Where the next run may judge from: the last matched pair before every finding with as
-- many matched records before it on each side, so that those are each other's copies one
-- to one, in order (audit/collect/records/digest_history.py).
clean AS (
  SELECT r.topic, r.partition, max(r.src_offset) AS clean_u, max(r.dst_offset) AS clean_d
  FROM ranked r JOIN tally t ON t.topic = r.topic AND t.partition = r.partition
  WHERE r.by_src = r.by_dst
    AND (t.first_missing_offset IS NULL OR r.src_offset < t.first_missing_offset)
    AND (t.first_unexplained_offset IS NULL OR r.dst_offset < t.first_unexplained_offset)
    AND (t.first_duplicate_offset IS NULL OR r.dst_offset < t.first_duplicate_offset)
    AND (t.first_order_break_offset IS NULL OR r.dst_offset < t.first_order_break_offset)
  GROUP BY r.topic, r.partition
  UNION ALL
  SELECT topic, partition, clean_src_through AS clean_u, clean_dst_through AS clean_d
  FROM {mm2_record_alignments} WHERE fallback IS NULL
),
counted AS (
  SELECT p.*,
    p.end_u AS sync_upstream_offset, p.end_d AS sync_downstream_offset,
    b.lo_u AS compared_src_start, greatest(p.end_u + 1, b.lo_u) AS compared_src_end,
    b.lo_d AS compared_dst_start, greatest(p.end_d + 1, b.lo_d) AS compared_dst_end,
    coalesce(cl.clean_u, p.cut_u) AS clean_u, coalesce(cl.clean_d, p.cut_d) AS clean_d,
    coalesce(p.verified_from, b.lo_u) AS new_verified_from,
    CASE WHEN p.cut_u IS NULL THEN 0
      ELSE greatest(0, p.cut_u + 1 - greatest(p.src_log_start_offset, p.verified_from))
      END AS verified_before,
    -- Judged where the range was found, or where both sides were read whole and neither
    -- holds a record to judge (nothing to miss, nothing to explain); unknown (null)
    -- otherwise: a read that returned nothing because it was refused or stopped is no
    -- empty partition.
    CASE WHEN NOT p.dst_present OR p.compacted OR p.src_read_end IS NULL OR p.dst_read_end IS NULL
        OR a.digests_missing THEN FALSE
      WHEN p.end_u IS NOT NULL THEN TRUE
      ELSE p.src_read_whole AND p.dst_read_whole
        AND p.src_read_end <= p.src_read_start AND p.dst_read_end <= p.dst_read_start END AS judged,
    t.compared_src_records, t.compared_dst_records, t.missing_records, t.first_missing_offset,
    t.unexplained_records, t.first_unexplained_offset, t.duplicate_records, t.first_duplicate_offset,
    t.order_breaks, t.first_order_break_offset,
    CASE WHEN a.fallback IS NULL THEN 'aligned'
      WHEN a.digests_missing THEN concat('not matched: ', a.fallback)
      ELSE concat('row by row: ', a.fallback) END AS matching
  FROM {mm2_record_ranges} p
  LEFT JOIN {mm2_record_alignments} a ON a.topic = p.topic AND a.partition = p.partition
  LEFT JOIN {mm2_record_bounds} b ON b.topic = p.topic AND b.partition = p.partition
  LEFT JOIN tally t ON t.topic = p.topic AND t.partition = p.partition
  LEFT JOIN clean cl ON cl.topic = p.topic AND cl.partition = p.partition
),
filled AS (
  SELECT topic, partition, remote_topic, in_scope, src_log_start_offset, src_high_watermark,
    dst_log_start_offset, dst_high_watermark, dst_present, compacted,
    src_read_start, src_read_end, dst_read_start, dst_read_end,
    src_read_whole, dst_read_whole, read_impossible, src_read_detail, dst_read_detail,
    sync_upstream_offset, sync_downstream_offset,
    compared_src_start, compared_src_end, compared_dst_start, compared_dst_end,
    CASE WHEN judged THEN coalesce(compared_src_records, 0) END AS compared_src_records,
    CASE WHEN judged THEN coalesce(compared_dst_records, 0) END AS compared_dst_records,
    -- The source's retained offsets earlier runs verified, and those neither they nor this
    -- comparison covered (before the range, past it).
    CASE WHEN judged THEN verified_before END AS verified_src_offsets,
    CASE WHEN judged AND src_high_watermark IS NOT NULL THEN
      (src_high_watermark - src_log_start_offset)
        - coalesce(compared_src_end - compared_src_start, 0) - verified_before END AS uncompared_src_offsets,
    CASE WHEN judged THEN coalesce(missing_records, 0) END AS missing_records,
    first_missing_offset,
    CASE WHEN judged THEN coalesce(unexplained_records, 0) END AS unexplained_records,
    first_unexplained_offset,
    CASE WHEN judged THEN coalesce(duplicate_records, 0) END AS duplicate_records,
    first_duplicate_offset,
    CASE WHEN judged THEN coalesce(order_breaks, 0) END AS order_breaks,
    first_order_break_offset,
    CASE WHEN judged THEN clean_u END AS clean_src_through,
    CASE WHEN judged THEN clean_d END AS clean_dst_through,
    CASE WHEN judged THEN new_verified_from END AS verified_from,
    CASE WHEN sync_upstream_offset IS NOT NULL THEN matching END AS matching
  FROM counted
)
-- A finding stands wherever it was found; its absence is known only where both sides were
-- read whole: over a read that stopped short (refused, failed, no task) it is unknown.
SELECT filled.*,
  CASE WHEN missing_records > 0 THEN FALSE WHEN src_read_whole AND dst_read_whole
    THEN missing_records = 0 END AS none_missing,
  CASE WHEN unexplained_records > 0 THEN FALSE WHEN src_read_whole AND dst_read_whole
    THEN unexplained_records = 0 END AS none_unexplained,
  CASE WHEN duplicate_records > 0 THEN FALSE WHEN src_read_whole AND dst_read_whole
    THEN duplicate_records = 0 END AS no_duplicates,
  CASE WHEN order_breaks > 0 THEN FALSE WHEN src_read_whole AND dst_read_whole
    THEN order_breaks = 0 END AS in_order,
  coalesce(in_scope, FALSE) AND p.mm2_exactly_once AS duplicates_fail
FROM filled CROSS JOIN {run_params} p
"""


def records_comparison(window: int | None) -> Comparison:
    """The comparison, its partitions aligned as they stream with ``window`` records a side
    (mm2_alignment.py), the rest matched row by row; None: every partition row by row (the
    reference the differential tests hold the aligner to)."""
    return Comparison(
        "mm2_record_partitions",
        ("topic", "partition"),
        _PARTITIONS,
        steps=(
            Step("mm2_record_ranges", RANGES),
            alignment_step(window),
            Step("mm2_record_bounds", _BOUNDS),
            Step("mm2_record_pairs", _PAIRS),
        ),
        requires=("src_record_digests", "dst_record_digests"),
        grows_with_data=True,
        shown=(
            "remote_topic",
            "compared_src_start",
            "compared_src_end",
            "compared_dst_start",
            "compared_dst_end",
            "missing_records",
            "first_missing_offset",
            "unexplained_records",
            "first_unexplained_offset",
            "duplicate_records",
            "first_duplicate_offset",
            "order_breaks",
            "first_order_break_offset",
            "matching",
        ),
        causes=causes(
            ("the replica partition on the target", "NOT dst_present"),
            (
                "a compacted topic (the cleaners of the two clusters keep different records: not judged yet)",
                "compacted",
            ),
            READ_IMPOSSIBLE,
            (
                "the records of the partition on both sides (no records scan read them)",
                "src_read_end IS NULL OR dst_read_end IS NULL",
            ),
            (
                "the whole of the partition on the source "
                "(the scan stopped short: refused, failed or no task; see src_read_detail)",
                "NOT src_read_whole",
            ),
            (
                "the whole of the partition on the replica "
                "(the scan stopped short: refused, failed or no task; see dst_read_detail)",
                "NOT dst_read_whole",
            ),
            (
                "an offset sync whose record and copy the scan read (none yet, or past what was read)",
                "sync_upstream_offset IS NULL",
            ),
            (
                "the digests of the records of the partition (the scan matched another range as it read "
                "them, or left its counts incomplete, and kept none: see matching)",
                "matching LIKE 'not matched:%'",
            ),
        ),
    )


RECORDS = records_comparison(WINDOW)
ROW_BY_ROW = records_comparison(None)
