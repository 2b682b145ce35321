"""Each invariant's status folded from a run's comparison tables as the validator folds it,
without Great Expectations: the generated "unknown never passes" tests' judge
(tests/unit/test_unknown_never_passes.py, tests/spark/test_unknown_data_level.py)."""

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
        if not compared.tables.has(suite.table):
            for e in suite.raw["expectations"]:
                status.setdefault(e["meta"]["invariant"], "skipped")
            continue
        for e in suite.raw["expectations"]:
            inv, severity = e["meta"]["invariant"], e["meta"]["severity"]
            rejected = unexpected_rows_sql(e["type"], e["kwargs"], params)
            unchecked = unchecked_rows_sql(e["type"], e["kwargs"], params)
            domain = domain_sql(e["kwargs"], params)
            assert rejected is not None and domain is not None, (suite.name, e["type"])
            if _count(compared, suite.table, f"({only}) AND ({rejected})"):
                got = severity
            elif unchecked is not None and _count(compared, suite.table, f"({only}) AND ({unchecked})"):
                got = "warn"
            elif _count(compared, suite.table, f"({only}) AND ({domain})"):
                got = "pass"
            else:  # no row in the check's domain: it checked nothing
                got = "skipped"
            if RANK[got] >= RANK[status.get(inv, "skipped")]:
                status[inv] = got
    return status


def _count(compared: Any, table: str, where: str) -> int:
    (row,) = compared.tables.rows(f"SELECT count(*) AS n FROM {{{table}}} WHERE {where}")
    return int(row["n"])
