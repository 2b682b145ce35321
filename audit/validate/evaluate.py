"""Each check evaluated once, by the engine that holds its table, in one aggregate pass per
comparison table (as deequ merges a table's analyzers into one scan, and soda-core asks one
aggregation query per dataset).

A suite's expectations are compiled into three predicates each (``audit.validate
.violations``): the rows in its domain (its row condition), the rows it rejects, and the
rows of its domain it cannot judge because an input is missing (its judged column null).
One query per table sums all three for every expectation of the suite; the same
predicates then select the examples, the history's keys and the unchecked rows, so no row
is judged by one rule and listed by another. The counts are what Great Expectations
counts (``element_count``, ``unexpected_count``, ``missing_count``):
tests/unit/test_one_evaluation.py runs GX's own evaluation of every suite over every
outcome case as the oracle, and Data Docs are rendered from these counts
(``audit.validate.gx``). An expectation with no SQL form (an operator's own type or
argument) leaves its whole suite to GX's evaluation, as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from audit.validate.expectation_sql import domain_sql, unchecked_rows_sql, unexpected_rows_sql
from audit.validate.results import CheckOutcome

# The checks that judge nulls themselves: nothing of theirs is left unchecked.
NULL_CHECKS = ("expect_column_values_to_not_be_null", "expect_column_values_to_be_null")


@dataclass(frozen=True)
class CompiledCheck:
    """One expectation of a suite as SQL over its table: the rows it judges (``domain``),
    rejects (``rejected``, its domain included) and leaves unchecked (``unchecked``, its
    domain included; None where it judges nulls itself)."""

    table: str
    kind: str
    invariant: str
    severity: str
    description: str
    columns: tuple[str, ...]
    domain: str
    rejected: str
    unchecked: str | None
    expectation: Mapping[str, Any]


@dataclass(frozen=True)
class Counts:
    """A check's rows: in its domain, rejected, and left unchecked (judged column null)."""

    domain: int
    rejected: int
    unchecked: int


def judged_columns(kwargs: Mapping[str, Any]) -> tuple[str, ...]:
    """The columns an expectation reads (one, a pair, or a list), in its own order."""
    named = [kwargs.get(k) for k in ("column", "column_A", "column_B")]
    listed = list(kwargs.get("column_list") or [])
    return tuple(dict.fromkeys(str(c) for c in [*named, *listed] if c))


def compile_suite(
    table: str, expectations: Sequence[Mapping[str, Any]], parameters: Mapping[str, Any]
) -> list[CompiledCheck] | None:
    """The suite's expectations compiled, in the suite's order; None when one of them has
    no SQL form (the suite is then evaluated by Great Expectations)."""
    out = []
    for e in expectations:
        kind, kwargs, meta = str(e.get("type", "")), dict(e.get("kwargs") or {}), dict(e.get("meta") or {})
        if kwargs.get("mostly") not in (None, 1, 1.0):
            return None  # a tolerated share of failures: GX's rule, not compiled here
        domain = domain_sql(kwargs, parameters)
        rejected = unexpected_rows_sql(kind, kwargs, parameters)
        if domain is None or rejected is None:
            return None
        out.append(
            CompiledCheck(
                table=table,
                kind=kind,
                invariant=str(meta["invariant"]),
                severity=str(meta["severity"]),
                description=str(e.get("description") or kind),
                columns=judged_columns(kwargs),
                domain=domain,
                rejected=rejected,
                unchecked=None if kind in NULL_CHECKS else unchecked_rows_sql(kind, kwargs, parameters),
                expectation=e,
            )
        )
    return out


def counts_sql(
    table: str, checks: Sequence[CompiledCheck], only: str = "TRUE", key: str | None = None
) -> str:
    """The one aggregate query over ``table`` giving every check's counts (columns
    ``d<i>``, ``r<i>``, ``u<i>``), over the rows ``only`` selects, per value of ``key`` (a
    column; None: one row, ``k`` 0). Spark SQL and DuckDB alike."""
    grouped = f" GROUP BY {key}" if key else ""
    return f"SELECT {key or 0} AS k, {_sums(checks)} FROM {{{table}}} AS judged WHERE ({only}){grouped}"


def _sums(checks: Sequence[CompiledCheck]) -> str:
    """Every check's three counts as aggregates (``d<i>``, ``r<i>``, ``u<i>``)."""
    sums = []
    for i, c in enumerate(checks):
        sums += [
            f"sum(CASE WHEN {c.domain} THEN 1 ELSE 0 END) AS d{i}",
            f"sum(CASE WHEN {c.rejected} THEN 1 ELSE 0 END) AS r{i}",
            f"sum(CASE WHEN {c.unchecked or 'FALSE'} THEN 1 ELSE 0 END) AS u{i}",
        ]
    return ", ".join(sums)


def grouped_counts(
    tables: Any, table: str, checks: Sequence[CompiledCheck], only: str = "TRUE", key: str | None = None
) -> list[dict[Any, Counts]]:
    """Each check's counts per value of ``key`` (all rows under 0 without one): the one
    query of ``counts_sql``, run by the engine holding the table."""
    got: list[dict[Any, Counts]] = [{} for _ in checks]
    if not checks:
        return got
    for row in tables.rows(counts_sql(table, checks, only, key)):
        k = row["k"]
        k = k if k is None or isinstance(k, str) else int(k)
        for i, by in enumerate(got):
            by[k] = Counts(int(row[f"d{i}"] or 0), int(row[f"r{i}"] or 0), int(row[f"u{i}"] or 0))
    return got


def outcome(check: CompiledCheck, counts: Counts) -> CheckOutcome:
    """The check's outcome as Great Expectations reports it: evaluated over its domain
    less the rows it could not judge, failing where it rejected any."""
    return CheckOutcome(
        invariant=check.invariant,
        severity="fail" if check.severity == "fail" else "warn",
        description=check.description,
        success=counts.rejected == 0,
        evaluated=counts.domain - counts.unchecked,
        unexpected=counts.rejected,
        table=check.table,
        unexpected_sql=check.rejected,
        columns=check.columns,
        missing=counts.unchecked,
        unchecked_sql=check.unchecked,
    )


def evaluate(tables: Any, checks: Sequence[CompiledCheck]) -> list[CheckOutcome]:
    """A compiled suite's outcomes over its whole table: one query."""
    (outcomes,) = evaluate_suites(tables, [checks])
    return outcomes


def evaluate_suites(tables: Any, suites: Sequence[Sequence[CompiledCheck]]) -> list[list[CheckOutcome]]:
    """Every compiled suite's outcomes over its whole table, in one query for all of them:
    each table read once, its checks' sums in one aggregate, turned into a row per check
    (a cross join with the checks' indexes), the tables' rows in one union. One job on
    Spark instead of one per table: on a small pair the jobs' fixed cost is the time."""
    selects = []
    for s, checks in enumerate(suites):
        if not checks:
            continue
        indexes = ", ".join(f"({i})" for i in range(len(checks)))

        def pick(letter: str, n: int = len(checks)) -> str:
            arms = " ".join(f"WHEN {i} THEN a.{letter}{i}" for i in range(n))
            return f"CASE x.i {arms} END AS {letter}"

        aggregate = f"SELECT {_sums(checks)} FROM {{{checks[0].table}}} AS judged"
        selects.append(
            f"SELECT {s} AS s, x.i AS i, {pick('d')}, {pick('r')}, {pick('u')} "
            f"FROM ({aggregate}) a CROSS JOIN (VALUES {indexes}) AS x(i)"
        )
    got: dict[tuple[int, int], Counts] = {}
    if selects:
        for row in tables.rows("\nUNION ALL\n".join(selects)):
            got[(int(row["s"]), int(row["i"]))] = Counts(
                int(row["d"] or 0), int(row["r"] or 0), int(row["u"] or 0)
            )
    return [
        [outcome(c, got.get((s, i), Counts(0, 0, 0))) for i, c in enumerate(checks)]
        for s, checks in enumerate(suites)
    ]
