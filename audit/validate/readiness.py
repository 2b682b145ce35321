"""Readiness figures: what a failover now would lose and make consumers reprocess.

Each figure is a sum of one term per row of a comparison table, computed by the engine
that holds it (only the sum reaches this process); the profile says which figures. A term
that could not be computed for some row (an input was missing) makes the figure unknown:
null in summary.json with the reason and the number of rows behind it, never a sum that
quietly counts those rows as 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from audit.compare.run import Compared
from audit.validate.figures import (
    EXPECTED_LOSS,
    EXPECTED_REPROCESS,
    EXPECTED_UNSEEN,
    FAILBACK_TRUNCATION,
    LOST,
    PREDICTED_LOSS,
    REALIZED_LOSS,
    REPROCESSED,
    SKIPPED,
    TOTAL_LAG,
    UNSEEN,
    FigureQueries,
    Sum,
)


@dataclass(frozen=True)
class Figures:
    """Figure values by name (None where unknown), and for each unknown one its reason."""

    values: dict[str, int | None]
    unknown: dict[str, dict[str, Any]] = field(default_factory=dict)


# The run's total lag per mode: records behind, summed over the partitions in scope, a
# partition ahead counting 0 (CM-OFFSET-1 judges that). Not greatest(0, lag): it skips a
# null, and a partition whose lag is unknown would count 0, understating the total.
CLUSTER_MIRRORING_LAG = Sum(
    figure=TOTAL_LAG,
    table="partitions",
    term="CASE WHEN data_lag_records < 0 THEN 0 ELSE data_lag_records END",
    where="in_scope",
    rows="in-scope partitions",
    unknown_because="a high watermark (source or destination)",
    missing=(("NOT dst_present", "the destination partition"),),
)
# Mode mm2: records not yet replicated, from the latest offset sync; a partition holding
# no record has none to replicate, synced or not.
MM2_LAG = Sum(
    figure=TOTAL_LAG,
    table="mm2_partitions",
    term=(
        "CASE WHEN src_high_watermark <= src_log_start_offset THEN 0 "
        "WHEN unreplicated_records < 0 THEN 0 ELSE unreplicated_records END"
    ),
    where="in_scope",
    rows="in-scope partitions",
    unknown_because="a high watermark",
    missing=(
        ("NOT dst_present", "the replica partition"),
        ("NOT has_sync", "an offset sync (MirrorMaker 2 has not synced the partition yet)"),
    ),
)

# Readiness (docs/invariants.md): expected loss = the sum over in-scope partitions of
# max(0, source LEO - destination LEO), a partition missing on the destination losing
# everything the source still retains; expected reprocessing = the sum over synced
# (group, partition) pairs of max(0, clamp(source committed) - destination committed);
# never seen by groups = the sum over them of max(0, destination log start -
# max(source committed, source log start)): records the group has not processed that the
# destination no longer holds and the source still does (CM-GROUP-4).
_CM_LOSS = Sum(
    figure=EXPECTED_LOSS,
    table="partitions",
    term="CASE WHEN dst_present THEN greatest(0, lag_records) ELSE src_retained_records END",
    where="in_scope",
    rows="in-scope partitions",
    unknown_because="a high watermark or log start offset",
)
_CM_UNSEEN_BECAUSE = "a log start offset (source or destination)"
CLUSTER_MIRRORING_FIGURES: FigureQueries = (
    _CM_LOSS,
    Sum(
        figure=EXPECTED_REPROCESS,
        table="group_offsets",
        term="CASE WHEN sync_delta IS NOT NULL THEN greatest(0, -sync_delta) END",
        where="sync_candidate AND dst_committed_offset IS NOT NULL",
        rows="synced group partitions",
        unknown_because="the clamp (destination log start or high watermark)",
    ),
    # Beside the expected loss, never added to it: records past what was mirrored are the
    # mirror's lag (counted there); these are below the destination's log start.
    Sum(
        figure=EXPECTED_UNSEEN,
        table="group_offsets",
        term=UNSEEN.name,  # group_offsets' per-row count (CM-GROUP-4's column)
        where="sync_candidate",
        rows="synced group partitions",
        unknown_because=_CM_UNSEEN_BECAUSE,
        missing=(
            ("dst_log_start_offset IS NULL", "the destination partition's log start offset"),
            ("src_log_start_offset IS NULL", "the source partition's log start offset"),
        ),
    ),
)

# Mode mm2: loss is what the replicas have not received (a partition without any offset
# sync loses all it retains); reprocessing is what translating each group's latest
# checkpoint makes its consumers read again.
_MM2_LOSS = Sum(
    figure=EXPECTED_LOSS,
    table="mm2_partitions",
    term="CASE WHEN has_sync AND dst_present THEN greatest(0, unreplicated_records) "
    "WHEN NOT has_sync THEN src_high_watermark - src_log_start_offset END",
    where="in_scope",
    rows="in-scope partitions",
    unknown_because="the replica partition on the target",
)
MM2_FIGURES: FigureQueries = (
    _MM2_LOSS,
    # MM2-SKIP-1's column: per pair of consecutive offset syncs, the skipped source offsets
    # nothing explains. Absent syncs (no table) make it unknown, never 0.
    Sum(
        figure=LOST,
        table="mm2_syncs",
        term=LOST.name,  # mm2_syncs' column of the figure's name, per pair of syncs
        where="in_scope",
        rows="offset sync gaps",
        unknown_because="what explains a skipped source offset (compaction, transactional producers)",
        missing=(
            (
                "compacted IS NULL OR transactional_producers IS NULL",
                "what explains a skipped source offset (compaction, transactional producers)",
            ),
            (
                "compacted IS NOT NULL AND transactional_producers IS NOT NULL AND NOT gap_scanned",
                "a records scan of the gap (its markers, aborted or compacted records not told from lost)",
            ),
        ),
    ),
    Sum(
        figure=EXPECTED_REPROCESS,
        table="mm2_group_offsets",
        term="reprocess_records",
        where="in_scope AND mirrored AND has_checkpoint AND NOT dst_active",
        rows="checkpointed group partitions",
        unknown_because="an offset sync at or below the checkpoint (older syncs compacted away)",
    ),
)

# readiness --wait-drained (audit/drain.py): per in-scope partition what is left to copy
# (the loss figure's terms), the source's end (unchanged between two polls: quiet) and
# whether a transaction is open there. A term that is null (unknown) is never drained.
CLUSTER_MIRRORING_DRAIN = f"""
SELECT topic, partition,
  {_CM_LOSS.term} AS lag_records,
  src_high_watermark AS src_end,
  src_last_stable_offset < src_high_watermark AS open_txn
FROM {{partitions}} WHERE in_scope
"""

MM2_DRAIN = f"""
SELECT topic, partition,
  {_MM2_LOSS.term} AS lag_records,
  src_high_watermark AS src_end,
  NOT src_quiet AS open_txn
FROM {{mm2_partitions}} WHERE in_scope
"""

# failover verify: where a group resumes is its destination commit, judged against the last
# mirrored offset and the destination partition; a term lacking any of them is unknown, and
# its reason names which (failover_groups' columns).
_RESUME_INPUTS: tuple[tuple[str, str], ...] = (
    ("resume_offset IS NULL", "the group's commit on the destination (where its consumers resume)"),
    ("mirrored_end IS NULL", "the last mirrored offset (mirror state field LastMirrorOffset)"),
    ("dst_high_watermark IS NULL", "the destination partition"),
)

_RESUME_BECAUSE = (
    "the last mirrored offset (mirror state field LastMirrorOffset) or the destination partition"
)

# failover verify: what readiness predicted and what the stop cost, summed. Each term is the
# table's column of the figure's name (its value per row: the report shows the rows).
FAILOVER_FIGURES: FigureQueries = (
    Sum(
        figure=PREDICTED_LOSS,
        table="failover_partitions",
        term=PREDICTED_LOSS.name,
        where="in_scope",
        rows="in-scope partitions",
        unknown_because="the readiness run's offsets",
    ),
    Sum(
        figure=REALIZED_LOSS,
        table="failover_partitions",
        term=REALIZED_LOSS.name,
        where="in_scope",
        rows="in-scope partitions",
        unknown_because="the last mirrored offset (mirror state field LastMirrorOffset)",
    ),
    Sum(
        figure=SKIPPED,
        table="failover_groups",
        term=SKIPPED.name,
        where="in_scope",
        rows="synced group partitions",
        unknown_because=_RESUME_BECAUSE,
        missing=_RESUME_INPUTS,
    ),
    Sum(
        figure=REPROCESSED,
        table="failover_groups",
        term=REPROCESSED.name,
        where="in_scope",
        rows="synced group partitions",
        unknown_because=_RESUME_BECAUSE,
        missing=_RESUME_INPUTS,
    ),
    # Below the destination's log start at the stop: retention's doing, not the sync's.
    # CM-GROUP-4's column (failover_groups takes group_offsets' as it is), so the same data
    # gives the same count here as readiness's EXPECTED_UNSEEN.
    Sum(
        figure=UNSEEN,
        table="failover_groups",
        term=UNSEEN.name,
        where="in_scope",
        rows="synced group partitions",
        unknown_because=_CM_UNSEEN_BECAUSE,
        missing=(
            ("dst_log_start_offset IS NULL", "the destination partition's log start offset"),
            # failover_groups holds no source log start: a null term with the destination's
            # known lacks the source's (CM-GROUP-4's term needs only the two).
            ("dst_log_start_offset IS NOT NULL", "the source partition's log start offset"),
        ),
    ),
)

# failback readiness: what mirroring back would truncate, summed over the old source.
FAILBACK_FIGURES: FigureQueries = (
    Sum(
        figure=FAILBACK_TRUNCATION,
        table="failback_partitions",
        term="truncate_records",
        where="in_scope",
        rows="in-scope partitions",
        unknown_because="the last mirrored offset (mirror state field LastMirrorOffset)",
    ),
)


def figures_sql(sums: list[Sum]) -> str:
    """One row for all of ``sums``, figures over one table (one pass per table, where each
    figure was a Spark job of its own): per figure ``i``, the sum of its known terms
    (``x{i}``), how many rows its ``where`` holds for (``n{i}``) and how many of their
    terms are null (``unknown{i}``). Summed as 38-digit decimals, in both engines: each
    term fits 64 bits (the snapshot's offsets are bounded,
    ``compare.run.MAX_SNAPSHOT_INTEGER``), but their sum over enough partitions need not,
    and a 64-bit sum overflows into an error (Spark) or a failed cast (DuckDB) in the
    middle of a run. The value reaches Python as an int."""
    (table,) = {f.table for f in sums}
    columns = []
    for i, f in enumerate(sums):
        held = f"coalesce({f.where}, FALSE)"
        columns += [
            f"sum(CASE WHEN {held} THEN CAST(({f.term}) AS DECIMAL(38, 0)) END) AS x{i}",
            f"CAST(coalesce(sum(CASE WHEN {held} THEN 1 ELSE 0 END), 0) AS BIGINT) AS n{i}",
            f"CAST(coalesce(sum(CASE WHEN {held} AND ({f.term}) IS NULL THEN 1 ELSE 0 END), 0) AS BIGINT)"
            f" AS unknown{i}",
        ]
    return "SELECT " + ",\n  ".join(columns) + f"\nFROM {{{table}}}\n"


def missing_sql(f: Sum) -> str:
    """One row: among the rows whose term is null, how many lack each of ``f.missing``'s
    inputs (``m0``, ``m1``, ...), and how many lack none of them (``other``)."""
    null = f"({f.term}) IS NULL"
    counts = [
        f"CAST(sum(CASE WHEN {null} AND ({cond}) THEN 1 ELSE 0 END) AS BIGINT) AS m{i}"
        for i, (cond, _) in enumerate(f.missing)
    ]
    none = " AND ".join(f"NOT coalesce({cond}, FALSE)" for cond, _ in f.missing)
    counts.append(f"CAST(sum(CASE WHEN {null} AND {none} THEN 1 ELSE 0 END) AS BIGINT) AS other")
    return f"SELECT {', '.join(counts)}\nFROM {{{f.table}}} WHERE {f.where}\n"


def _missing_inputs(compared: Compared, f: Sum) -> dict[str, int]:
    """Per input of ``f.missing``, the rows with a null term that lack it (inputs no such
    row lacks left out); rows no condition explains counted under ``f.unknown_because``."""
    if not f.missing:
        return {}
    (row,) = compared.tables.rows(missing_sql(f))
    found = {name: int(row[f"m{i}"] or 0) for i, (_, name) in enumerate(f.missing)}
    found[f.unknown_because] = int(row["other"] or 0)
    return {name: n for name, n in found.items() if n}


def figures(compared: Compared, queries: FigureQueries) -> Figures:
    """Each figure's value, computed by the engine that holds the tables; a figure over a
    table that was not computed, or with a row whose term is unknown, is unknown."""
    values: dict[str, int | None] = {}
    unknown: dict[str, dict[str, Any]] = {}
    by_table: dict[str, list[Sum]] = {}
    for f in queries:
        by_table.setdefault(f.table, []).append(f)
    counted: dict[str, tuple[Any, Any, Any]] = {}
    for table, sums in by_table.items():
        if compared.tables.has(table):
            (row,) = compared.tables.rows(figures_sql(sums))
            for i, f in enumerate(sums):
                counted[f.name] = (row[f"x{i}"], row[f"n{i}"], row[f"unknown{i}"])
    for f in queries:
        name = f.name
        if name not in counted:
            values[name] = None
            unknown[name] = {"reason": f"{f.table} was not computed (its inputs were not collected)"}
            continue
        total, judged, nulls = counted[name]
        missing = int(nulls or 0)
        if missing:
            values[name] = None
            known = int(total or 0)
            inputs = _missing_inputs(compared, f)
            lacking = (
                "; ".join(f"{what} is missing for {n}" for what, n in inputs.items())
                if inputs
                else f"{f.unknown_because} is missing"
            )
            unknown[name] = {
                "reason": f"unknown for {missing} of {int(judged)} {f.rows}: {lacking}",
                "rows_unknown": missing,
                "rows": int(judged),
                "known_part": known,
            }
            if inputs:
                unknown[name]["missing_inputs"] = inputs
        else:
            values[name] = int(total or 0)  # the sum over no rows is 0: nothing to lose
    return Figures(values, unknown)
