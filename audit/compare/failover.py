"""The failover's comparisons: the mirror's state at a stop, what the stop cost against what
readiness predicted, and what mirroring back would truncate. One SQL query each (see
``sql.py``), run by either engine.

``{dst_mirror_partitions}`` is the mirror's own per-partition state (``mirror_state.py``),
in the snapshot of the cluster the mirror writes to. KIP-1279's stop (``handleStopping``
in the prototype) records the last mirrored position as the destination's log end offset
and leader epoch, bumps the leader epoch, aborts the transactions in flight (an ABORT
marker each) and writes one pid-reset control record: after it the destination's LEO is
the last mirrored offset plus those control records, never "ahead" of the source.
"""

from __future__ import annotations

from audit.compare.sql import (
    DST_PARTITION,
    LAST_MIRROR_OFFSET,
    MIRROR_ROW,
    Comparison,
    causes,
    in_list,
    offset_in_range,
)

STOPPED_STATES = ("STOPPED", "PAUSED")

# Per partition of the mirror state: its state joined to the partitions comparison, the
# control records the stop wrote (the destination's LEO past the last mirrored offset), and
# what CM-FAILOVER-1 asks of a stopped partition. Where batches were read, the markers past
# the last mirrored offset are counted and must be exactly those records; otherwise they
# may be at most one per partition (the pid-reset record) plus one per transaction open on
# the source at the stop (an ABORT each).
MIRROR_STATES = Comparison(
    "mirror_states",
    ("topic", "partition"),
    requires=("dst_mirror_partitions",),
    sql=f"""
WITH markers_past AS (
  SELECT k.topic, k.partition, count(*) AS n
  FROM {{dst_markers}} k
  JOIN {{dst_mirror_partitions}} m ON m.topic = k.topic AND m.partition = k.partition
  WHERE k.offset >= m.last_mirror_offset
  GROUP BY k.topic, k.partition
),
-- Every partition the mirror reports, and every in-scope partition of either snapshot it
-- does not report: that one's state is unknown (its checks lack their input: coverage).
placed AS (
  SELECT coalesce(m.topic, p.topic) AS topic, coalesce(m.partition, p.partition) AS partition,
    m.mirror, m.state, m.error_message, m.source_offset, m.destination_offset,
    m.last_mirror_epoch, m.last_mirror_offset
  FROM {{dst_mirror_partitions}} m
  FULL OUTER JOIN (SELECT topic, partition FROM {{partitions}} WHERE in_scope) p
    ON p.topic = m.topic AND p.partition = m.partition
),
joined AS (
  SELECT m.mirror, m.topic, m.partition, m.state, m.error_message, m.source_offset,
    m.destination_offset, m.last_mirror_epoch, m.last_mirror_offset,
    -- In scope by the topic's name: a partition absent from both snapshots is still the
    -- mirror's, and its checks then lack their inputs (coverage), never pass.
    coalesce(ts.in_scope, FALSE) AS in_scope,
    p.src_high_watermark, p.src_leader_epoch, p.dst_high_watermark, p.dst_last_stable_offset,
    p.dst_leader_epoch, p.stop_control_bound, p.stop_control_records,
    m.state IN {in_list(STOPPED_STATES)} AS stopped,
    m.state = 'FAILED' AS failed,
    CASE WHEN r.dst_markers_collected THEN coalesce(mp.n, 0) END AS stop_markers
  FROM placed m
  CROSS JOIN {{run_params}} r
  LEFT JOIN {{partitions}} p ON p.topic = m.topic AND p.partition = m.partition
  LEFT JOIN {{topic_scope}} ts ON ts.topic = m.topic
  LEFT JOIN markers_past mp ON mp.topic = m.topic AND mp.partition = m.partition
)
SELECT joined.*,
  CASE WHEN stopped AND stop_control_records IS NOT NULL THEN
    CASE WHEN stop_markers IS NOT NULL THEN stop_control_records = stop_markers
      ELSE stop_control_records BETWEEN 0 AND stop_control_bound END
  END AS control_records_ok,
  CASE WHEN stopped THEN dst_last_stable_offset = dst_high_watermark END AS dst_transactions_closed,
  -- Three-valued: false as soon as one comparison is false, unknown (unchecked) where an
  -- epoch the check needs is missing and the others hold.
  CASE WHEN stopped THEN dst_leader_epoch > src_leader_epoch
    AND dst_leader_epoch > last_mirror_epoch END AS epoch_bumped
FROM joined
""",
    shown=(
        "state",
        "error_message",
        "last_mirror_offset",
        "dst_high_watermark",
        "stop_control_records",
        "stop_control_bound",
        "stop_markers",
        "dst_last_stable_offset",
        "src_leader_epoch",
        "dst_leader_epoch",
        "last_mirror_epoch",
    ),
    causes=causes(
        ("the mirror state of the partition (no row for it)", "state IS NULL"),
        ("the destination partition (absent from the snapshots)", "dst_high_watermark IS NULL"),
        LAST_MIRROR_OFFSET,
        ("mirror state field LastMirrorEpoch", "last_mirror_epoch IS NULL"),
        ("leader epochs (none reported)", "src_leader_epoch IS NULL OR dst_leader_epoch IS NULL"),
    ),
)

# The readiness run's ``partitions`` columns failover verify reads (``{before_partitions}``):
# a readiness run of another version of the tool is read where it holds these.
BEFORE_COLUMNS = (
    "topic",
    "partition",
    "in_scope",
    "src_present",
    "dst_present",
    "lag_records",
    "src_retained_records",
    "src_high_watermark",
    "dst_high_watermark",
)

# failover verify: per partition readiness judged, what it predicted the failover would
# lose and what the stop lost: the source's LEO at the stop (the mirror's own record of
# it, else the readiness run's source snapshot) past the last mirrored offset.
FAILOVER_PARTITIONS = Comparison(
    "failover_partitions",
    ("topic", "partition"),
    requires=("dst_mirror_partitions",),
    sql="""
WITH placed AS (
  SELECT b.topic, b.partition, b.in_scope,
    CASE WHEN b.dst_present THEN greatest(0, b.lag_records) ELSE b.src_retained_records END
      AS predicted_loss_records,
    m.state AS mirror_state,
    m.last_mirror_offset,
    coalesce(m.source_offset, b.src_high_watermark) AS source_offset_at_stop,
    CASE WHEN m.source_offset IS NOT NULL THEN 'mirror state' ELSE 'readiness snapshot' END
      AS source_offset_from,
    b.src_high_watermark AS readiness_src_high_watermark,
    b.dst_high_watermark AS readiness_dst_high_watermark
  FROM {before_partitions} b
  LEFT JOIN {dst_mirror_partitions} m ON m.topic = b.topic AND m.partition = b.partition
  WHERE b.src_present
)
-- Unknown (null) without a last mirrored offset: greatest() skips nulls, so it is guarded.
, realized AS (
  SELECT placed.*,
    CASE WHEN last_mirror_offset IS NOT NULL AND source_offset_at_stop IS NOT NULL
      THEN greatest(0, source_offset_at_stop - last_mirror_offset) END AS realized_loss_records
  FROM placed
)
SELECT realized.*, realized_loss_records <= predicted_loss_records AS loss_within_prediction
FROM realized
""",
    shown=(
        "predicted_loss_records",
        "realized_loss_records",
        "source_offset_at_stop",
        "source_offset_from",
        "last_mirror_offset",
        "mirror_state",
    ),
    causes=causes(MIRROR_ROW, LAST_MIRROR_OFFSET),
)

# failover verify: per synced group partition, where its consumers resume on the destination
# (its committed offset there) against what the group had processed on the source: records
# it will skip (resuming past them: the sync's fault) and read again (resuming behind),
# counted only where the destination holds them (from its log start to the last mirrored
# offset; what was never mirrored is loss), and apart from those, the records it will never
# see because the destination no longer holds them (below its log start: retention's doing),
# never counted as skipped. That last count is CM-GROUP-4's own column, group_offsets'
# ``unseen_records`` (readiness's ``expected_unseen_records`` sums it), taken as it is, not
# computed again: a second formula had left out the source's log start (committed 50,
# source log start 80, destination log start 100 gave 50, where readiness said 20; the 30
# below the source's log start are retention's on the source, lost to the group already).
FAILOVER_GROUPS = Comparison(
    "failover_groups",
    ("group_id", "topic", "partition"),
    requires=("dst_mirror_partitions",),
    sql=f"""
WITH placed AS (
  SELECT g.group_id, g.topic, g.partition, g.sync_candidate AS in_scope,
    g.src_committed_offset, g.dst_committed_offset AS resume_offset,
    g.dst_log_start_offset, g.dst_high_watermark, g.unseen_records,
    m.last_mirror_offset AS mirrored_end
  FROM {{group_offsets}} g
  LEFT JOIN {{dst_mirror_partitions}} m ON m.topic = g.topic AND m.partition = g.partition
  WHERE g.src_committed_offset IS NOT NULL
)
SELECT placed.*,
  {offset_in_range("resume_offset", "dst_log_start_offset", "dst_high_watermark")} AS resume_in_range,
  -- Out of range, the consumer's auto.offset.reset decides where it resumes: counted as
  -- out of range (CM-FAILOVER-3), not as a number of records skipped or reprocessed.
  -- Unknown without the last mirrored offset (least() and greatest() skip nulls: guarded),
  -- and without the destination partition, whose range is then unknown (not out of range:
  -- the ELSE would count 0 records over a range nobody read).
  CASE WHEN resume_offset IS NULL OR mirrored_end IS NULL OR dst_high_watermark IS NULL THEN NULL
    WHEN {offset_in_range("resume_offset", "dst_log_start_offset", "dst_high_watermark")}
    THEN greatest(0, least(resume_offset, mirrored_end)
                     - greatest(src_committed_offset, dst_log_start_offset))
    ELSE 0 END AS skipped_records,
  CASE WHEN resume_offset IS NULL OR mirrored_end IS NULL OR dst_high_watermark IS NULL THEN NULL
    WHEN {offset_in_range("resume_offset", "dst_log_start_offset", "dst_high_watermark")}
    THEN greatest(0, least(src_committed_offset, mirrored_end) - resume_offset) ELSE 0 END
    AS reprocessed_records
FROM placed
""",
    shown=(
        "src_committed_offset",
        "resume_offset",
        "dst_log_start_offset",
        "dst_high_watermark",
        "skipped_records",
        "reprocessed_records",
        "unseen_records",
    ),
    causes=causes(
        ("the mirror state of the partition, or its LastMirrorOffset", "mirrored_end IS NULL"), DST_PARTITION
    ),
)

# failback readiness: mirroring back makes the old source (here the source snapshot) a
# mirror of the old destination, which truncates each partition to the last mirrored
# offset recorded at the stop: what it holds past that point (produced after the stop, or
# never mirrored) is lost; open transactions there could get a second marker.
FAILBACK_PARTITIONS = Comparison(
    "failback_partitions",
    ("topic", "partition"),
    requires=("dst_mirror_partitions",),
    sql="""
WITH committed_past AS (
  SELECT o.topic, o.partition, count(*) AS n
  FROM {src_group_offsets} o
  JOIN {dst_mirror_partitions} m ON m.topic = o.topic AND m.partition = o.partition
  WHERE o.committed_offset > m.last_mirror_offset
  GROUP BY o.topic, o.partition
)
-- Every partition of the old source, and every partition the mirror state names that the
-- old source's snapshot lacks (unavailable, or gone): unknown there, never dropped.
SELECT coalesce(p.topic, m.topic) AS topic, coalesce(p.partition, m.partition) AS partition,
  coalesce(ts.in_scope, FALSE) AS in_scope,
  m.state AS mirror_state, m.last_mirror_offset, m.last_mirror_epoch,
  p.src_log_start_offset, p.src_high_watermark, p.src_last_stable_offset,
  -- Unknown (null) without a last mirrored offset: greatest() skips nulls, so it is guarded.
  CASE WHEN m.last_mirror_offset IS NOT NULL AND p.src_high_watermark IS NOT NULL
    THEN greatest(0, p.src_high_watermark - m.last_mirror_offset) END AS truncate_records,
  p.src_last_stable_offset < p.src_high_watermark AS src_open_txn,
  CASE WHEN m.last_mirror_offset IS NOT NULL THEN coalesce(c.n, 0) END AS groups_committed_past
FROM (SELECT * FROM {partitions} WHERE src_present) p
FULL OUTER JOIN {dst_mirror_partitions} m ON m.topic = p.topic AND m.partition = p.partition
LEFT JOIN {topic_scope} ts ON ts.topic = coalesce(p.topic, m.topic)
LEFT JOIN committed_past c ON c.topic = p.topic AND c.partition = p.partition
""",
    shown=(
        "truncate_records",
        "last_mirror_offset",
        "src_high_watermark",
        "src_last_stable_offset",
        "mirror_state",
        "groups_committed_past",
    ),
    causes=causes(
        ("the partition on the old source (absent from its snapshot)", "src_high_watermark IS NULL"),
        MIRROR_ROW,
        LAST_MIRROR_OFFSET,
    ),
)

FAILBACK_GROUPS = Comparison(
    "failback_groups",
    ("group_id", "topic", "partition"),
    requires=("dst_mirror_partitions",),
    sql="""
SELECT g.group_id, g.topic, g.partition, g.group_in_scope AND g.topic_in_scope AS in_scope,
  g.src_committed_offset, m.state AS mirror_state, m.last_mirror_offset,
  g.src_committed_offset > m.last_mirror_offset AS committed_past_truncation,
  CASE WHEN m.last_mirror_offset IS NOT NULL
    THEN greatest(0, g.src_committed_offset - m.last_mirror_offset) END AS records_past_truncation
FROM {group_offsets} g
-- Every committed partition, with the mirror state where it has one: one without is
-- unchecked (coverage), not dropped.
LEFT JOIN {dst_mirror_partitions} m ON m.topic = g.topic AND m.partition = g.partition
WHERE g.src_committed_offset IS NOT NULL
""",
    shown=(
        "src_committed_offset",
        "last_mirror_offset",
        "records_past_truncation",
    ),
    causes=causes(MIRROR_ROW, LAST_MIRROR_OFFSET),
)


VERIFY = (FAILOVER_PARTITIONS, FAILOVER_GROUPS)
FAILBACK = (FAILBACK_PARTITIONS, FAILBACK_GROUPS)
