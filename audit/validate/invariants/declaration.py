"""What an invariant is, declared once: its ID, statement, what it needs, what an operator
does when it fails, and what the report shows beside it.

An invariant is declared in the Great Expectations suite that holds its checks: the
suite's ``meta.invariants`` maps its ID to these fields, and the expectations that name it
(``meta.invariant``) are its checks. One file then holds what an invariant means and how it
is asserted, and the suites stay what operators edit and what Data Docs shows. Which rows
are checked, examples and history keys follow from the comparison table the checks read
(``audit/compare/tables.py``); coverage from the checks' row conditions and the table's
declared causes (``audit/validate/coverage.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

# The kinds of details the report and summary.json can add beside an invariant's counts
# (audit/report/details.py computes each).
DETAIL_KINDS = frozenset(
    {
        "open_transactions",
        "mirror_state",
        "record_divergence",
        "batch_divergence",
        "mm2_first_missing",
        "mm2_matching",
    }
)


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
    # The details summary.json and the report add beside its counts (``DETAIL_KINDS``).
    details: tuple[str, ...] = ()
    # The snapshot inputs a cluster may not report, on which its verdict of a row depends:
    # "side:table.column" (the value null on that side) or "side:table" (the row absent
    # from that side's snapshot), side "src" or "dst". Without one the row must be
    # unchecked (or failing), never passed: tests/unit/test_unknown_never_passes.py
    # generates that test for every input declared here.
    inputs: tuple[str, ...] = ()

    @classmethod
    def from_meta(cls, invariant_id: str, fields_: Any, where: str) -> Invariant:
        """One entry of a suite's ``meta.invariants``; ``where`` names the suite in the
        error a malformed entry raises (a broken package, so a ``ValueError``)."""
        if not isinstance(fields_, dict):
            raise ValueError(f"{where}: meta.invariants[{invariant_id!r}] is not an object")
        known = {f.name for f in fields(cls)} - {"id", "not_applicable"}
        unknown = sorted(set(fields_) - known)
        missing = sorted({"statement", "needs", "remediation"} - set(fields_))
        problems = [f"unknown field(s) {', '.join(unknown)}"] if unknown else []
        problems += [f"missing {', '.join(missing)}"] if missing else []
        if problems:
            raise ValueError(f"{where}: meta.invariants[{invariant_id!r}]: {'; '.join(problems)}")
        details = tuple(fields_.get("details", ()))
        if not set(details) <= DETAIL_KINDS:
            raise ValueError(
                f"{where}: meta.invariants[{invariant_id!r}].details: unknown kind(s) "
                f"{', '.join(sorted(set(details) - DETAIL_KINDS))}"
            )
        return cls(
            invariant_id,
            statement=str(fields_["statement"]),
            needs=str(fields_["needs"]),
            remediation=str(fields_["remediation"]),
            spark_only=bool(fields_.get("spark_only", False)),
            details=details,
            inputs=tuple(str(i) for i in fields_.get("inputs", ())),
        )
