"""The bounded slices of the comparison tables that the report shows.

Only the worst N rows per chart reach this process (the engine sorts and limits), so the
report's size and the driver's memory stay flat however many partitions and groups there
are. The slices are SQL over the comparison tables, run by whichever engine computed them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from audit.compare.run import Compared
from audit.validate.figures import Sum
from audit.validate.invariants import named
from audit.validate.readiness import CLUSTER_MIRRORING_LAG, MM2_LAG
from audit.validate.results import InvariantResult

CHART_ROWS = 40
VERDICT_SQL = "VERDICT_SQL"  # where a chart's SQL takes the verdict of its row (``verdict_sql``)


@dataclass(frozen=True)
class ReportData:
    totals: Mapping[str, int | None]
    lag: tuple[dict[str, Any], ...]
    epochs: tuple[dict[str, Any], ...]
    group_positions: tuple[dict[str, Any], ...]
    # failover verify: predicted and realized loss per partition; failback: truncation.
    failover: tuple[dict[str, Any], ...] = ()
    failback: tuple[dict[str, Any], ...] = ()
    # max_lag_seconds, min_epoch_headroom (None where the mode or the data has none).
    extremes: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    # Per topic in scope: lag_records (summed; None where a partition's lag is unknown),
    # lag_seconds (the largest); one row per topic.
    topic_lag: tuple[dict[str, Any], ...] = ()
    # Mode mm2: the partitions with records known lost (MM2-SKIP-1), most first.
    lost: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class ReportSlices:
    """The report's queries over a mode's comparison tables: one row of totals
    (partitions, mirrored_partitions, group_partitions), the run's total lag (a figure:
    unknown where a partition's lag is, never the sum of the known ones alone) and the
    worst rows per chart, each bounded by ``CHART_ROWS``; a chart the mode has not is None."""

    totals: str
    lag: str
    total_lag: Sum
    epochs: str | None = None
    # The invariants whose checks colour each chart's bars (a bar is red where a failing
    # check of theirs rejects the row, amber where a warning one does): the suites decide,
    # the report does not restate their thresholds. The charts' SQL carries VERDICT_SQL.
    lag_judged_by: tuple[str, ...] = ()
    epochs_judged_by: tuple[str, ...] = ()
    lag_table: str = "partitions"
    group_positions: str | None = None
    failover: str | None = None
    failback: str | None = None
    extremes: str | None = None
    topic_lag: str | None = None
    lost: str | None = None


def _topic_sum(lag: Sum) -> str:
    """A topic's lag: the sum of its partitions', null where one of them is unknown."""
    return (
        f"CASE WHEN count(*) = count({lag.term}) "
        f"THEN coalesce(sum(CAST({lag.term} AS DECIMAL(38, 0))), 0) END"
    )


CLUSTER_MIRRORING_SLICES = ReportSlices(
    # Lag: too much (CM-LAG-1) or the destination ahead (CM-OFFSET-1); epochs: DLE below
    # SLE (CM-EPOCH-1) or short of headroom (CM-EPOCH-2).
    lag_judged_by=(named.CM_LAG_1, named.CM_OFFSET_1),
    epochs_judged_by=(named.CM_EPOCH_1, named.CM_EPOCH_2),
    total_lag=CLUSTER_MIRRORING_LAG,
    totals="""
SELECT
  (SELECT count(*) FROM {partitions} WHERE in_scope) AS partitions,
  (SELECT coalesce(sum(CAST(dst_present AS BIGINT)), 0) FROM {partitions} WHERE in_scope)
    AS mirrored_partitions,
  (SELECT count(*) FROM {group_offsets} WHERE topic_in_scope) AS group_partitions
""",
    lag=f"""
SELECT topic, partition, data_lag_records AS lag_records, lag_seconds, src_high_watermark,
  dst_high_watermark, {VERDICT_SQL} AS verdict
FROM {{partitions}} WHERE in_scope AND dst_present
ORDER BY data_lag_records DESC NULLS LAST, topic, partition LIMIT {CHART_ROWS}
""",
    epochs=f"""
SELECT topic, partition, src_leader_epoch, dst_leader_epoch, epoch_headroom AS headroom,
  {VERDICT_SQL} AS verdict
FROM {{partitions}} WHERE in_scope AND dst_present
ORDER BY epoch_headroom ASC NULLS FIRST, topic, partition LIMIT {CHART_ROWS}
""",
    group_positions=f"""
SELECT group_id, topic, partition, dst_log_start_offset AS log_start, dst_high_watermark AS log_end,
  dst_committed_offset AS committed, expected_offset, dst_active AS active,
  coalesce(src_group_type, dst_group_type) AS group_type
FROM {{group_offsets}} WHERE topic_in_scope AND dst_partition_known
ORDER BY abs(coalesce(sync_delta, 0)) DESC, group_id, topic, partition LIMIT {CHART_ROWS}
""",
    extremes="""
SELECT CAST(max(lag_seconds) AS DOUBLE) AS max_lag_seconds, min(epoch_headroom) AS min_epoch_headroom
FROM {partitions} WHERE in_scope AND dst_present
""",
    topic_lag=f"""
SELECT topic, {_topic_sum(CLUSTER_MIRRORING_LAG)} AS lag_records,
  CAST(max(lag_seconds) AS DOUBLE) AS lag_seconds
FROM {{partitions}} WHERE in_scope GROUP BY topic ORDER BY topic
""",
)

# Mode mm2: the lag chart shows unreplicated records per partition (from the offset
# syncs); there are no leader-epoch or group-position charts under translation.
MM2_SLICES = ReportSlices(
    lag_judged_by=(named.CM_LAG_1,),
    lag_table="mm2_partitions",
    total_lag=MM2_LAG,
    totals="""
SELECT
  (SELECT count(*) FROM {mm2_partitions} WHERE in_scope) AS partitions,
  (SELECT coalesce(sum(CAST(dst_present AS BIGINT)), 0) FROM {mm2_partitions} WHERE in_scope)
    AS mirrored_partitions,
  (SELECT count(*) FROM {mm2_group_offsets} WHERE in_scope) AS group_partitions
""",
    lag=f"""
SELECT topic, partition, unreplicated_records AS lag_records, CAST(NULL AS DOUBLE) AS lag_seconds,
  src_high_watermark, dst_high_watermark, {VERDICT_SQL} AS verdict
FROM {{mm2_partitions}} WHERE in_scope AND has_sync
ORDER BY unreplicated_records DESC NULLS LAST, topic, partition LIMIT {CHART_ROWS}
""",
    topic_lag=f"""
SELECT topic, {_topic_sum(MM2_LAG)} AS lag_records, CAST(NULL AS DOUBLE) AS lag_seconds
FROM {{mm2_partitions}} WHERE in_scope GROUP BY topic ORDER BY topic
""",
    # Known loss by partition and since when: the first gap lies between its two syncs'
    # times (the loss happened after the one and was there by the other). Ordered by the
    # third column, the records lost (its alias shadows the column it sums).
    lost=f"""
SELECT topic, partition, CAST(sum(lost_records) AS BIGINT) AS lost_records, count(*) AS gaps,
  min(skipped_from_offset) AS first_lost_offset, min(prev_timestamp_ms) AS lost_after_ms,
  min(timestamp_ms) AS lost_by_ms, bool_or(loss_accepted) AS accepted
FROM {{mm2_syncs}} WHERE in_scope AND lost_records > 0
GROUP BY topic, partition ORDER BY 3 DESC, topic, partition LIMIT {CHART_ROWS}
""",
)


# failover verify: the partitions whose stop lost the most beyond the prediction first.
FAILOVER_SLICES = dataclasses.replace(
    CLUSTER_MIRRORING_SLICES,
    failover=f"""
SELECT topic, partition, predicted_loss_records, realized_loss_records, source_offset_at_stop,
  source_offset_from, last_mirror_offset, mirror_state
FROM {{failover_partitions}} WHERE in_scope
ORDER BY coalesce(realized_loss_records, 0) - predicted_loss_records DESC, topic, partition
LIMIT {CHART_ROWS}
""",
)

# failback readiness: the partitions mirroring back would truncate the most first.
FAILBACK_SLICES = dataclasses.replace(
    CLUSTER_MIRRORING_SLICES,
    failback=f"""
SELECT topic, partition, truncate_records, last_mirror_offset, src_high_watermark,
  groups_committed_past, src_open_txn, mirror_state
FROM {{failback_partitions}} WHERE in_scope
ORDER BY truncate_records DESC NULLS LAST, topic, partition
LIMIT {CHART_ROWS}
""",
)


def verdict_sql(results: Sequence[InvariantResult], table: str, invariants: tuple[str, ...]) -> str:
    """SQL giving a row of ``table`` 'fail' where a failing-severity check of ``invariants``
    rejects it, 'warn' where a warning one does, else 'ok': the predicates the validation
    evaluated (``CheckOutcome.unexpected_sql``), as the history's violation keys are, so an
    edited suite recolours the charts and the report compiles nothing itself."""
    arms: dict[str, list[str]] = {"fail": [], "warn": []}
    for result in results:
        if result.id not in invariants:
            continue
        for check in result.checks:
            if check.table == table and check.unexpected_sql is not None:
                arms[check.severity].append(f"({check.unexpected_sql})")
    cases = " ".join(f"WHEN {' OR '.join(w)} THEN '{sev}'" for sev, w in arms.items() if w)
    return f"CASE {cases} ELSE 'ok' END" if cases else "'ok'"


def collect_report_data(
    compared: Compared, slices: ReportSlices, results: Sequence[InvariantResult] = ()
) -> ReportData:
    """The slices, run by the engine that holds the tables: only bounded rows come back.
    ``results`` (the run's validation) colour the charts' rows."""
    rows = compared.tables.rows

    def judged(sql: str | None, table: str, invariants: tuple[str, ...]) -> str | None:
        if sql is None:
            return None
        return sql.replace(VERDICT_SQL, verdict_sql(results, table, invariants))

    def optional(sql: str | None) -> tuple[dict[str, Any], ...]:
        return tuple(rows(sql)) if sql else ()

    (totals,) = rows(slices.totals)
    extremes = rows(slices.extremes)[0] if slices.extremes else {}
    return ReportData(
        totals={k: int(v or 0) for k, v in totals.items()},
        lag=tuple(rows(judged(slices.lag, slices.lag_table, slices.lag_judged_by) or "")),
        epochs=optional(judged(slices.epochs, "partitions", slices.epochs_judged_by)),
        group_positions=optional(slices.group_positions),
        failover=optional(slices.failover),
        failback=optional(slices.failback),
        extremes=extremes,
        # Summed as decimals (no 64-bit overflow over many partitions): as ints from here on.
        topic_lag=tuple(
            {**r, "lag_records": None if r["lag_records"] is None else int(r["lag_records"])}
            for r in optional(slices.topic_lag)
        ),
        # Not computed where the offset syncs were not read: no rows, the figure unknown.
        lost=optional(slices.lost) if compared.tables.has("mm2_syncs") else (),
    )
