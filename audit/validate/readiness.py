"""Readiness figures: what a failover now would lose and make consumers reprocess.

Each figure is one aggregate query over the comparison tables, run by the engine that
computed them (only the sum reaches this process); the profile says which queries.
"""

from __future__ import annotations

from audit.compare.run import Compared

# Each figure: a one-row, one-column query (``x``) over the comparison tables, by the name
# summary.json gives it.
FigureQueries = dict[str, str]

# Readiness (DESIGN.md): expected_loss_records = the sum over in-scope partitions of
# max(0, source LEO - destination LEO), a partition missing on the destination losing
# everything the source still retains; expected_reprocess_records = the sum over synced
# (group, partition) pairs of max(0, clamp(source committed) - destination committed).
CLUSTER_MIRRORING_FIGURES: FigureQueries = {
    "expected_loss_records": """
SELECT CAST(coalesce(sum(CASE WHEN dst_present THEN greatest(0, lag_records)
                              ELSE src_retained_records END), 0) AS BIGINT) AS x
FROM {partitions} WHERE in_scope
""",
    "expected_reprocess_records": """
SELECT CAST(coalesce(sum(greatest(0, -sync_delta)), 0) AS BIGINT) AS x
FROM {group_offsets} WHERE sync_candidate AND dst_committed_offset IS NOT NULL
""",
}

# Mode mm2: loss is what the replicas have not received (a partition without any offset
# sync loses all it retains); reprocessing is what translating each group's latest
# checkpoint makes its consumers read again.
MM2_FIGURES: FigureQueries = {
    "expected_loss_records": """
SELECT CAST(coalesce(sum(CASE WHEN has_sync THEN greatest(0, unreplicated_records)
                              ELSE src_high_watermark - src_log_start_offset END), 0) AS BIGINT) AS x
FROM {mm2_partitions} WHERE in_scope
""",
    "expected_reprocess_records": """
SELECT CAST(coalesce(sum(reprocess_records), 0) AS BIGINT) AS x
FROM {mm2_group_offsets} WHERE in_scope AND mirrored AND has_checkpoint AND NOT dst_active
""",
}

# readiness --wait-drained (audit/drain.py): per in-scope partition what is left to copy
# (the loss figure's terms), the source's end (unchanged between two polls: quiet) and
# whether a transaction is open there.
CLUSTER_MIRRORING_DRAIN = """
SELECT topic, partition,
  CASE WHEN dst_present THEN greatest(0, lag_records) ELSE src_retained_records END AS lag_records,
  src_high_watermark AS src_end,
  coalesce(src_last_stable_offset < src_high_watermark, false) AS open_txn
FROM {partitions} WHERE in_scope
"""

MM2_DRAIN = """
SELECT topic, partition,
  CASE WHEN has_sync THEN greatest(0, unreplicated_records)
       ELSE src_high_watermark - src_log_start_offset END AS lag_records,
  src_high_watermark AS src_end,
  NOT coalesce(src_quiet, true) AS open_txn
FROM {mm2_partitions} WHERE in_scope
"""

# failover verify: what readiness predicted and what the stop cost, summed.
FAILOVER_FIGURES: FigureQueries = {
    "predicted_loss_records": """
SELECT CAST(coalesce(sum(predicted_loss_records), 0) AS BIGINT) AS x FROM {failover_partitions} WHERE in_scope
""",
    "realized_loss_records": """
SELECT CAST(coalesce(sum(realized_loss_records), 0) AS BIGINT) AS x FROM {failover_partitions} WHERE in_scope
""",
    "skipped_records": """
SELECT CAST(coalesce(sum(skipped_records), 0) AS BIGINT) AS x FROM {failover_groups} WHERE in_scope
""",
    "reprocessed_records": """
SELECT CAST(coalesce(sum(reprocessed_records), 0) AS BIGINT) AS x FROM {failover_groups} WHERE in_scope
""",
}

# failback readiness: what mirroring back would truncate, summed over the old source.
FAILBACK_FIGURES: FigureQueries = {
    "failback_truncation_records": """
SELECT CAST(coalesce(sum(truncate_records), 0) AS BIGINT) AS x FROM {failback_partitions} WHERE in_scope
""",
}


def figures(compared: Compared, queries: FigureQueries) -> dict[str, int]:
    """Each figure's value, computed by the engine that holds the tables."""
    out = {}
    for name, sql in queries.items():
        (row,) = compared.tables.rows(sql)
        out[name] = int(row["x"])
    return out
