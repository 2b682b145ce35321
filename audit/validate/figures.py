"""The figures a run reports, each declared once: its name (summary.json's key), its unit,
how a person reads it (the report's tile and the terminal's line), its Prometheus metric,
and, for the figures summed over a comparison table, how each mode computes it and what
makes it unknown.

A figure's name is written here and nowhere else in ``audit/``: the summary, the report,
the terminal and the metrics take it from its declaration, and a test holds deploy/'s
dashboard and alert rules to the declared metrics. A figure the pipeline could not compute
is unknown (null in summary.json, with its reason under ``unknown_figures``), never 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class Figure:
    """One figure as people and machines read it.

    ``label`` heads its tile in the report and its line in the terminal, with ``unit``;
    ``note`` is what a person needs beside the number to read it right (what it is not);
    ``metric`` is its Prometheus gauge (None: not exported), ``metric_help`` that gauge's
    help text."""

    name: str
    unit: str
    label: str
    note: str = ""
    metric: str | None = None
    metric_help: str = ""


@dataclass(frozen=True, kw_only=True)
class Sum:
    """How one mode computes ``figure``: ``sum(term)`` over the rows of ``table`` where
    ``where`` holds, by the engine that holds the table; ``rows`` names those rows in the
    reason of an unknown figure; ``unknown_because`` says what a null term lacks.

    ``missing`` names each input a null term may lack apart: (a SQL condition on the row,
    true where that input is missing; its name). An unknown figure's reason then counts
    the rows per input actually missing, so a term that needs two inputs never blames the
    one that is there (a group without a destination commit once read "the destination
    partition is missing" with the partition present); ``unknown_because`` covers the
    null terms no condition explains."""

    figure: Figure
    table: str
    term: str
    where: str
    rows: str
    unknown_because: str
    missing: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        return self.figure.name


# A job's summed figures, in the order people read them.
FigureQueries = tuple[Sum, ...]

# ---------------------------------------------------------------- the run's (every job)

TOTAL_LAG = Figure(
    name="total_lag_records",
    metric="mirror_audit_lag_records",
    unit="records",
    label="total lag",
    metric_help="Records the destination is behind the source, all partitions in scope.",
)
MAX_LAG_SECONDS = Figure(
    name="max_lag_seconds",
    metric="mirror_audit_max_lag_seconds",
    unit="seconds",
    label="largest lag",
    metric_help="Largest lag of a partition in seconds.",
)
MIN_EPOCH_HEADROOM = Figure(
    name="min_epoch_headroom",
    metric="mirror_audit_min_epoch_headroom",
    unit="epochs",
    label="smallest leader epoch headroom",
    metric_help="Smallest destination-minus-source leader epoch of a partition.",
)

# ----------------------------------------------------- readiness: a failover now would...

EXPECTED_LOSS = Figure(
    name="expected_loss_records",
    metric="mirror_audit_expected_loss_records",
    unit="records",
    label="expected loss",
    note="unmirrored",
    metric_help="Records a failover now would lose (readiness).",
)
EXPECTED_REPROCESS = Figure(
    name="expected_reprocess_records",
    metric="mirror_audit_expected_reprocess_records",
    unit="records",
    label="expected reprocessing",
    note="group offsets behind",
    metric_help="Records consumers would read again after a failover now (readiness).",
)
EXPECTED_UNSEEN = Figure(
    name="expected_unseen_records",
    metric="mirror_audit_expected_unseen_records",
    unit="records",
    label="never seen by groups",
    note="below the destination's log start; not in the loss",
    metric_help="Records groups would never see after a failover now: not yet processed, already deleted on "
    "the destination (readiness).",
)

# Mode mm2: records the mirror passed over without a copy that nothing else explains
# (MM2-SKIP-1): lost already, whatever a failover does; beside the expected loss, never in it.
LOST = Figure(
    name="lost_records",
    metric="mirror_audit_lost_records",
    unit="records",
    label="known lost",
    note="passed over by the mirror without a copy; not in the expected loss",
    metric_help="Source records MirrorMaker 2 passed over without a copy that no marker or compaction "
    "explains (mode mm2): missing from the replica already.",
)

# ------------------------------------------------------ failover verify: the stop cost...

PREDICTED_LOSS = Figure(
    name="predicted_loss_records", unit="records", label="loss predicted", note="by the readiness run"
)
REALIZED_LOSS = Figure(
    name="realized_loss_records", unit="records", label="loss realized", note="at the stop"
)
SKIPPED = Figure(name="skipped_records", unit="records", label="skipped by consumers")
REPROCESSED = Figure(name="reprocessed_records", unit="records", label="reprocessed by consumers")
UNSEEN = Figure(
    name="unseen_records",
    unit="records",
    label="never seen by consumers",
    note="below the destination's log start",
)

# --------------------------------------------------- failback readiness: mirroring back...

FAILBACK_TRUNCATION = Figure(
    name="failback_truncation_records",
    unit="records",
    label="mirroring back truncates",
    note="on the old source",
)

# The run's figures (summary.json's ``run``), computed by the report's queries.
RUN_FIGURES: tuple[Figure, ...] = (TOTAL_LAG, MAX_LAG_SECONDS, MIN_EPOCH_HEADROOM)
# The summed figures, by where summary.json holds them: its top level, and ``failover``.
TOP_LEVEL: tuple[Figure, ...] = (
    EXPECTED_LOSS,
    EXPECTED_REPROCESS,
    EXPECTED_UNSEEN,
    LOST,
    FAILBACK_TRUNCATION,
)
FAILOVER: tuple[Figure, ...] = (PREDICTED_LOSS, REALIZED_LOSS, SKIPPED, REPROCESSED, UNSEEN)
FAILOVER_KEY = "failover"
ALL: tuple[Figure, ...] = (*RUN_FIGURES, *TOP_LEVEL, *FAILOVER)


def shown(summary_part: dict[str, Any], name: str) -> str:
    """A figure as a person reads it: the number, or ``unknown (why)``; a reason that says
    "unknown for ..." already (a sum with unknown rows) is shown as it is, not as
    "unknown (unknown for ...)"."""
    value = summary_part.get(name)
    if value is not None:
        return str(value)
    why = ((summary_part.get("unknown_figures") or {}).get(name) or {}).get("reason", "not computed")
    return why if why.startswith("unknown ") else f"unknown ({why})"


@dataclass(frozen=True)
class Shown:
    """A figure of one summary, ready for a tile or a line: its declaration and its text."""

    figure: Figure
    text: str
    section: str | None


def present(summary: dict[str, Any]) -> list[Shown]:
    """The summed figures a summary holds, in declaration order: the top level's, then
    failover verify's (a figure the job does not compute is absent, not unknown)."""
    found = [Shown(f, shown(summary, f.name), None) for f in TOP_LEVEL if f.name in summary]
    failover = summary.get(FAILOVER_KEY)
    if isinstance(failover, dict):
        found += [Shown(f, shown(failover, f.name), FAILOVER_KEY) for f in FAILOVER if f.name in failover]
    return found
