"""Validation results as plain values: what summary.json and the HTML report are rendered from."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from audit.validate.gaps import Gap

Status = Literal["pass", "warn", "fail", "skipped"]
Verdict = Literal["PASS", "WARN", "FAIL"]


@dataclass(frozen=True)
class CheckOutcome:
    """One expectation's result, tagged with the invariant and severity it serves."""

    invariant: str
    severity: Literal["fail", "warn"]
    description: str
    success: bool
    evaluated: int
    unexpected: int
    examples: tuple[dict[str, Any], ...] = ()
    # The comparison table it judged and the SQL selecting the rows it rejects
    # (``audit.validate.violations``): for the history, not part of summary.json.
    table: str = ""
    unexpected_sql: str | None = None
    # The columns it judged, shown in its example rows beside the table's key columns.
    columns: tuple[str, ...] = ()
    # Rows of its domain it could not judge (the judged column null: an input was missing),
    # as GX counted them, and the SQL selecting them (``audit.validate.coverage``).
    missing: int = 0
    unchecked_sql: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("unexpected_sql")
        out.pop("unchecked_sql")
        out.pop("columns")
        out["examples"] = list(self.examples)
        return out


@dataclass(frozen=True)
class InvariantResult:
    id: str
    statement: str
    status: Status
    evaluated: int
    violations: int
    examples: tuple[dict[str, Any], ...] = ()
    reason: str | None = None
    checks: tuple[CheckOutcome, ...] = field(default_factory=tuple)
    # In-scope rows it could not check, per missing input; ``accepted`` where the
    # configuration accepts that gap by name (readiness.accept_unchecked).
    gaps: tuple[Gap, ...] = ()
    accepted: bool = False

    @property
    def unchecked(self) -> int:
        return sum(g.rows for g in self.gaps)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "statement": self.statement,
            "status": self.status,
            "evaluated": self.evaluated,
            "violations": self.violations,
            "unchecked": self.unchecked,
            "examples": list(self.examples),
        }
        if self.reason is not None:
            out["reason"] = self.reason
        # What it could not check, per missing input (all rows in unchecked.parquet); named
        # apart from CM-DATA-1's ``coverage`` of verified offset ranges.
        out["unchecked_gaps"] = [g.to_json() for g in self.gaps]
        if self.accepted:
            out["unchecked_accepted"] = True
        out["checks"] = [c.to_json() for c in self.checks]
        return out


MAX_EXAMPLES = 5


NOTHING_IN_SCOPE = "nothing in scope: no in-scope rows to check"
NOT_COLLECTED = "not collected"
# An invariant no expectation of the suites a run used names (validation.expectations_dir:
# an operator's copy that leaves its checks out): unchecked by choice, not for want of data.
NOT_IN_SUITES = "not checked by the suites in use"


def fold(
    invariant_id: str,
    statement: str,
    checks: list[CheckOutcome],
    gaps: tuple[Gap, ...] = (),
    accepted: bool = False,
) -> InvariantResult:
    """Fold one invariant's checks and its coverage into a status.

    fail if a fail-severity check failed, else warn if a warn-severity check failed or an
    in-scope row was left unchecked (``gaps``: never a pass over rows not checked), else
    pass when rows were checked, else skipped: nothing in scope to verify.
    """
    failed = [c for c in checks if not c.success]
    failing_fail = [c for c in failed if c.severity == "fail"]
    failing_warn = [c for c in failed if c.severity == "warn"]
    evaluated = max((c.evaluated for c in checks), default=0)
    status: Status
    if failing_fail:
        status, counted = "fail", failing_fail
    elif failing_warn:
        status, counted = "warn", failing_warn
    elif gaps:
        status, counted = "warn", []
    elif evaluated == 0:
        return InvariantResult(invariant_id, statement, "skipped", 0, 0, (), NOTHING_IN_SCOPE, tuple(checks))
    else:
        status, counted = "pass", []
    # Rows failing: the largest count of any one failing check (a row can fail two checks).
    violations = max((c.unexpected for c in counted), default=0)
    examples: list[dict[str, Any]] = []
    for c in counted:
        for e in c.examples:
            if len(examples) < MAX_EXAMPLES and e not in examples:
                examples.append(e)
    reason = None
    if gaps:
        reason = "not checked: " + "; ".join(g.describe() for g in gaps)
    return InvariantResult(
        invariant_id,
        statement,
        status,
        evaluated,
        violations,
        tuple(examples),
        reason,
        tuple(checks),
        gaps,
        accepted,
    )


def skipped(invariant_id: str, statement: str, reason: str) -> InvariantResult:
    return InvariantResult(invariant_id, statement, "skipped", 0, 0, (), reason)


def verdict(results: list[InvariantResult]) -> Verdict:
    statuses = {r.status for r in results}
    if "fail" in statuses:
        return "FAIL"
    if "warn" in statuses:
        return "WARN"
    return "PASS"
