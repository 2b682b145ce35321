"""The comparisons of mode ``mm2``: MirrorMaker 2's offset syncs and checkpoints against both
clusters' partitions and group offsets, one SQL query each (see ``sql.py``).

Names: a checkpoint names the replica topic on the target (``source.orders`` under the
default policy); an offset sync and a source group's commit name the source topic. The
configured replication policy maps one to the other once, in Python
(``Mm2Config.remote_topic`` / ``source_topic``), into ``{topic_names}``, which these
queries join both ways. The snapshot tables of MirrorMaker 2's own topics are the inputs
``{offset_syncs}`` and ``{checkpoints}`` (from whichever snapshot holds them); one that was
not collected is an empty input, so its rows are none and its invariants come out skipped.
"""

from __future__ import annotations

from audit.compare.mm2_reads import SOURCE_READS
from audit.compare.mm2_records import RECORDS
from audit.compare.sql import DST_PARTITION, Comparison, causes, group_active, offset_in_range

# The latest offset sync of each source partition: the highest (upstream, downstream).
_LATEST_SYNC = """
  SELECT topic, partition,
    upstream_offset AS sync_upstream_offset, downstream_offset AS sync_downstream_offset
  FROM (
    SELECT topic, partition, upstream_offset, downstream_offset,
      row_number() OVER (PARTITION BY topic, partition
                         ORDER BY upstream_offset DESC, downstream_offset DESC) AS n
    FROM {offset_syncs}
  ) ranked WHERE n = 1
"""

PARTITIONS = Comparison(
    "mm2_partitions",
    ("topic", "partition"),
    f"""
WITH latest_sync AS ({_LATEST_SYNC}),
placed AS (
  SELECT s.topic, s.partition, tn.remote_topic,
    s.log_start_offset AS src_log_start_offset,
    s.high_watermark AS src_high_watermark,
    s.last_stable_offset AS src_last_stable_offset,
    ts.in_scope AS in_scope,
    d.log_start_offset AS dst_log_start_offset,
    d.high_watermark AS dst_high_watermark,
    d.high_watermark IS NOT NULL AS dst_present,
    ls.sync_upstream_offset, ls.sync_downstream_offset,
    ls.sync_upstream_offset IS NOT NULL AS has_sync,
    s.topic_id AS src_topic_id,
    pt.topic_id AS previous_src_topic_id,
    -- The replica's position in source offsets: the latest sync's upstream offset plus
    -- what the replica gained since that sync.
    s.high_watermark - (ls.sync_upstream_offset + (d.high_watermark - ls.sync_downstream_offset))
      AS unreplicated_records
  FROM {{src_partitions}} s
  LEFT JOIN {{topic_scope}} ts ON ts.topic = s.topic
  LEFT JOIN {{topic_names}} tn ON tn.topic = s.topic
  LEFT JOIN {{dst_partitions}} d ON d.topic = tn.remote_topic AND d.partition = s.partition
  LEFT JOIN latest_sync ls ON ls.topic = s.topic AND ls.partition = s.partition
  LEFT JOIN (SELECT DISTINCT topic, topic_id FROM {{previous_partitions}} WHERE topic_id IS NOT NULL) pt
    ON pt.topic = s.topic
)
SELECT placed.*,
  -- No replica, or no sync yet: replicated only if the source holds nothing to replicate.
  CASE WHEN dst_present AND has_sync THEN unreplicated_records <= 0
    ELSE src_high_watermark = src_log_start_offset END AS fully_replicated,
  -- More on the replica than the mirror wrote: another producer, or re-delivered duplicates.
  -- Without a sync MirrorMaker 2 has written nothing (it syncs the first record it copies):
  -- the replica must hold nothing; without a replica nobody wrote to it.
  CASE WHEN NOT dst_present THEN TRUE
    WHEN has_sync THEN unreplicated_records >= 0
    ELSE dst_high_watermark = dst_log_start_offset END AS only_mirror_writes,
  src_last_stable_offset = src_high_watermark AS src_quiet,
  -- Judged where an earlier run saw the topic (the check's domain); an id no longer reported
  -- is unknown.
  src_topic_id <> previous_src_topic_id AS recreated
FROM placed
""",
    shown=(
        "src_high_watermark",
        "src_last_stable_offset",
        "dst_high_watermark",
        "sync_upstream_offset",
        "sync_downstream_offset",
        "unreplicated_records",
        "src_topic_id",
        "previous_src_topic_id",
    ),
    causes=causes(
        ("the replica partition on the target", "NOT dst_present"),
        ("an offset sync for the partition", "NOT has_sync"),
        ("the source topic id (not reported by the cluster)", "src_topic_id IS NULL"),
    ),
)

SYNCS = Comparison(
    "mm2_syncs",
    ("topic", "partition", "record_partition", "record_offset"),
    """
WITH held AS (
  SELECT s.*,
    lag(s.upstream_offset) OVER (PARTITION BY s.topic, s.partition
                                 ORDER BY s.record_partition, s.record_offset) AS lag_upstream,
    lag(s.downstream_offset) OVER (PARTITION BY s.topic, s.partition
                                   ORDER BY s.record_partition, s.record_offset) AS lag_downstream,
    lag(s.timestamp_ms) OVER (PARTITION BY s.topic, s.partition
                              ORDER BY s.record_partition, s.record_offset) AS lag_timestamp_ms
  FROM {offset_syncs} s
),
-- The rows the newest earlier run computed, where the topic is still the one they describe.
previous AS (
  SELECT v.* FROM {previous_syncs} v
  JOIN {src_partitions} p ON p.topic = v.topic AND p.partition = v.partition AND p.topic_id = v.src_topic_id
),
-- The offset-syncs topic is compacted: its cleaner keeps the newest sync of a partition, so
-- the sync before a gap may be gone. The oldest sync still held takes its predecessor from
-- the earlier run that saw both, and a gap whose two syncs are gone is carried from that
-- run while it is lost or unknown (a gap nothing is missing from is not kept).
ordered AS (
  SELECT h.topic, h.partition, h.upstream_offset, h.downstream_offset, h.record_partition,
    h.record_offset, h.timestamp_ms, FALSE AS carried,
    CASE WHEN h.lag_upstream IS NULL THEN v.prev_upstream_offset ELSE h.lag_upstream END
      AS prev_upstream_offset,
    CASE WHEN h.lag_upstream IS NULL THEN v.prev_downstream_offset ELSE h.lag_downstream END
      AS prev_downstream_offset,
    CASE WHEN h.lag_upstream IS NULL THEN v.prev_timestamp_ms ELSE h.lag_timestamp_ms END
      AS prev_timestamp_ms
  FROM held h
  LEFT JOIN previous v ON v.topic = h.topic AND v.partition = h.partition
    AND v.record_partition = h.record_partition AND v.record_offset = h.record_offset
    AND v.upstream_offset = h.upstream_offset AND v.downstream_offset = h.downstream_offset
  UNION ALL
  SELECT v.topic, v.partition, v.upstream_offset, v.downstream_offset, v.record_partition,
    v.record_offset, v.timestamp_ms, TRUE AS carried,
    v.prev_upstream_offset, v.prev_downstream_offset, v.prev_timestamp_ms
  FROM previous v
  LEFT JOIN {offset_syncs} s ON s.topic = v.topic AND s.partition = v.partition
    AND s.record_partition = v.record_partition AND s.record_offset = v.record_offset
  WHERE s.record_offset IS NULL AND v.prev_upstream_offset IS NOT NULL
    AND v.lost_records IS DISTINCT FROM 0
),
scoped AS (
  SELECT o.*, ts.in_scope AS in_scope FROM ordered o LEFT JOIN {topic_scope} ts ON ts.topic = o.topic
),
-- MM2-SYNC-1: both offsets only ever move forward.
judged AS (
  SELECT scoped.*,
    -- The first sync of a partition has none before it to go back from.
    CASE WHEN prev_upstream_offset IS NULL THEN TRUE
      ELSE upstream_offset >= prev_upstream_offset AND downstream_offset >= prev_downstream_offset END
      AS monotonic,
    -- MirrorMaker 2 syncs at the first record after any it did not copy, so between two
    -- consecutive syncs the only gap is the one just before the later: its size.
    (upstream_offset - prev_upstream_offset) - (downstream_offset - prev_downstream_offset)
      AS skipped_records,
    prev_upstream_offset + (downstream_offset - prev_downstream_offset) AS skipped_from_offset
  FROM scoped
),
-- What records scans read of each gap, at the mirror's isolation (mm2_source_reads: this
-- run's scan and what earlier runs kept): the offsets read and, of them, those holding a
-- record. Read whole, the gap's records are counted; the rest were markers, aborted records
-- or compacted away.
scanned AS (
  SELECT j.topic, j.partition, j.record_partition, j.record_offset,
    sum(CASE WHEN e.kind = 'read' THEN least(e.end_offset, j.upstream_offset)
      - greatest(e.start_offset, j.skipped_from_offset) ELSE 0 END) AS read_offsets,
    sum(CASE WHEN e.kind = 'records' THEN least(e.end_offset, j.upstream_offset)
      - greatest(e.start_offset, j.skipped_from_offset) ELSE 0 END) AS scanned_records
  FROM judged j
  CROSS JOIN {run_params} rp
  JOIN {mm2_source_reads} e ON e.topic = j.topic AND e.partition = j.partition
    AND e.read_committed = rp.mm2_read_committed
    AND e.start_offset < j.upstream_offset AND e.end_offset > j.skipped_from_offset
  WHERE j.monotonic AND j.skipped_records > 0
  GROUP BY j.topic, j.partition, j.record_partition, j.record_offset
)
SELECT judged.*,
  p.topic_id AS src_topic_id,
  p.log_start_offset AS src_log_start_offset,
  p.high_watermark AS src_high_watermark,
  t.compacted, t.transactional_producers,
  coalesce(sc.read_offsets = judged.skipped_records, FALSE) AS gap_scanned,
  -- MM2-SKIP-1. Nothing skipped (or MM2-SYNC-1's matter: a sync going back): nothing lost.
  -- A gap a scan read whole: its records (what the mirror would have copied) are lost, its
  -- other offsets were markers, aborted records or compacted away. Else: on a plain topic
  -- every skipped offset is lost; a compacted topic's gaps may be the cleaner's: unknown.
  -- Read uncommitted, a mirror reading on passes over markers only, at most one per
  -- transactional producer between two records (each ends its transaction with one, after
  -- a record of it): such a gap is markers. A longer one lost records, how many only a scan
  -- tells (one producer's transactions in it leave a marker each): unknown, as is any gap
  -- read committed (aborted records).
  CASE WHEN prev_upstream_offset IS NULL OR NOT monotonic OR skipped_records <= 0 THEN 0
    WHEN sc.read_offsets = judged.skipped_records THEN sc.scanned_records
    WHEN t.compacted IS NULL OR t.transactional_producers IS NULL OR t.compacted THEN NULL
    WHEN t.transactional_producers = 0 THEN skipped_records
    WHEN NOT rp.mm2_read_committed AND skipped_records <= t.transactional_producers THEN 0
    ELSE NULL END AS lost_records,
  upstream_offset > p.high_watermark AS past_source_end,
  a.topic IS NOT NULL AS loss_accepted
FROM judged
LEFT JOIN {src_partitions} p ON p.topic = judged.topic AND p.partition = judged.partition
LEFT JOIN {accepted_loss} a ON a.topic = judged.topic
LEFT JOIN {src_partition_traits} t ON t.topic = judged.topic AND t.partition = judged.partition
LEFT JOIN scanned sc ON sc.topic = judged.topic AND sc.partition = judged.partition
  AND sc.record_partition = judged.record_partition AND sc.record_offset = judged.record_offset
CROSS JOIN {run_params} rp
""",
    # Without the offset syncs read there is nothing to judge: not computed, so the loss it
    # sums is unknown (never 0 over an empty stand-in) and its invariants are not collected.
    requires=("offset_syncs",),
    shown=(
        "upstream_offset",
        "downstream_offset",
        "prev_upstream_offset",
        "prev_downstream_offset",
        "skipped_from_offset",
        "skipped_records",
        "lost_records",
        "gap_scanned",
        "carried",
        "prev_timestamp_ms",
        "timestamp_ms",
        "src_high_watermark",
    ),
    causes=causes(
        (
            "the source partition (absent from the source snapshot: the topic deleted?)",
            "src_high_watermark IS NULL",
        ),
        (
            "what explains a skipped source offset (the cleanup.policy of the topic, or its producers: "
            "see the partition_traits note of the source snapshot manifest)",
            "compacted IS NULL OR transactional_producers IS NULL",
        ),
        (
            "a records scan of the gap by this run (on a compacted topic the cleaner may have removed "
            "records since an earlier scan): the gaps of the cleaner are not told apart from lost records",
            "compacted",
        ),
        (
            "a records scan of the gap (by a nightly run, this one or one kept under the output root, at "
            "the isolation of the mirror): on a transactional topic the markers (and, read committed, the "
            "aborted records) in a gap longer than one marker per producer are not told apart from lost "
            "records",
            "transactional_producers > 0",
        ),
    ),
)

_CKPT_KEY = "c.group_id, c.topic, c.partition, c.record_partition, c.record_offset"

CHECKPOINTS = Comparison(
    "mm2_checkpoints",
    ("group_id", "topic", "partition", "record_partition", "record_offset"),
    f"""
WITH named AS (
  SELECT k.*, tn.topic AS source_topic
  FROM {{checkpoints}} k LEFT JOIN {{topic_names}} tn ON tn.remote_topic = k.topic
),
ordered AS (
  SELECT n.*,
    gs.in_scope AND ts.in_scope AS in_scope,
    lag(n.upstream_offset) OVER (PARTITION BY n.group_id, n.topic, n.partition
                                 ORDER BY n.record_partition, n.record_offset) AS prev_upstream_offset,
    lag(n.downstream_offset) OVER (PARTITION BY n.group_id, n.topic, n.partition
                                   ORDER BY n.record_partition, n.record_offset) AS prev_downstream_offset,
    row_number() OVER (PARTITION BY n.group_id, n.topic, n.partition
                       ORDER BY n.record_partition DESC, n.record_offset DESC) = 1 AS is_latest,
    d.log_start_offset AS dst_log_start_offset,
    d.high_watermark AS dst_high_watermark
  FROM named n
  LEFT JOIN {{group_scope}} gs ON gs.group_id = n.group_id
  LEFT JOIN {{topic_scope}} ts ON ts.topic = n.source_topic
  LEFT JOIN {{dst_partitions}} d ON d.topic = n.topic AND d.partition = n.partition
),
-- The tightest bound of MM2-CKPT-3: the sync with the highest upstream offset at or below
-- the checkpoint's; the downstream can be at most that sync's plus the records between.
best_sync AS (
  SELECT group_id, topic, partition, record_partition, record_offset,
    s_up AS sync_upstream_offset, s_down AS sync_downstream_offset
  FROM (
    SELECT {_CKPT_KEY}, s.upstream_offset AS s_up, s.downstream_offset AS s_down,
      row_number() OVER (PARTITION BY {_CKPT_KEY}
                         ORDER BY s.upstream_offset DESC, s.downstream_offset DESC) AS n
    FROM ordered c JOIN {{offset_syncs}} s
      ON s.topic = c.source_topic AND s.partition = c.partition AND s.upstream_offset <= c.upstream_offset
  ) candidates WHERE n = 1
),
bounded AS (
  SELECT o.*,
    -- The first checkpoint of a (group, partition) has none before it to go back from.
    CASE WHEN o.prev_upstream_offset IS NULL THEN TRUE
      ELSE o.upstream_offset >= o.prev_upstream_offset
        AND o.downstream_offset >= o.prev_downstream_offset END AS not_backwards,
    o.dst_high_watermark IS NOT NULL AS dst_partition_known,
    {offset_in_range("o.downstream_offset", "o.dst_log_start_offset", "o.dst_high_watermark")}
      AS in_target_range,
    b.sync_upstream_offset, b.sync_downstream_offset,
    b.sync_downstream_offset + (o.upstream_offset - b.sync_upstream_offset) AS max_downstream_offset
  FROM ordered o LEFT JOIN best_sync b
    ON b.group_id = o.group_id AND b.topic = o.topic AND b.partition = o.partition
    AND b.record_partition = o.record_partition AND b.record_offset = o.record_offset
)
SELECT bounded.*, downstream_offset > max_downstream_offset AS over_translated
FROM bounded
""",
    shown=(
        "upstream_offset",
        "downstream_offset",
        "prev_downstream_offset",
        "dst_log_start_offset",
        "dst_high_watermark",
        "max_downstream_offset",
    ),
    causes=causes(
        ("the replica partition on the target", "dst_high_watermark IS NULL"),
        (
            "an offset sync at or below the upstream offset of the checkpoint (older syncs compacted away)",
            "sync_upstream_offset IS NULL",
        ),
    ),
)

GROUP_OFFSETS = Comparison(
    "mm2_group_offsets",
    # Keyed by the source's names: a row per source commit (the replica's name may be
    # unknown, null, where the replication policy maps no topic).
    ("group_id", "topic", "partition"),
    f"""
WITH first_sync AS (
  SELECT topic, partition, min(upstream_offset) AS first_sync_upstream_offset
  FROM {{offset_syncs}} GROUP BY topic, partition
),
commits AS (
  SELECT o.group_id, tn.remote_topic, o.partition, o.topic,
    o.committed_offset AS src_committed_offset,
    -- The lowest upstream offset among the partition's syncs explains many a missing
    -- checkpoint: MM2 translates no offset below it, so a commit there waits.
    fs.first_sync_upstream_offset,
    gs.in_scope AND ts.in_scope AS in_scope,
    d.high_watermark IS NOT NULL AS mirrored,
    c.upstream_offset AS ckpt_upstream_offset,
    c.downstream_offset AS ckpt_downstream_offset,
    c.timestamp_ms AS ckpt_timestamp_ms,
    c.max_downstream_offset AS ckpt_max_downstream_offset,
    t.committed_offset AS dst_committed_offset,
    d.log_start_offset AS dst_log_start_offset,
    d.high_watermark AS dst_high_watermark,
    dg.state AS dst_state,
    dg.member_count AS dst_member_count
  FROM {{src_group_offsets}} o
  LEFT JOIN first_sync fs ON fs.topic = o.topic AND fs.partition = o.partition
  LEFT JOIN {{topic_names}} tn ON tn.topic = o.topic
  LEFT JOIN {{group_scope}} gs ON gs.group_id = o.group_id
  LEFT JOIN {{topic_scope}} ts ON ts.topic = o.topic
  LEFT JOIN {{dst_partitions}} d ON d.topic = tn.remote_topic AND d.partition = o.partition
  LEFT JOIN {{mm2_checkpoints}} c ON c.is_latest AND c.group_id = o.group_id
    AND c.topic = tn.remote_topic AND c.partition = o.partition
  LEFT JOIN {{dst_group_offsets}} t ON t.group_id = o.group_id
    AND t.topic = tn.remote_topic AND t.partition = o.partition
  LEFT JOIN {{dst_groups}} dg ON dg.group_id = o.group_id
),
judged AS (
  SELECT commits.*,
    {group_active("dst_member_count", "dst_state")} AS dst_active,
    ckpt_upstream_offset IS NOT NULL AS has_checkpoint,
    src_committed_offset - ckpt_upstream_offset AS staleness_records
  FROM commits
)
SELECT judged.*,
  staleness_records = 0 AS fresh,
  -- What consumers would read again after a failover to the checkpoint: the commits since
  -- the checkpoint, plus what MM2's conservative translation gave away.
  -- Unknown (null) where no sync bounds the checkpoint (greatest() skips nulls: guarded).
  CASE WHEN ckpt_max_downstream_offset IS NOT NULL AND staleness_records IS NOT NULL
    THEN greatest(0, staleness_records) + greatest(0, ckpt_max_downstream_offset - ckpt_downstream_offset)
  END AS reprocess_records,
  -- An over-translated checkpoint moves consumers past records they never read.
  CASE WHEN ckpt_max_downstream_offset IS NOT NULL
    THEN greatest(0, ckpt_downstream_offset - ckpt_max_downstream_offset) END AS skip_records,
  p.sync_group_offsets AND NOT dst_active AS sync_expected,
  dst_committed_offset IS NOT DISTINCT FROM ckpt_downstream_offset AS synced_matches,
  {offset_in_range("dst_committed_offset", "dst_log_start_offset", "dst_high_watermark")}
    AS dst_offset_in_range
FROM judged CROSS JOIN {{run_params}} p
""",
    shown=(
        "src_committed_offset",
        "first_sync_upstream_offset",
        "ckpt_upstream_offset",
        "ckpt_downstream_offset",
        "staleness_records",
        "dst_committed_offset",
        "dst_log_start_offset",
        "dst_high_watermark",
        "dst_active",
    ),
    causes=causes(DST_PARTITION),
)

# MM2-POS-1: per source partition, MirrorSourceConnector's latest committed position (the
# offset of the last record it copied; it reads on from the next) against what the source
# holds now: below its log start, the records in between were deleted before the mirror
# copied them (its consumer will reset past them: loss in progress); past its end, the
# topic was truncated or recreated under the mirror; behind and within the margin of the
# log start, retention is about to delete records it has not copied.
POSITIONS = Comparison(
    "mm2_positions",
    ("topic", "partition"),
    f"""
WITH latest AS (
  SELECT topic, partition, committed_offset, timestamp_ms FROM (
    SELECT c.*, row_number() OVER (PARTITION BY topic, partition
                                   ORDER BY record_partition DESC, record_offset DESC) AS n
    FROM {{positions}} c
  ) ranked WHERE n = 1
),
latest_sync AS ({_LATEST_SYNC})
-- Every source partition, and every position (a position of a partition the source no
-- longer has is unchecked: its cause names the topic deleted). Without a position, a
-- partition holding nothing is fine; one holding records is unchecked (nothing copied yet).
, placed AS (
  -- Where it reads on from: after its committed position, and at least after the record
  -- of its latest offset sync (Connect flushes positions every offset.flush.interval.ms: a
  -- mirror that just started has synced records before it has committed a position).
  SELECT coalesce(p.topic, l.topic) AS topic, coalesce(p.partition, l.partition) AS partition,
    l.committed_offset, l.timestamp_ms,
    greatest(l.committed_offset + 1, ls.sync_upstream_offset + 1) AS next_offset,
    l.committed_offset IS NOT NULL OR ls.sync_upstream_offset IS NOT NULL AS has_position,
    p.log_start_offset AS src_log_start_offset, p.high_watermark AS src_high_watermark,
    p.remote_storage AS src_remote_storage, p.local_log_start_offset AS src_local_log_start_offset,
    p.local_retention_ms AS src_local_retention_ms,
    -- Retention's pace since the newest earlier run, on the same topic (its id unchanged).
    CASE WHEN rp.src_started_at_ms > pp.snapshot_at_ms AND p.log_start_offset > pp.log_start_offset
      THEN (p.log_start_offset - pp.log_start_offset) * 1000.0 / (rp.src_started_at_ms - pp.snapshot_at_ms)
      END AS log_start_rate
  FROM {{src_partitions}} p
  CROSS JOIN {{run_params}} rp
  LEFT JOIN {{previous_partitions}} pp ON pp.topic = p.topic AND pp.partition = p.partition
    AND pp.topic_id = p.topic_id
  FULL OUTER JOIN latest l ON l.topic = p.topic AND l.partition = p.partition
  LEFT JOIN latest_sync ls ON ls.topic = coalesce(p.topic, l.topic)
    AND ls.partition = coalesce(p.partition, l.partition)
)
-- Without a position, a partition holding nothing has nothing to be behind on.
, judged AS (
  SELECT placed.*, NOT has_position AND src_high_watermark = src_log_start_offset AS nothing_to_copy
  FROM placed
)
SELECT judged.topic, judged.partition, ts.in_scope AS in_scope, committed_offset, timestamp_ms,
  next_offset, src_log_start_offset, src_high_watermark,
  next_offset - src_log_start_offset AS margin_records,
  log_start_rate,
  CASE WHEN next_offset >= src_log_start_offset THEN (next_offset - src_log_start_offset) / log_start_rate
    END AS margin_seconds,
  CASE WHEN nothing_to_copy THEN FALSE ELSE next_offset < src_log_start_offset END AS below_log_start,
  CASE WHEN nothing_to_copy THEN FALSE ELSE next_offset > src_high_watermark END AS past_end,
  coalesce(next_offset, src_log_start_offset) < src_high_watermark AS behind,
  src_remote_storage, src_local_log_start_offset, src_local_retention_ms,
  -- MM2-TIER-1: the records between its next offset and the source's local log start, which
  -- it copies next from the source's remote tier. A topic without a remote tier, or nothing
  -- to copy: none (0); tiered with its local start unknown: unknown (null, unchecked).
  CASE WHEN nothing_to_copy THEN 0
    -- Not greatest(): it skips a null, and an unread local start would read as 0.
    WHEN src_remote_storage THEN
      CASE WHEN src_local_log_start_offset > next_offset THEN src_local_log_start_offset - next_offset
        WHEN src_local_log_start_offset <= next_offset THEN 0 END
    WHEN NOT src_remote_storage THEN 0 END AS remote_tier_records
FROM judged
LEFT JOIN {{topic_scope}} ts ON ts.topic = judged.topic
""",
    requires=("positions",),
    shown=(
        "next_offset",
        "src_log_start_offset",
        "src_high_watermark",
        "margin_records",
        "margin_seconds",
        "timestamp_ms",
    ),
    causes=causes(
        (
            "the source partition (absent from the source snapshot: the topic deleted?)",
            "src_high_watermark IS NULL",
        ),
        (
            "a position of MirrorMaker 2 (none committed in the offsets topic of Connect and no "
            "offset sync: nothing copied yet)",
            "next_offset IS NULL",
        ),
        (
            "tiered-storage config of the source topic (remote.storage.enable not read)",
            "src_remote_storage IS NULL",
        ),
        (
            "local log start of the tiered source partition (ListOffsets earliest-local not read)",
            "src_remote_storage AND src_local_log_start_offset IS NULL",
        ),
    ),
)

COMPARISONS = (PARTITIONS, SOURCE_READS, SYNCS, CHECKPOINTS, GROUP_OFFSETS, RECORDS, POSITIONS)
