"""Each invariant's status folded from a run's comparison tables by the validator itself,
without Great Expectations' Data Docs: production's compiled checks
(``audit.validate.evaluate``), their counts per partition or per case from its one query
per table, and production's ``fold`` (``audit.validate.results``). The generated "unknown
never passes" tests judge with it (tests/unit/test_unknown_never_passes.py,
tests/unit/test_invariant_outcomes.py, tests/spark/test_data_level_outcomes.py): grouping
the same counts by partition lets one comparison hold many cases."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any, TypeVar

from audit.config import AuditConfig
from audit.validate.evaluate import CompiledCheck, compile_suite, grouped_counts, outcome
from audit.validate.evaluate import Counts as Tally
from audit.validate.gaps import Gap
from audit.validate.results import fold as fold_invariant
from audit.validate.run import mode_suites


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
    return {_check(c): dict(c.expectation) for c in _compiled(cfg, suite_patterns)}


def over(
    counts: dict[Check, dict[K, Counts] | None], partitions: tuple[K, ...]
) -> dict[Check, Counts | None]:
    """The per-partition (per key value: ``counts_by``) counts summed over ``partitions``."""
    return {
        check: None if by is None else _sum(by.get(p, (0, 0, 0)) for p in partitions)
        for check, by in counts.items()
    }


def fold(counts: dict[Check, Counts | None]) -> dict[str, str]:
    """Per invariant, production's fold of its checks' outcomes: fail or warn where a check
    of that severity rejects a row, warn where a check leaves a row unchecked, pass where it
    judged rows, skipped where none was in its checks' domains or its table was not computed."""
    checks: dict[str, list[Any]] = defaultdict(list)
    gaps: dict[str, list[Gap]] = defaultdict(list)
    for check, got in counts.items():
        rejected, unchecked, judged = got or (0, 0, 0)
        compiled = CompiledCheck(
            check.table, "", check.invariant, check.severity, "", (check.column,), "", "", None, {}
        )
        checks[check.invariant].append(outcome(compiled, Tally(judged, rejected, unchecked)))
        if unchecked:
            gaps[check.invariant].append(Gap(f"{check.table}.{check.column}", unchecked, (), ()))
    return {
        inv: fold_invariant(inv, "", outcomes, tuple(gaps[inv])).status for inv, outcomes in checks.items()
    }


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


def _check(c: CompiledCheck) -> Check:
    return Check(c.table, c.invariant, c.severity, ",".join(c.columns))


def _compiled(cfg: AuditConfig, suite_patterns: tuple[str, ...]) -> list[CompiledCheck]:
    params = dataclasses.asdict(cfg.thresholds)
    out = []
    for suite in mode_suites(cfg, suite_patterns):
        compiled = compile_suite(suite.table, suite.raw["expectations"], params)
        assert compiled is not None, suite.name  # every shipped expectation compiles
        out += compiled
    return out


def _grouped(
    compared: Any, cfg: AuditConfig, suite_patterns: tuple[str, ...], only: str, key: str | None
) -> dict[Check, dict[Any, Counts] | None]:
    """Each expectation's counts over the rows ``only`` selects, per value of ``key`` (a
    column; None: all under 0), None where its table was not computed: the validator's
    own query per table (``audit.validate.evaluate.grouped_counts``)."""
    by_table: dict[str, list[CompiledCheck]] = defaultdict(list)
    for c in _compiled(cfg, suite_patterns):
        by_table[c.table].append(c)
    out: dict[Check, dict[Any, Counts] | None] = {}
    for table, compiled in by_table.items():
        if not compared.tables.has(table):
            out.update(dict.fromkeys(_check(c) for c in compiled))
            continue
        got = grouped_counts(compared.tables, table, compiled, only, key)
        for c, by in zip(compiled, got, strict=True):
            out[_check(c)] = {k: (t.rejected, t.unchecked, t.domain) for k, t in by.items()}
    return out
