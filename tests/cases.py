"""Many cases in one Spark audit, each read apart: a case is the rows of its own topics.

A whole audit on Spark takes 10-40 s, so a test module puts every case that the same
configuration judges into one snapshot pair (a topic, or topics, per case), audits it once
(``audit_pair``) and each test reads its case's share (``Audit.case``): each invariant's result
over its topics' rows alone, folded by the validator's own ``fold`` from the checks' counts
(tests/statuses.py), examples and unchecked rows restricted to those topics, and the
summary's per-partition details (first divergence, unreadable ranges) filtered to them:
what the summary of an audit of that case alone would say. Used by
tests/spark/test_batch_audit.py and tests/spark/test_record_compare.py.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from audit.compare.engines import SparkTables
from audit.compare.run import Compared, load_compared
from audit.compare.tables import EXAMPLE_COLUMNS
from audit.config import AuditConfig
from audit.pipeline import audit_snapshots
from audit.report.details import DIVERGENCE_PARTITIONS
from audit.validate.coverage import FIRST_ROWS
from audit.validate.evaluate import judged_columns
from audit.validate.expectation_sql import unexpected_rows_sql
from audit.validate.gaps import Gap
from audit.validate.keys import parse_key
from audit.validate.results import CheckOutcome, fold
from audit.validate.run import _with_examples
from tests.statuses import Check, Counts, counts_by, expectations, over


@dataclasses.dataclass(frozen=True)
class Audit:
    """A Spark audit of several cases: its summary, and its comparison tables registered
    again in the session, so that each case's rows are folded apart (``case``)."""

    run: Path
    cfg: AuditConfig
    summary: dict[str, Any]
    compared: Compared
    counts: dict[Check, dict[Any, Counts] | None]  # each check's counts per topic
    checks: dict[Check, dict[str, Any]]  # each check's expectation

    def case(self, *topics: str | None) -> Case:
        """The share of the case whose topics are ``topics`` (None: rows without a topic)."""
        return Case(self, topics)

    def rows(self, table: str) -> list[dict[str, Any]]:
        return list(pq.read_table(self.run / "compare" / f"{table}.parquet").to_pylist())


def audit_pair(
    spark: Any, src: Path, dst: Path, run: Path, suites: tuple[str, ...], cfg: AuditConfig | None = None
) -> Audit:
    """The Spark audit of a pair into ``run``; ``suites`` (file name patterns) hold every
    check of the invariants its cases read."""
    cfg = cfg or AuditConfig()
    summary = audit_snapshots(src, dst, run, cfg, engine="spark").summary
    checks = expectations(cfg, suites)
    tables, paths = SparkTables(spark), {}
    for table in {c.table for c in checks}:
        path = run / "compare" / f"{table}.parquet"
        if path.exists():  # not computed: its input was not collected
            load_compared(tables, table, path, table)
            paths[table] = path
    compared = Compared("spark", paths, tables)
    return Audit(run, cfg, summary, compared, counts_by(compared, cfg, suites, "topic"), checks)


@dataclasses.dataclass(frozen=True)
class Case:
    """One case's share of an audit: an invariant's result over its topics' rows alone,
    folded by the validator's own ``fold`` from its checks' counts, examples and unchecked
    rows restricted to the topics: what the summary of an audit of that case alone would
    say (the run's summary folds every case's rows into one status and one count)."""

    audit: Audit
    topics: tuple[str | None, ...]

    def invariant(self, inv_id: str) -> dict[str, Any]:
        counts = over(self.audit.counts, self.topics)
        checks = [self._outcome(c, n) for c, n in counts.items() if c.invariant == inv_id and n is not None]
        whole = self.audit.summary["invariants"][inv_id]
        out = fold(inv_id, whole["statement"], checks, self._gaps(inv_id)).to_json()
        if "first_divergence" in whole:
            # At most DIVERGENCE_PARTITIONS partitions are listed: fewer, so none is left out.
            assert len(whole["first_divergence"]) < DIVERGENCE_PARTITIONS, whole["first_divergence"]
            out["first_divergence"] = [d for d in whole["first_divergence"] if d["topic"] in self.topics]
        if "unreadable_ranges" in whole:
            # Every range of the run is listed (its total is its list's length), so the
            # case's are all of its own: its total is how many of them are its topics'.
            ranges = whole["unreadable_ranges"]
            assert ranges["total"] == len(ranges["first"]), ranges
            first = [u for u in ranges["first"] if u["topic"] in self.topics]
            out["unreadable_ranges"] = {"total": len(first), "first": first}
        return out

    @property
    def _where(self) -> str:
        named = [f"'{t}'" for t in self.topics if t is not None]
        either = [f"topic IN ({', '.join(named)})"] if named else []
        if None in self.topics:
            either.append("topic IS NULL")
        return f"({' OR '.join(either)})"

    def _outcome(self, check: Check, counts: Counts) -> CheckOutcome:
        """The check's outcome over the topics' rows, with its first rejected rows as the
        validator selects them (its own query, limited to the topics)."""
        rejected, unchecked, judged = counts
        e = self.audit.checks[check]
        rejects = unexpected_rows_sql(e["type"], e["kwargs"], dataclasses.asdict(self.audit.cfg.thresholds))
        outcome = CheckOutcome(
            check.invariant,
            "fail" if check.severity == "fail" else "warn",
            str(e["description"]),
            success=not rejected,
            evaluated=judged - unchecked,  # as Great Expectations counts: its domain less nulls
            unexpected=rejected,
            table=check.table,
            unexpected_sql=f"({rejects}) AND {self._where}",
            columns=judged_columns(e["kwargs"]),
            missing=unchecked,
        )
        columns = EXAMPLE_COLUMNS.get(check.table, [])
        (with_examples,) = _with_examples(self.audit.compared, [(outcome, columns)])
        return with_examples

    def _gaps(self, inv_id: str) -> tuple[Gap, ...]:
        """The topics' rows of the invariant that were left unchecked (``unchecked.parquet``
        holds the run's), per missing input, as the summary's gaps count them."""
        path = self.audit.run / "unchecked.parquet"
        by_missing: dict[str, list[tuple[str, str, dict[str, str | None]]]] = {}
        for row in pq.read_table(path).to_pylist() if path.exists() else []:
            key = parse_key(row["key"], row["key_columns"].split(","))
            if row["invariant"] == inv_id and key.get("topic") in self.topics:
                by_missing.setdefault(row["missing"], []).append((row["key_columns"], row["key"], key))
        gaps = [
            Gap(
                missing,
                len(rows),
                tuple(rows[0][0].split(",")),
                tuple(k for *_, k in sorted(rows, key=lambda r: r[:2])[:FIRST_ROWS]),
            )
            for missing, rows in by_missing.items()
        ]
        return tuple(sorted(gaps, key=lambda g: (-g.rows, g.missing)))
