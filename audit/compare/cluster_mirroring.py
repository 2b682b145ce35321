"""The comparisons of offset-preserving mirrors (mode ``cluster-mirroring``): partitions,
topics, group offsets and groups of both snapshots, one SQL query each (see ``sql.py``).

Offsets are equal on both sides, so partitions and committed offsets join on their names;
every derived column an invariant reads is computed here: lag, epoch headroom, the clamp
``expected_offset = max(dst log start, min(src committed, dst LEO))`` and what a group's
activity and scope make of it.
"""

from __future__ import annotations

from audit.compare.failover import MIRROR_STATES, STOPPED_STATES
from audit.compare.sql import (
    DST_EPOCH,
    DST_PARTITION,
    Comparison,
    causes,
    group_active,
    in_list,
    offset_in_range,
    side,
)

_PARTITION_KEY = ("topic", "partition")
_GROUP_OFFSET_KEY = ("group_id", "topic", "partition")
# Share groups' start offsets count only where both sides' were read: with one side's
# missing, a share group would look unsynced (or synced) for want of an input.
_SHARE_READ = "p.src_share_offsets_read AND p.dst_share_offsets_read"


def _offsets(prefix: str) -> str:
    """One side's committed offsets and its share groups' start offsets (KIP-932) as one
    table of ``group_offsets``' columns: a share group resumes at its start offset, which
    KIP-1279 clamps and syncs as it does a committed offset. The share partition's leader
    epoch is not a consumer's fencing epoch, so it is left out (CM-EPOCH-3 judges
    consumers' commits)."""
    return f"""SELECT group_id, topic, partition, committed_offset, committed_leader_epoch, metadata
  FROM {{{prefix}_group_offsets}}
  UNION ALL
  SELECT group_id, topic, partition, start_offset, CAST(NULL AS INT), CAST(NULL AS STRING)
  FROM {{{prefix}_share_group_offsets}} CROSS JOIN {{run_params}} p WHERE {_SHARE_READ}"""


# A mirror that stopped or paused writes control records past its last mirrored offset.
STOPPED = in_list(STOPPED_STATES)

PARTITIONS = Comparison(
    "partitions",
    _PARTITION_KEY,
    f"""
WITH joined AS (
  SELECT topic, partition,
    {side("s", "partitions", "src_", _PARTITION_KEY)}, coalesce(s.present, FALSE) AS src_present,
    {side("d", "partitions", "dst_", _PARTITION_KEY)}, coalesce(d.present, FALSE) AS dst_present
  FROM (SELECT *, TRUE AS present FROM {{src_partitions}}) s
  FULL OUTER JOIN (SELECT *, TRUE AS present FROM {{dst_partitions}}) d USING (topic, partition)
),
open_txns AS (
  SELECT topic, partition, count(*) AS n
  FROM {{src_open_transactions}} WHERE side = 'partition' GROUP BY topic, partition
),
derived AS (
  SELECT joined.*,
    joined.src_present AND ts.in_scope AS in_scope,
    src_high_watermark - dst_high_watermark AS lag_records,
    -- No records behind: no time behind, whatever the timestamps (an empty partition has
    -- none); behind, unknown (null: unchecked) where a side reports no newest timestamp.
    CASE WHEN src_high_watermark = dst_high_watermark THEN CAST(0 AS DOUBLE)
      ELSE CAST(src_max_timestamp_ms - dst_max_timestamp_ms AS DOUBLE) / 1000 END AS lag_seconds,
    dst_leader_epoch - src_leader_epoch AS epoch_headroom,
    src_high_watermark - src_log_start_offset AS src_retained_records,
    src_last_stable_offset < src_high_watermark AS src_open_txn,
    ts.streams_internal AS streams_internal_topic,
    m.state AS mirror_state,
    m.last_mirror_offset,
    m.last_mirror_epoch,
    ot.n AS src_open_txn_count,
    CASE WHEN m.state IN {STOPPED} THEN dst_high_watermark - m.last_mirror_offset END AS stop_control_records,
    -- Without batches to count them: at most one pid-reset record per partition and one
    -- ABORT per transaction open on the source at the stop.
    CASE WHEN m.state IN {STOPPED}
      THEN 1 + greatest(coalesce(ot.n, 0),
                        CASE WHEN src_last_stable_offset < src_high_watermark THEN 1 ELSE 0 END)
      ELSE 0 END AS stop_control_bound
  FROM joined
  LEFT JOIN {{topic_scope}} ts ON ts.topic = joined.topic
  LEFT JOIN {{dst_mirror_partitions}} m ON m.topic = joined.topic AND m.partition = joined.partition
  LEFT JOIN open_txns ot ON ot.topic = joined.topic AND ot.partition = joined.partition
)
SELECT derived.*,
  -- CM-OFFSET-2's warning: the backlog is more than half of what the source still keeps.
  lag_records * 2 <= src_retained_records AS backlog_within_half_retention,
  CASE WHEN src_open_txn
    THEN CAST(p.src_started_at_ms - src_open_txn_first_timestamp_ms AS DOUBLE) / 1000
  END AS open_txn_age_seconds,
  -- The lag in data records: the stop's control records are not the destination being
  -- ahead (CM-OFFSET-1); where the mirror gives no last mirrored offset, up to the bound.
  lag_records + coalesce(stop_control_records, stop_control_bound) AS data_lag_records,
  p.tiered_destination_fails,
  -- CM-TIER-2: the records between the destination's end and the source's local log start,
  -- which the mirror copies next from the source's remote tier. A topic without a remote
  -- tier has none there (0); tiered with its local start unknown: unknown (null, unchecked).
  -- Not greatest(): it skips a null, and an unread local start would read as 0.
  CASE WHEN src_remote_storage THEN
      CASE WHEN src_local_log_start_offset > dst_high_watermark
        THEN src_local_log_start_offset - dst_high_watermark
        WHEN src_local_log_start_offset <= dst_high_watermark THEN 0 END
    WHEN NOT src_remote_storage THEN 0 END AS remote_tier_records
FROM derived CROSS JOIN {{run_params}} p
""",
    shown=(
        "src_leader_epoch",
        "dst_leader_epoch",
        "src_log_start_offset",
        "src_high_watermark",
        "dst_high_watermark",
        "src_last_stable_offset",
    ),
    causes=causes(
        ("the destination partition (absent from the destination snapshot)", "NOT dst_present"),
        ("source leader epoch (none reported: no leader, or no epochs)", "src_leader_epoch IS NULL"),
        DST_EPOCH,
        (
            "time of the oldest open transaction (open_txn_first_timestamp_ms)",
            "src_open_txn AND src_open_txn_first_timestamp_ms IS NULL",
        ),
        (
            "newest record timestamps of a lagging partition (max_timestamp_ms)",
            "src_max_timestamp_ms IS NULL OR dst_max_timestamp_ms IS NULL",
        ),
        (
            "tiered-storage config of the destination topic (remote.storage.enable not read)",
            "dst_remote_storage IS NULL",
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

TOPICS = Comparison(
    "topics",
    ("topic",),
    """
WITH per_topic AS (
  SELECT topic,
    bool_or(in_scope) AS in_scope,
    sum(CAST(src_present AS BIGINT)) AS src_partition_count,
    sum(CAST(dst_present AS BIGINT)) AS dst_partition_count,
    max(src_topic_id) AS src_topic_id,
    max(dst_topic_id) AS dst_topic_id
  FROM {partitions} GROUP BY topic
)
SELECT per_topic.*,
  dst_partition_count > 0 AS dst_present,
  -- Three-valued: where the mirror promises topic IDs and one side reports none, unknown
  -- (unchecked), not equal.
  dst_partition_count = src_partition_count
    AND (NOT p.preserves_topic_ids OR src_topic_id = dst_topic_id) AS topic_mirrored
FROM per_topic CROSS JOIN {run_params} p
""",
    shown=(
        "src_partition_count",
        "dst_partition_count",
        "src_topic_id",
        "dst_topic_id",
    ),
    causes=causes(("topic IDs (topic_id)", "src_topic_id IS NULL OR dst_topic_id IS NULL")),
)

GROUP_OFFSETS = Comparison(
    "group_offsets",
    _GROUP_OFFSET_KEY,
    f"""
WITH src_offsets AS (
  {_offsets("src")}
),
dst_offsets AS (
  {_offsets("dst")}
),
joined AS (
  SELECT group_id, topic, partition,
    {side("s", "group_offsets", "src_", _GROUP_OFFSET_KEY)},
    {side("d", "group_offsets", "dst_", _GROUP_OFFSET_KEY)}
  FROM src_offsets s FULL OUTER JOIN dst_offsets d USING (group_id, topic, partition)
),
placed AS (
  SELECT joined.*,
    dp.log_start_offset AS dst_log_start_offset,
    dp.high_watermark AS dst_high_watermark,
    dp.leader_epoch AS dst_leader_epoch,
    {side("sg", "groups", "src_", ("group_id",))},
    {side("dg", "groups", "dst_", ("group_id",))},
    ts.in_scope AS topic_in_scope,
    gs.in_scope AS group_in_scope,
    gs.excluded AS group_excluded
  FROM joined
  LEFT JOIN {{dst_partitions}} dp ON dp.topic = joined.topic AND dp.partition = joined.partition
  LEFT JOIN {{src_groups}} sg ON sg.group_id = joined.group_id
  LEFT JOIN {{dst_groups}} dg ON dg.group_id = joined.group_id
  LEFT JOIN {{topic_scope}} ts ON ts.topic = joined.topic
  LEFT JOIN {{group_scope}} gs ON gs.group_id = joined.group_id
),
clamped AS (
  SELECT placed.*,
    {group_active("dst_member_count", "dst_state")} AS dst_active,
    dst_high_watermark IS NOT NULL AS dst_partition_known,
    -- Where a synced offset must sit so consumers neither skip records nor read past the
    -- destination's end; unknown (null) without the destination partition (greatest and
    -- least skip nulls: guarded, or it would read as the source's offset).
    CASE WHEN dst_high_watermark IS NOT NULL
      THEN greatest(dst_log_start_offset, least(src_committed_offset, dst_high_watermark))
    END AS expected_offset
  FROM placed
)
SELECT clamped.*,
  dst_committed_offset - expected_offset AS sync_delta,
  -- A missing destination commit counts as fully behind: consumers would fall back to
  -- auto.offset.reset after failover.
  coalesce(expected_offset - dst_committed_offset, expected_offset) AS sync_behind,
  {offset_in_range("dst_committed_offset", "dst_log_start_offset", "dst_high_watermark")}
    AS dst_offset_in_range,
  dst_leader_epoch - dst_committed_leader_epoch AS commit_epoch_headroom,
  -- A commit the mirror should have synced. Not conditioned on the destination partition
  -- being known: without it the clamp is unknown and the row unchecked, never passed.
  topic_in_scope AND group_in_scope AND NOT dst_active
    AND src_committed_offset IS NOT NULL AS sync_candidate,
  sp.log_start_offset AS src_log_start_offset,
  -- Records the group has not processed that the destination no longer holds (below its
  -- log start) while the source still does: its consumers never see them after a
  -- failover. Unknown without either log start (greatest skips nulls: guarded, or a
  -- missing destination partition would read as 0 records unseen).
  CASE WHEN src_committed_offset IS NOT NULL AND dst_log_start_offset IS NOT NULL
      AND sp.log_start_offset IS NOT NULL
    THEN greatest(0, dst_log_start_offset - greatest(src_committed_offset, sp.log_start_offset))
  END AS unseen_records
FROM clamped
LEFT JOIN {{src_partitions}} sp ON sp.topic = clamped.topic AND sp.partition = clamped.partition
""",
    shown=(
        "src_committed_offset",
        "dst_committed_offset",
        "expected_offset",
        "dst_log_start_offset",
        "dst_high_watermark",
        "dst_active",
        "unseen_records",
    ),
    causes=causes(DST_PARTITION, DST_EPOCH),
)

GROUPS = Comparison(
    "groups",
    ("group_id",),
    f"""
WITH compared AS (
  SELECT group_id,
    bool_or(group_in_scope) AS group_in_scope,
    bool_or(group_excluded) AS group_excluded,
    bool_or(dst_active) AS dst_active,
    max(src_group_type) AS src_group_type,
    max(src_state) AS src_state,
    max(dst_state) AS dst_state,
    max(dst_member_count) AS dst_member_count,
    count(src_committed_offset) AS src_committed_partitions,
    count(dst_committed_offset) AS dst_committed_partitions,
    TRUE AS offsets_compared
  FROM {{group_offsets}} GROUP BY group_id
),
-- Share groups either side lists whose start offsets a side could not give (no Kafka Java
-- client there): their offsets were not compared, so their sync is unknown (null).
unread AS (
  SELECT group_id FROM {{src_groups}} CROSS JOIN {{run_params}} p
  WHERE group_type = 'share' AND NOT ({_SHARE_READ})
  UNION
  SELECT group_id FROM {{dst_groups}} CROSS JOIN {{run_params}} p
  WHERE group_type = 'share' AND NOT ({_SHARE_READ})
),
per_group AS (
  SELECT * FROM compared
  UNION ALL
  SELECT u.group_id, gs.in_scope, gs.excluded,
    {group_active("dg.member_count", "dg.state")},
    sg.group_type, sg.state, dg.state, dg.member_count,
    CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BOOLEAN)
  FROM unread u
  LEFT JOIN {{src_groups}} sg ON sg.group_id = u.group_id
  LEFT JOIN {{dst_groups}} dg ON dg.group_id = u.group_id
  LEFT JOIN {{group_scope}} gs ON gs.group_id = u.group_id
  WHERE u.group_id NOT IN (SELECT group_id FROM compared)
),
-- A Kafka Streams application's group id is its application.id, the prefix of its
-- <application.id>-...-changelog / -repartition topics; a streams group (KIP-1071) is one
-- by its type, whatever its topics are called or whether they are in scope.
streams_apps AS (
  SELECT DISTINCT g.group_id
  FROM per_group g
  JOIN (SELECT DISTINCT topic FROM {{partitions}} WHERE in_scope AND streams_internal_topic) st
    ON left(st.topic, length(g.group_id) + 1) = concat(g.group_id, '-')
),
classified AS (
  SELECT per_group.*,
    a.group_id IS NOT NULL OR coalesce(src_group_type = 'streams', FALSE) AS streams_application,
    CASE WHEN dst_active THEN 'active-on-destination'
      WHEN group_excluded THEN 'excluded'
      WHEN NOT group_in_scope THEN 'out-of-scope'
      ELSE 'synced' END AS classification
  FROM per_group LEFT JOIN streams_apps a ON a.group_id = per_group.group_id
)
SELECT classified.*,
  -- CM-GROUP-3: an excluded group inactive on the destination must carry no synced offsets.
  classification = 'excluded' AND src_committed_partitions > 0 AND dst_committed_partitions > 0
    AS excluded_but_synced
FROM classified
""",
    shown=(
        "classification",
        "offsets_compared",
        "src_group_type",
        "src_state",
        "dst_state",
        "dst_member_count",
    ),
    causes=causes(
        (
            "the share group start offsets (not read: see the share_groups note of the snapshot manifests)",
            "offsets_compared IS NULL",
        ),
    ),
)

COMPARISONS = (PARTITIONS, GROUP_OFFSETS, TOPICS, GROUPS, MIRROR_STATES)
