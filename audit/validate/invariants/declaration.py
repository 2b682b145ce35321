"""What an invariant is, declared once: its ID, statement, what it needs, what an operator
does when it fails, and what the report shows beside it.

An invariant's checks are the expectations that name it in the Great Expectations suites
(``expectations/*.json``, ``meta.invariant``): the suites stay what operators edit and what
Data Docs shows. Which rows are checked, examples and history keys follow from the
comparison table the checks read (``audit/compare/tables.py``); coverage from the
checks' row conditions and the table's declared causes (``audit/validate/coverage.py``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Invariant:
    id: str
    statement: str
    # What must have been collected for the invariant to be checked; shown when it is skipped.
    needs: str
    # What an operator does when it fails or warns: the usual cause and the command or
    # setting that fixes it (the report and summary.json show it beside the invariant).
    remediation: str
    # Why it is never checked in this mode (shown as the skip reason instead of ``needs``).
    not_applicable: str | None = None
    # Its comparison tables grow with the data and are computed by the Spark engine only.
    spark_only: bool = False
    # The details summary.json and the report add beside its counts (audit/report/details.py
    # computes each kind): "open_transactions", "mirror_state", "record_divergence",
    # "batch_divergence", "mm2_first_missing".
    details: tuple[str, ...] = ()
    # The snapshot inputs a cluster may not report, on which its verdict of a row depends:
    # "side:table.column" (the value null on that side) or "side:table" (the row absent
    # from that side's snapshot), side "src" or "dst". Without one the row must be
    # unchecked (or failing), never passed: tests/unit/test_unknown_never_passes.py
    # generates that test for every input declared here.
    inputs: tuple[str, ...] = ()
