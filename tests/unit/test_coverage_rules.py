"""The coverage rules as pure logic: how a status folds checks and gaps, what a GO / NO-GO
job answers, the SQL that selects unchecked rows, and the summary's schema."""

from __future__ import annotations

from typing import Any

import pytest

from audit.validate.expectation_sql import unchecked_rows_sql
from audit.validate.gaps import Gap
from audit.validate.gating import answer
from audit.validate.results import CheckOutcome, InvariantResult, fold, skipped

ORDERS_1 = Gap("source leader epoch", 1, ("topic", "partition"), ({"topic": "orders", "partition": "1"},))


def _check(
    success: bool = True, evaluated: int = 3, severity: str = "fail", unexpected: int = 0
) -> CheckOutcome:
    return CheckOutcome("CM-X-1", severity, "d", success, evaluated, unexpected)  # type: ignore[arg-type]


def test_checked_rows_and_no_gap_pass() -> None:
    assert fold("CM-X-1", "s", [_check()]).status == "pass"


def test_a_gap_beside_checked_rows_is_warn_never_pass_and_names_the_input() -> None:
    result = fold("CM-X-1", "s", [_check()], (ORDERS_1,))
    assert result.status == "warn"
    assert result.unchecked == 1
    assert result.reason == "not checked: source leader epoch missing for 1 partition (first: orders-1)"


def test_nothing_checked_and_every_row_unchecked_is_warn_not_skipped() -> None:
    result = fold("CM-X-1", "s", [_check(evaluated=0)], (ORDERS_1,))
    assert result.status == "warn" and result.evaluated == 0


def test_a_failing_check_stays_fail_with_a_gap() -> None:
    result = fold("CM-X-1", "s", [_check(success=False, unexpected=2)], (ORDERS_1,))
    assert (result.status, result.violations, result.unchecked) == ("fail", 2, 1)


def test_nothing_checked_and_nothing_unchecked_is_nothing_in_scope() -> None:
    result = fold("CM-X-1", "s", [_check(evaluated=0)])
    assert result.status == "skipped" and (result.reason or "").startswith("nothing in scope")


def _result(
    status: str, gaps: tuple[Gap, ...] = (), accepted: bool = False, reason: str | None = None
) -> Any:
    return InvariantResult("CM-X-1", "s", status, 1, 0, (), reason, (), gaps, accepted)  # type: ignore[arg-type]


def test_go_only_over_full_coverage_of_the_gating_invariants() -> None:
    assert answer([_result("pass")], {"CM-X-1"}, False).go
    nogo = answer([_result("warn", (ORDERS_1,))], {"CM-X-1"}, False)
    assert not nogo.go
    assert nogo.reasons == (
        "cannot verify: CM-X-1: source leader epoch missing for 1 partition (first: orders-1)",
    )
    # A gap in an invariant that does not gate the job is reported, but does not block GO.
    assert answer([_result("warn", (ORDERS_1,))], {"CM-OTHER"}, False).go


def test_an_accepted_gap_gives_go_and_is_listed() -> None:
    result = answer([_result("warn", (ORDERS_1,), accepted=True)], {"CM-X-1"}, False)
    assert result.go and result.accepted and "accept_unchecked" in result.accepted[0]


def test_not_collected_blocks_go_only_where_the_job_needs_its_inputs() -> None:
    not_collected = skipped("CM-X-1", "s", "not collected: needs mirror_partitions")
    assert answer([not_collected], {"CM-X-1"}, False).go
    nogo = answer([not_collected], {"CM-X-1"}, True)
    assert not nogo.go and nogo.reasons[0].startswith("cannot verify: CM-X-1: not collected")
    nothing = skipped("CM-X-1", "s", "nothing in scope: no in-scope rows to check")
    assert answer([nothing], {"CM-X-1"}, True).go


def test_any_failure_is_no_go() -> None:
    failed = _result("fail")
    assert answer([failed], set(), False).reasons == ("CM-X-1 failed (0 rows)",)


@pytest.mark.parametrize(
    ("kind", "kwargs", "expected"),
    [
        (
            "expect_column_values_to_be_in_set",
            {
                "column": "ok",
                "value_set": [True],
                "row_condition": {
                    "type": "comparison",
                    "column": {"name": "in_scope"},
                    "operator": "==",
                    "parameter": True,
                },
            },
            "(in_scope = TRUE) AND (ok IS NULL)",
        ),
        (
            "expect_column_values_to_be_between",
            {
                "column": "d",
                "max_value": 0,
                "row_condition": {
                    "type": "and",
                    "conditions": [
                        {
                            "type": "comparison",
                            "column": {"name": "in_scope"},
                            "operator": "==",
                            "parameter": True,
                        },
                        {"type": "nullity", "column": {"name": "c"}, "is_null": False},
                    ],
                },
            },
            "((in_scope = TRUE) AND (c IS NOT NULL)) AND (d IS NULL)",
        ),
        (
            "expect_column_pair_values_a_to_be_greater_than_b",
            {"column_A": "a", "column_B": "b", "ignore_row_if": "either_value_is_missing"},
            "a IS NULL OR b IS NULL",
        ),
        ("expect_column_values_to_not_be_null", {"column": "r"}, None),
    ],
)
def test_unchecked_rows_are_the_domain_with_the_judged_column_null(
    kind: str, kwargs: dict[str, Any], expected: str | None
) -> None:
    assert unchecked_rows_sql(kind, kwargs, {}) == expected


def _summary(**invariant: Any) -> dict[str, Any]:
    inv = {
        "statement": "s",
        "status": "pass",
        "evaluated": 1,
        "violations": 0,
        "unchecked": 0,
        "unchecked_gaps": [],
        "examples": [],
        "checks": [],
    }
    inv.update(invariant)
    return {
        "format": "mirror-audit-summary/1",
        "tool_version": "0.1.0",
        "verdict": "PASS",
        "mode": "cluster-mirroring",
        "run": {"job": "audit", "started_at": "x"},
        "coverage": {"complete": True, "unchecked_rows": 0, "gaps": []},
        "invariants": {"CM-X-1": inv},
    }


def test_the_schema_holds_a_summary_to_its_rules() -> None:
    from audit.report.summary import schema_errors

    assert schema_errors(_summary()) == []
    # A pass with unchecked rows, or over nothing, breaks the schema's own rules.
    assert schema_errors(_summary(unchecked=1))
    assert schema_errors(_summary(evaluated=0))
    # An unknown figure is null with its reason, never a negative stand-in.
    bad = _summary()
    bad.update({"expected_loss_records": -1, "unknown_figures": {}})
    assert schema_errors(bad)
    unknown = _summary()
    reason = {"expected_loss_records": {"reason": "r"}}
    unknown.update({"expected_loss_records": None, "unknown_figures": reason})
    assert schema_errors(unknown) == []
