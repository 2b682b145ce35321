"""Readiness figures: what a failover now would lose and make consumers reprocess.

Each figure is one aggregate query over the comparison tables, run by the engine that
computed them (only the sum reaches this process); the mode's profile says which queries.
"""

from __future__ import annotations

from dataclasses import dataclass

from audit.compare.run import Compared


@dataclass(frozen=True)
class ReadinessFigures:
    # Sum over in-scope partitions of max(0, source LEO - destination LEO); a partition
    # missing on the destination loses everything the source still retains.
    expected_loss_records: int
    # Sum over synced (group, partition) pairs of max(0, clamp(source committed) - destination committed).
    expected_reprocess_records: int


@dataclass(frozen=True)
class FigureQueries:
    """One-row, one-column queries (``x``) over the comparison tables."""

    loss: str
    reprocess: str


CLUSTER_MIRRORING_FIGURES = FigureQueries(
    loss="""
SELECT CAST(coalesce(sum(CASE WHEN dst_present THEN greatest(0, lag_records)
                              ELSE src_retained_records END), 0) AS BIGINT) AS x
FROM {partitions} WHERE in_scope
""",
    reprocess="""
SELECT CAST(coalesce(sum(greatest(0, -sync_delta)), 0) AS BIGINT) AS x
FROM {group_offsets} WHERE sync_candidate AND dst_committed_offset IS NOT NULL
""",
)

# Mode mm2: loss is what the replicas have not received (a partition without any offset
# sync loses all it retains); reprocessing is what translating each group's latest
# checkpoint makes its consumers read again.
MM2_FIGURES = FigureQueries(
    loss="""
SELECT CAST(coalesce(sum(CASE WHEN has_sync THEN greatest(0, unreplicated_records)
                              ELSE src_high_watermark - src_log_start_offset END), 0) AS BIGINT) AS x
FROM {mm2_partitions} WHERE in_scope
""",
    reprocess="""
SELECT CAST(coalesce(sum(reprocess_records), 0) AS BIGINT) AS x
FROM {mm2_group_offsets} WHERE in_scope AND mirrored AND has_checkpoint AND NOT dst_active
""",
)


def readiness_figures(compared: Compared, queries: FigureQueries) -> ReadinessFigures:
    def scalar(sql: str) -> int:
        (row,) = compared.tables.rows(sql)
        return int(row["x"])

    return ReadinessFigures(scalar(queries.loss), scalar(queries.reprocess))
