"""Validation results as plain values: what summary.json and the HTML report are rendered from."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

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

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("unexpected_sql")
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

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("id")
        out["examples"] = list(self.examples)
        out["checks"] = [c.to_json() for c in self.checks]
        if self.reason is None:
            out.pop("reason")
        return out


MAX_EXAMPLES = 5


def fold(invariant_id: str, statement: str, checks: list[CheckOutcome]) -> InvariantResult:
    """Fold one invariant's checks into a status.

    fail if a fail-severity check failed, else warn if a warn-severity check failed, else
    pass when rows were checked, else skipped (nothing was there to verify).
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
    elif evaluated == 0:
        return InvariantResult(
            invariant_id, statement, "skipped", 0, 0, (), "no in-scope rows to check", tuple(checks)
        )
    else:
        status, counted = "pass", []
    # Rows failing: the largest count of any one failing check (a row can fail two checks).
    violations = max((c.unexpected for c in counted), default=0)
    examples: list[dict[str, Any]] = []
    for c in counted:
        for e in c.examples:
            if len(examples) < MAX_EXAMPLES and e not in examples:
                examples.append(e)
    return InvariantResult(
        invariant_id, statement, status, evaluated, violations, tuple(examples), None, tuple(checks)
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
