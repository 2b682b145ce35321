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


@dataclass(frozen=True)
class Figure:
    """``sum(term)`` over the rows of ``table`` where ``where`` holds; ``rows`` names them
    in the reason of an unknown figure; ``unknown_because`` says what a null term lacks.

    ``missing`` names each input a null term may lack apart: (a SQL condition on the row,
    true where that input is missing; its name). An unknown figure's reason then counts
    the rows per input actually missing, so a term that needs two inputs never blames the
    one that is there (a group without a destination commit once read "the destination
    partition is missing" with the partition present); ``unknown_because`` covers the
    null terms no condition explains."""

    table: str
    term: str
    where: str
    rows: str
    unknown_because: str
    missing: tuple[tuple[str, str], ...] = ()


FigureQueries = dict[str, Figure]


@dataclass(frozen=True)
class Figures:
    """Figure values by name (None where unknown), and for each unknown one its reason."""

    values: dict[str, int | None]
    unknown: dict[str, dict[str, Any]] = field(default_factory=dict)


# Readiness (DESIGN.md): expected_loss_records = the sum over in-scope partitions of
# max(0, source LEO - destination LEO), a partition missing on the destination losing
# everything the source still retains; expected_reprocess_records = the sum over synced
# (group, partition) pairs of max(0, clamp(source committed) - destination committed);
# expected_unseen_records = the sum over them of max(0, destination log start -
# max(source committed, source log start)): records the group has not processed that the
# destination no longer holds and the source still does (CM-GROUP-4).
CLUSTER_MIRRORING_FIGURES: FigureQueries = {
    "expected_loss_records": Figure(
        "partitions",
        "CASE WHEN dst_present THEN greatest(0, lag_records) ELSE src_retained_records END",
        "in_scope",
        "in-scope partitions",
        "a high watermark or log start offset",
    ),
    "expected_reprocess_records": Figure(
        "group_offsets",
        "CASE WHEN sync_delta IS NOT NULL THEN greatest(0, -sync_delta) END",
        "sync_candidate AND dst_committed_offset IS NOT NULL",
        "synced group partitions",
        "the clamp (destination log start or high watermark)",
    ),
    # Beside expected_loss_records, never added to it: records past what was mirrored are the
    # mirror's lag (counted there); these are below the destination's log start.
    "expected_unseen_records": Figure(
        "group_offsets",
        "unseen_records",
        "sync_candidate",
        "synced group partitions",
        "a log start offset (source or destination)",
        (
            ("dst_log_start_offset IS NULL", "the destination partition's log start offset"),
            ("src_log_start_offset IS NULL", "the source partition's log start offset"),
        ),
    ),
}

# Mode mm2: loss is what the replicas have not received (a partition without any offset
# sync loses all it retains); reprocessing is what translating each group's latest
# checkpoint makes its consumers read again.
MM2_FIGURES: FigureQueries = {
    "expected_loss_records": Figure(
        "mm2_partitions",
        "CASE WHEN has_sync AND dst_present THEN greatest(0, unreplicated_records) "
        "WHEN NOT has_sync THEN src_high_watermark - src_log_start_offset END",
        "in_scope",
        "in-scope partitions",
        "the replica partition on the target",
    ),
    "expected_reprocess_records": Figure(
        "mm2_group_offsets",
        "reprocess_records",
        "in_scope AND mirrored AND has_checkpoint AND NOT dst_active",
        "checkpointed group partitions",
        "an offset sync at or below the checkpoint (older syncs compacted away)",
    ),
}

# readiness --wait-drained (audit/drain.py): per in-scope partition what is left to copy
# (the loss figure's terms), the source's end (unchanged between two polls: quiet) and
# whether a transaction is open there. A term that is null (unknown) is never drained.
CLUSTER_MIRRORING_DRAIN = f"""
SELECT topic, partition,
  {CLUSTER_MIRRORING_FIGURES["expected_loss_records"].term} AS lag_records,
  src_high_watermark AS src_end,
  src_last_stable_offset < src_high_watermark AS open_txn
FROM {{partitions}} WHERE in_scope
"""

MM2_DRAIN = f"""
SELECT topic, partition,
  {MM2_FIGURES["expected_loss_records"].term} AS lag_records,
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

# failover verify: what readiness predicted and what the stop cost, summed.
FAILOVER_FIGURES: FigureQueries = {
    "predicted_loss_records": Figure(
        "failover_partitions",
        "predicted_loss_records",
        "in_scope",
        "in-scope partitions",
        "the readiness run's offsets",
    ),
    "realized_loss_records": Figure(
        "failover_partitions",
        "realized_loss_records",
        "in_scope",
        "in-scope partitions",
        "the last mirrored offset (mirror state field LastMirrorOffset)",
    ),
    "skipped_records": Figure(
        "failover_groups",
        "skipped_records",
        "in_scope",
        "synced group partitions",
        "the last mirrored offset (mirror state field LastMirrorOffset) or the destination partition",
        _RESUME_INPUTS,
    ),
    "reprocessed_records": Figure(
        "failover_groups",
        "reprocessed_records",
        "in_scope",
        "synced group partitions",
        "the last mirrored offset (mirror state field LastMirrorOffset) or the destination partition",
        _RESUME_INPUTS,
    ),
    # Below the destination's log start at the stop: retention's doing, not the sync's.
    # CM-GROUP-4's column (failover_groups takes group_offsets' as it is), so the same data
    # gives the same count here as readiness's expected_unseen_records.
    "unseen_records": Figure(
        "failover_groups",
        "unseen_records",
        "in_scope",
        "synced group partitions",
        CLUSTER_MIRRORING_FIGURES["expected_unseen_records"].unknown_because,
        (
            ("dst_log_start_offset IS NULL", "the destination partition's log start offset"),
            # failover_groups holds no source log start: a null term with the destination's
            # known lacks the source's (CM-GROUP-4's term needs only the two).
            ("dst_log_start_offset IS NOT NULL", "the source partition's log start offset"),
        ),
    ),
}

# failback readiness: what mirroring back would truncate, summed over the old source.
FAILBACK_FIGURES: FigureQueries = {
    "failback_truncation_records": Figure(
        "failback_partitions",
        "truncate_records",
        "in_scope",
        "in-scope partitions",
        "the last mirrored offset (mirror state field LastMirrorOffset)",
    ),
}


def figure_sql(f: Figure) -> str:
    """One row: the sum of the known terms, how many rows there are and how many terms are
    null. Summed as 38-digit decimals, in both engines: each term fits 64 bits (the
    snapshot's offsets are bounded, ``compare.run.MAX_SNAPSHOT_INTEGER``), but their sum
    over enough partitions need not, and a 64-bit sum overflows into an error (Spark) or
    a failed cast (DuckDB) in the middle of a run. The value reaches Python as an int."""
    return f"""
SELECT sum(CAST(({f.term}) AS DECIMAL(38, 0))) AS x,
  CAST(count(*) AS BIGINT) AS n,
  CAST(sum(CASE WHEN ({f.term}) IS NULL THEN 1 ELSE 0 END) AS BIGINT) AS unknown
FROM {{{f.table}}} WHERE {f.where}
"""


def missing_sql(f: Figure) -> str:
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


def _missing_inputs(compared: Compared, f: Figure) -> dict[str, int]:
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
    for name, f in queries.items():
        if not compared.tables.has(f.table):
            values[name] = None
            unknown[name] = {"reason": f"{f.table} was not computed (its inputs were not collected)"}
            continue
        (row,) = compared.tables.rows(figure_sql(f))
        missing = int(row["unknown"] or 0)
        if missing:
            values[name] = None
            known = int(row["x"] or 0)
            inputs = _missing_inputs(compared, f)
            lacking = (
                "; ".join(f"{what} is missing for {n}" for what, n in inputs.items())
                if inputs
                else f"{f.unknown_because} is missing"
            )
            unknown[name] = {
                "reason": f"unknown for {missing} of {int(row['n'])} {f.rows}: {lacking}",
                "rows_unknown": missing,
                "rows": int(row["n"]),
                "known_part": known,
            }
            if inputs:
                unknown[name]["missing_inputs"] = inputs
        else:
            values[name] = int(row["x"] or 0)  # the sum over no rows is 0: nothing to lose
    return Figures(values, unknown)


def shown(summary_part: dict[str, Any], name: str) -> str:
    """A figure as a person reads it: the number, or ``unknown (why)``."""
    value = summary_part.get(name)
    if value is not None:
        return str(value)
    why = ((summary_part.get("unknown_figures") or {}).get(name) or {}).get("reason", "not computed")
    return f"unknown ({why})"
