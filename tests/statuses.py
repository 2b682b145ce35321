"""Each invariant's status folded from a run's comparison tables as the validator folds it,
without Great Expectations: the generated "unknown never passes" tests' judge
(tests/unit/test_unknown_never_passes.py, tests/unit/test_invariant_outcomes.py,
tests/spark/test_data_level_outcomes.py)."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from audit.config import AuditConfig
from audit.validate.gx import _judged_columns
from audit.validate.run import mode_suites
from audit.validate.violations import domain_sql, unchecked_rows_sql, unexpected_rows_sql

RANK = {"skipped": 0, "pass": 1, "warn": 2, "fail": 3}


@dataclasses.dataclass(frozen=True)
class Check:
    """One expectation of a suite: the table it reads, its invariant and severity, and the
    column it judges (two checks of one column differ by severity)."""

    table: str
    invariant: str
    severity: str
    column: str


Counts = tuple[int, int, int]  # a check's rejected, unchecked and judged rows
K = TypeVar("K")


def check_counts(
    compared: Any, cfg: AuditConfig, suite_patterns: tuple[str, ...], only: str = "TRUE"
) -> dict[Check, Counts | None]:
    """Each expectation's (rejected, unchecked, judged) row counts over the rows ``only``
    selects, None where its table was not computed (its input was not collected)."""
    return {
        check: None if by is None else by.get(0, (0, 0, 0))
        for check, by in _grouped(compared, cfg, suite_patterns, only, None).items()
    }


def counts_by_partition(
    compared: Any, cfg: AuditConfig, suite_patterns: tuple[str, ...]
) -> dict[Check, dict[int, Counts] | None]:
    """Each expectation's counts per partition (one query per table for every partition: a
    test of many partitions' cases then folds any of them without another query)."""
    return _grouped(compared, cfg, suite_patterns, "TRUE", "partition")


def counts_by(
    compared: Any, cfg: AuditConfig, suite_patterns: tuple[str, ...], key: str
) -> dict[Check, dict[Any, Counts] | None]:
    """``counts_by_partition`` per value of another column ``key`` of every table the suites
    judge (``topic``: a topic per case); a null value's rows under None."""
    return _grouped(compared, cfg, suite_patterns, "TRUE", key)


def expectations(cfg: AuditConfig, suite_patterns: tuple[str, ...]) -> dict[Check, dict[str, Any]]:
    """Each check's expectation as its suite declares it (type, kwargs, meta, description),
    in the order the validator runs them."""
    return {
        _check(suite, e): e for suite in mode_suites(cfg, suite_patterns) for e in suite.raw["expectations"]
    }


def over(
    counts: dict[Check, dict[K, Counts] | None], partitions: tuple[K, ...]
) -> dict[Check, Counts | None]:
    """The per-partition (per key value: ``counts_by``) counts summed over ``partitions``."""
    return {
        check: None if by is None else _sum(by.get(p, (0, 0, 0)) for p in partitions)
        for check, by in counts.items()
    }


def fold(counts: dict[Check, Counts | None]) -> dict[str, str]:
    """Per invariant: fail or warn where a check of that severity rejects a row, warn where a
    check leaves a row unchecked, pass where it judged rows, skipped where none was in its
    checks' domains or its table was not computed."""
    status: dict[str, str] = {}
    for check, got_counts in counts.items():
        rejected, unchecked, judged = got_counts or (0, 0, 0)
        if rejected:
            got = check.severity
        elif unchecked:
            got = "warn"
        elif judged:
            got = "pass"
        else:  # no row in the check's domain (or no table): it checked nothing
            got = "skipped"
        if RANK[got] >= RANK[status.get(check.invariant, "skipped")]:
            status[check.invariant] = got
    return status


def fold_statuses(
    compared: Any, cfg: AuditConfig, suite_patterns: tuple[str, ...], only: str = "TRUE"
) -> dict[str, str]:
    """Each invariant's status over the rows ``only`` selects (``fold``)."""
    return fold(check_counts(compared, cfg, suite_patterns, only))


def _sum(counts: Any) -> Counts:
    rejected = unchecked = judged = 0
    for r, u, j in counts:
        rejected, unchecked, judged = rejected + r, unchecked + u, judged + j
    return rejected, unchecked, judged


def _check(suite: Any, e: dict[str, Any]) -> Check:
    meta = e["meta"]
    return Check(suite.table, meta["invariant"], meta["severity"], ",".join(_judged_columns(e["kwargs"])))


def _grouped(
    compared: Any, cfg: AuditConfig, suite_patterns: tuple[str, ...], only: str, key: str | None
) -> dict[Check, dict[Any, Counts] | None]:
    """Each expectation's counts over the rows ``only`` selects, per value of ``key`` (a
    column; None: all under 0), None where its table was not computed. The rows are selected by the SQL
    forms the validator derives from the suites themselves (tests/unit/test_violations.py
    holds the first to the rows GX rejects)."""
    params = dataclasses.asdict(cfg.thresholds)
    out: dict[Check, dict[Any, Counts] | None] = {}
    for suite in mode_suites(cfg, suite_patterns):
        checks = suite.raw["expectations"]
        keys = [_check(suite, e) for e in checks]
        if not compared.tables.has(suite.table):
            out.update(dict.fromkeys(keys))
            continue
        forms = [_forms(suite.name, e, params) for e in checks]
        out.update(zip(keys, _counts(compared, suite.table, only, key, forms), strict=True))
    return out


def _forms(suite: str, e: dict[str, Any], params: dict[str, Any]) -> tuple[str, str, str]:
    """The rows an expectation rejects, leaves unchecked (FALSE where it leaves none) and
    judges (its domain), as the validator derives them from the suite."""
    rejected = unexpected_rows_sql(e["type"], e["kwargs"], params)
    unchecked = unchecked_rows_sql(e["type"], e["kwargs"], params)
    domain = domain_sql(e["kwargs"], params)
    assert rejected is not None and domain is not None, (suite, e["type"])
    return rejected, unchecked or "FALSE", domain


def _counts(
    compared: Any, table: str, only: str, key: str | None, forms: list[tuple[str, str, str]]
) -> list[dict[Any, Counts]]:
    """Each expectation's (rejected, unchecked, judged) row counts over the rows ``only``
    selects, per value of ``key``: one query per table, every count a column of it."""
    columns = [
        f"sum(CASE WHEN ({where}) THEN 1 ELSE 0 END) AS c{i}_{j}"
        for i, three in enumerate(forms)
        for j, where in enumerate(three)
    ]
    grouped = f" GROUP BY {key}" if key else ""
    rows = compared.tables.rows(
        f"SELECT {key or 0} AS k, {', '.join(columns)} FROM {{{table}}} AS judged WHERE ({only}){grouped}"
    )
    got: list[dict[Any, Counts]] = [{} for _ in forms]
    for row in rows:
        k = row["k"]  # a partition (or 0: no key) as an int; a text or null key as it is
        for i, by in enumerate(got):
            c = [int(row[f"c{i}_{j}"] or 0) for j in range(3)]
            by[k if k is None or isinstance(k, str) else int(k)] = (c[0], c[1], c[2])
    return got
