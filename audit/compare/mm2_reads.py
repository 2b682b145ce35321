"""What records scans read of each source partition, kept from run to run
(``mm2_source_reads``): the evidence that tells a transaction marker, an aborted record or
a compacted-away offset from a lost record in a gap between MirrorMaker 2's offset syncs
(MM2-SKIP-1).

A gap's offsets are often gone from the source by the time the gap shows: retention
deleted them before the mirror copied them, which is how the gap came about. What a scan
read while the source still held them is then the only account of which of those offsets
held records, so each run keeps it: the ranges this run's records scan read and the runs
of offsets holding records there (a row per stretch between markers or aborted records,
not per record), and, below where this run's scan began, the rows the newest earlier run
kept. Kept rows are dropped where they cannot stand for the partition any more: another
topic under the name (its id changed), a compacted topic (the cleaner may have removed
since what was read then: only this run's scan counts there), or offsets below every
offset sync the mirror still holds or an earlier run carries (no gap can be computed
there). So the table stays
the size of the retained syncs' span, however many runs went by.

One definition for both engines: readiness, which scans nothing (its record digests are
empty stand-ins), carries the newest earlier run's rows forward, so a nightly's reading
reaches the readiness checks after it.
"""

from __future__ import annotations

from audit.compare.sql import Comparison

SOURCE_READS = Comparison(
    "mm2_source_reads",
    ("topic", "partition", "kind", "start_offset"),
    """
-- What a range's scan read: from its start to where it stopped, never past its planned end
-- (a scan reporting more is not believed beyond what it was asked for).
WITH read AS (
  SELECT r.topic, r.partition, r.start_offset, least(r.read_to, r.end_offset) AS end_offset,
    r.isolation = 'read_committed' AS read_committed
  FROM {src_record_digest_ranges} r
  WHERE least(r.read_to, r.end_offset) > r.start_offset
),
-- The runs of consecutive offsets holding records, as the scan found them reading
-- (record_digest_runs). A snapshot of a scan that did not keep them (an older version's)
-- has them found from its digests (src_digests_without_runs: empty where the snapshot
-- holds the runs, so no digest is read then): consecutive offsets share offset - rank.
islands AS (
  SELECT d.topic, d.partition, d.offset,
    d.offset - row_number() OVER (PARTITION BY d.topic, d.partition ORDER BY d.offset) AS island
  FROM {src_digests_without_runs} d
),
runs AS (
  SELECT k.topic, k.partition, k.start_offset, k.end_offset
  FROM {src_record_digest_runs} k WHERE k.end_offset > k.start_offset
  UNION ALL
  SELECT i.topic, i.partition, min(i.offset) AS start_offset, max(i.offset) + 1 AS end_offset
  FROM islands i GROUP BY i.topic, i.partition, i.island
),
isolation AS (
  SELECT topic, partition, min(start_offset) AS from_offset, bool_and(read_committed) AS read_committed
  FROM read GROUP BY topic, partition
),
scanned AS (
  SELECT topic, partition, 'read' AS kind, start_offset, end_offset, read_committed FROM read
  UNION ALL
  SELECT u.topic, u.partition, 'records' AS kind, u.start_offset, u.end_offset, i.read_committed
  FROM runs u JOIN isolation i ON i.topic = u.topic AND i.partition = u.partition
),
-- The oldest offset a gap can start from: the oldest sync held, or one an earlier run
-- carries (mm2_syncs keeps a gap whose syncs the cleaner removed).
oldest_sync AS (
  SELECT y.topic, y.partition, min(y.upstream_offset) AS upstream_offset
  FROM (
    SELECT topic, partition, upstream_offset FROM {offset_syncs}
    UNION ALL
    SELECT topic, partition, prev_upstream_offset AS upstream_offset FROM {previous_syncs}
    WHERE prev_upstream_offset IS NOT NULL
  ) y
  GROUP BY y.topic, y.partition
),
kept AS (
  SELECT e.topic, e.partition, e.topic_id, e.kind, e.start_offset,
    CASE WHEN i.from_offset IS NULL THEN e.end_offset
      ELSE least(e.end_offset, i.from_offset) END AS end_offset,
    e.read_committed
  FROM {previous_source_reads} e
  JOIN {src_partitions} p ON p.topic = e.topic AND p.partition = e.partition AND p.topic_id = e.topic_id
  JOIN {src_partition_traits} t ON t.topic = e.topic AND t.partition = e.partition AND NOT t.compacted
  JOIN oldest_sync o ON o.topic = e.topic AND o.partition = e.partition
  LEFT JOIN isolation i ON i.topic = e.topic AND i.partition = e.partition
  WHERE e.end_offset > o.upstream_offset
    AND (i.from_offset IS NULL OR e.start_offset < i.from_offset)
)
SELECT s.topic, s.partition, p.topic_id, s.kind, s.start_offset, s.end_offset, s.read_committed
FROM scanned s LEFT JOIN {src_partitions} p ON p.topic = s.topic AND p.partition = s.partition
UNION ALL
SELECT topic, partition, topic_id, kind, start_offset, end_offset, read_committed FROM kept
""",
    grows_with_data=True,
)
