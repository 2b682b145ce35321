"""Each invariant's status folded from a run's comparison tables as the validator folds it,
without Great Expectations: the generated "unknown never passes" tests' judge
(tests/unit/test_unknown_never_passes.py, tests/unit/test_invariant_outcomes.py,
tests/spark/test_unknown_data_level.py)."""

from __future__ import annotations

import dataclasses
from typing import Any

from audit.config import AuditConfig
from audit.validate.run import mode_suites
from audit.validate.violations import domain_sql, unchecked_rows_sql, unexpected_rows_sql

RANK = {"skipped": 0, "pass": 1, "warn": 2, "fail": 3}


def fold_statuses(
    compared: Any, cfg: AuditConfig, suite_patterns: tuple[str, ...], only: str = "TRUE"
) -> dict[str, str]:
    """Per invariant over the rows ``only`` selects: fail or warn where a check of that
    severity rejects a row, warn where a check leaves a row unchecked, pass where it judged
    rows, skipped where none was in its checks' domains or its table was not computed (its
    input was not collected). Each expectation's rows are selected by the SQL forms the
    validator derives from the suites themselves (tests/unit/test_violations.py holds the
    first to the rows GX rejects)."""
    params = dataclasses.asdict(cfg.thresholds)
    status: dict[str, str] = {}
    for suite in mode_suites(cfg, suite_patterns):
        checks = suite.raw["expectations"]
        if not compared.tables.has(suite.table):
            for e in checks:
                status.setdefault(e["meta"]["invariant"], "skipped")
            continue
        counts = _counts(compared, suite.table, only, [_forms(suite.name, e, params) for e in checks])
        for e, (rejected, unchecked, judged) in zip(checks, counts, strict=True):
            inv, severity = e["meta"]["invariant"], e["meta"]["severity"]
            if rejected:
                got = severity
            elif unchecked:
                got = "warn"
            elif judged:
                got = "pass"
            else:  # no row in the check's domain: it checked nothing
                got = "skipped"
            if RANK[got] >= RANK[status.get(inv, "skipped")]:
                status[inv] = got
    return status


def _forms(suite: str, e: dict[str, Any], params: dict[str, Any]) -> tuple[str, str, str]:
    """The rows an expectation rejects, leaves unchecked (FALSE where it leaves none) and
    judges (its domain), as the validator derives them from the suite."""
    rejected = unexpected_rows_sql(e["type"], e["kwargs"], params)
    unchecked = unchecked_rows_sql(e["type"], e["kwargs"], params)
    domain = domain_sql(e["kwargs"], params)
    assert rejected is not None and domain is not None, (suite, e["type"])
    return rejected, unchecked or "FALSE", domain


def _counts(compared: Any, table: str, only: str, forms: list[tuple[str, str, str]]) -> list[tuple[int, ...]]:
    """Each expectation's (rejected, unchecked, judged) row counts over the rows ``only``
    selects: one query per table, every count a column of it."""
    columns = [
        f"sum(CASE WHEN ({only}) AND ({where}) THEN 1 ELSE 0 END) AS c{i}_{j}"
        for i, three in enumerate(forms)
        for j, where in enumerate(three)
    ]
    (row,) = compared.tables.rows(f"SELECT {', '.join(columns)} FROM {{{table}}}")
    return [tuple(int(row[f"c{i}_{j}"] or 0) for j in range(3)) for i in range(len(forms))]
