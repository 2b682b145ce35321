"""The validate stage: ``<run>/compare/*.parquet`` in, one result per invariant out."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from audit.compare.run import OPTIONAL_TABLES, Compared
from audit.compare.tables import EXAMPLE_COLUMNS, KEY_COLUMNS
from audit.config import AuditConfig
from audit.errors import ConfigError
from audit.fsutil import atomic_write_json
from audit.validate.coverage import collect_gaps
from audit.validate.gx import GxRunner, SuiteFile, load_suites, plain
from audit.validate.gx import expectations_dir as find_expectations
from audit.validate.invariants import Invariant
from audit.validate.results import MAX_EXAMPLES, NOT_COLLECTED, CheckOutcome, InvariantResult, fold, skipped

log = logging.getLogger(__name__)


class _Split:
    """Seconds spent per named part of a stage (``with split("part"): ...``)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    @contextlib.contextmanager
    def __call__(self, part: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            self.seconds[part] += time.monotonic() - start


def _with_examples(compared: Compared, outcome: CheckOutcome, index_columns: list[str]) -> CheckOutcome:
    """A failing check's first rows (in key order, at most MAX_EXAMPLES), selected by the
    engine that holds the table with the check's own SQL: only those rows reach this
    process, however many fail. A check GX listed itself (no SQL form) keeps its list."""
    if outcome.success or outcome.examples or outcome.unexpected_sql is None or not index_columns:
        return outcome
    key = KEY_COLUMNS.get(outcome.table) or tuple(index_columns[:1])
    # As GX listed them: the table's index columns, then the value(s) the check rejected.
    shown = list(dict.fromkeys([*index_columns, *outcome.columns]))
    sql = (
        f"SELECT {', '.join(shown)} FROM {{{outcome.table}}} WHERE {outcome.unexpected_sql} "
        f"ORDER BY {', '.join(f'{k} NULLS FIRST' for k in key)} LIMIT {MAX_EXAMPLES}"
    )
    rows = tuple(plain(r) for r in compared.tables.rows(sql))
    return dataclasses.replace(outcome, examples=rows)


def mode_suites(
    cfg: AuditConfig, patterns: tuple[str, ...], expectations_dir: Path | None = None
) -> list[SuiteFile]:
    """The suites of a profile (file name globs such as ``cm_*.json``), read and checked:
    called before any work, so a missing or broken suite directory costs no snapshot or
    Spark job."""
    if expectations_dir is not None:
        directory, origin = expectations_dir, "given"
    else:
        directory, origin = find_expectations(cfg.validation.expectations_dir)
    suites = load_suites(directory, patterns, origin)
    if not suites:
        raise ConfigError(
            f"no expectation suites for mode {cfg.mode} ({', '.join(patterns)}) in {directory} ({origin})"
        )
    return suites


def run_validation(
    compared: Compared,
    run_dir: Path,
    cfg: AuditConfig,
    suites: list[SuiteFile],
    catalogue: tuple[Invariant, ...],
    timings: dict[str, float] | None = None,
) -> list[InvariantResult]:
    """The same suites judge either engine's tables (GX runs on Spark and on pandas); every
    invariant of the mode's ``catalogue`` gets a result, skipped where nothing checked it.

    Two passes, on purpose (docs/architecture.md, "Two passes over a table"): Great
    Expectations counts and renders Data Docs, then SQL derived from the same expectations
    selects the examples and the unchecked rows. ``timings`` (when given) receives the
    seconds of each: "great_expectations" and "sql" (bench/validation.py measures them)."""
    parameters = dataclasses.asdict(cfg.thresholds)
    clock = _Split()
    with clock("great_expectations"):
        runner = GxRunner(run_dir / "validation" / "data_docs", compared.tables)
    by_invariant: dict[str, list[CheckOutcome]] = defaultdict(list)
    for suite in suites:
        df = compared.frames.get(suite.table)
        if df is None and suite.table in OPTIONAL_TABLES:
            log.debug(
                "suite %s skipped: %s was not computed (its data was not collected)", suite.name, suite.table
            )
            continue
        if df is None:
            raise ConfigError(
                f"expectation suite {suite.path}: meta.comparison_table {suite.table!r} is not one of "
                f"the comparison tables ({', '.join(sorted(compared.frames))})"
            )
        index_columns = EXAMPLE_COLUMNS.get(suite.table, [])
        with clock("great_expectations"):
            outcomes = runner.run(suite, df, index_columns, parameters)
        with clock("sql"):
            for outcome in outcomes:
                by_invariant[outcome.invariant].append(_with_examples(compared, outcome, index_columns))
    with clock("great_expectations"):
        runner.finish()
    with clock("sql"):
        gaps = collect_gaps(compared.tables, by_invariant, run_dir)
    log.debug("validation: %s", ", ".join(f"{k} {v:.2f}s" for k, v in clock.seconds.items()))
    if timings is not None:
        timings.update(clock.seconds)
    accepted = set(cfg.readiness.accept_unchecked)
    results = []
    for inv in catalogue:
        checks = by_invariant.pop(inv.id, [])
        if checks:
            inv_gaps = gaps.get(inv.id, ())
            is_accepted = bool(inv_gaps) and inv.id in accepted
            results.append(fold(inv.id, inv.statement, checks, inv_gaps, is_accepted))
        else:
            reason = f"{NOT_COLLECTED}: needs {inv.needs}"
            if inv.spark_only and not compared.tables.data_level:
                reason = (
                    f"{NOT_COLLECTED} by this engine: checked by the Spark engine only (--engine spark): "
                    f"needs {inv.needs}"
                )
            reason = inv.not_applicable or reason
            results.append(skipped(inv.id, inv.statement, reason))
    for unknown, checks in by_invariant.items():  # an operator's own invariant IDs are kept, not dropped
        results.append(fold(unknown, checks[0].description, checks, gaps.get(unknown, ())))
    atomic_write_json(run_dir / "validation" / "results.json", {r.id: r.to_json() for r in results})
    return results
