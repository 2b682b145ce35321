"""The validate stage: ``<run>/compare/*.parquet`` in, one result per invariant out."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from audit.compare.run import Compared
from audit.compare.tables import EXAMPLE_COLUMNS, KEY_COLUMNS, OPTIONAL
from audit.config import AuditConfig
from audit.errors import ConfigError
from audit.fsutil import atomic_write_json
from audit.schemas import COMPARISON_TABLES
from audit.validate import data_docs as docs_writer
from audit.validate.coverage import collect_gaps
from audit.validate.evaluate import CompiledCheck, compile_suite, evaluate_suites
from audit.validate.gx import GxRunner, plain
from audit.validate.invariants import Invariant
from audit.validate.results import (
    MAX_EXAMPLES,
    NOT_COLLECTED,
    NOT_IN_SUITES,
    CheckOutcome,
    InvariantResult,
    fold,
    skipped,
)
from audit.validate.suites import SuiteFile, load_suites
from audit.validate.suites import expectations_dir as find_expectations

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


def _suites_dir(suites: list[SuiteFile]) -> str:
    """Where the run's suites came from, as a reason names it."""
    dirs = sorted({str(s.path.parent) for s in suites})
    return ", ".join(dirs) if dirs else "no suite"


def _examples_sql(outcome: CheckOutcome, index_columns: list[str]) -> str | None:
    """The query selecting a failing check's first rows (in key order, at most
    MAX_EXAMPLES) with the check's own SQL, run by the engine that holds the table: only
    those rows reach this process, however many fail. None where there is nothing to
    select (a passing check, or one GX listed itself: no SQL form)."""
    if outcome.success or outcome.examples or outcome.unexpected_sql is None or not index_columns:
        return None
    key = KEY_COLUMNS.get(outcome.table) or tuple(index_columns[:1])
    # As GX listed them: the table's index columns, then the value(s) the check rejected.
    shown = list(dict.fromkeys([*index_columns, *outcome.columns]))
    return (
        f"SELECT {', '.join(shown)} FROM {{{outcome.table}}} WHERE {outcome.unexpected_sql} "
        f"ORDER BY {', '.join(f'{k} NULLS FIRST' for k in key)} LIMIT {MAX_EXAMPLES}"
    )


def _with_examples(compared: Compared, checks: list[tuple[CheckOutcome, list[str]]]) -> list[CheckOutcome]:
    """Each (outcome, its table's index columns) with a failing check's examples
    (``_examples_sql``), every query run together (on Spark, concurrent jobs)."""
    wanted = [(i, sql) for i, (o, columns) in enumerate(checks) if (sql := _examples_sql(o, columns))]
    found = compared.tables.rows_each([sql for _, sql in wanted])
    out = [o for o, _ in checks]
    for (i, _), rows in zip(wanted, found, strict=True):
        out[i] = dataclasses.replace(out[i], examples=tuple(plain(r) for r in rows))
    return out


def _require_columns(suite: SuiteFile, checks: list[CompiledCheck]) -> None:
    """Every column an expectation names (judged, or in its row condition) is one of its
    table's declared columns: a misspelled one is the suite's error, named, not the
    engine's."""
    declared = {c.name for c in COMPARISON_TABLES.get(suite.table, ())}
    if not declared:
        return  # an operator's own table name is refused where its frame is looked up
    for i, check in enumerate(checks):
        kwargs = check.expectation.get("kwargs") or {}
        named = [*check.columns, *_condition_columns(kwargs.get("row_condition"))]
        unknown = [c for c in named if c not in declared]
        if unknown:
            raise ConfigError(
                f"expectation suite {suite.path}: expectations[{i}] names {unknown[0]!r}, which is not a "
                f"column of {suite.table} (docs/invariants.md lists its columns)"
            )


def _condition_columns(cond: Any) -> list[str]:
    if not isinstance(cond, dict):
        return []
    if cond.get("type") in ("and", "or"):
        return [c for inner in cond.get("conditions") or [] for c in _condition_columns(inner)]
    return [str((cond.get("column") or {}).get("name"))]


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
    data_docs: bool = True,
) -> list[InvariantResult]:
    """The same suites judge either engine's tables (GX runs on Spark and on pandas); every
    invariant of the mode's ``catalogue`` gets a result, skipped where nothing checked it.

    Each check is evaluated once (``audit.validate.evaluate``: one aggregate query per
    table, by the engine holding it); the same predicates select its examples and its
    unchecked rows, and Great Expectations renders Data Docs from the counts (a suite
    with an expectation of no SQL form is evaluated by GX instead). ``timings`` (when
    given) receives the seconds of each part: "evaluate", "examples", "coverage" and
    "great_expectations" (bench/validation.py reports them)."""
    parameters = dataclasses.asdict(cfg.thresholds)
    clock = _Split()
    docs_dir = run_dir / "validation" / "data_docs"
    runner: GxRunner | None = None  # GX in this process, for a suite only it can evaluate
    by_invariant: dict[str, list[CheckOutcome]] = defaultdict(list)
    compiled_suites: list[tuple[SuiteFile, list[CompiledCheck]]] = []
    records: list[tuple[SuiteFile, list[CheckOutcome]]] = []
    for suite in suites:
        df = compared.frames.get(suite.table)
        if df is None and suite.table in OPTIONAL:
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
        compiled = compile_suite(suite.table, suite.raw.get("expectations") or [], parameters)
        if compiled is None:  # an expectation with no SQL form: GX evaluates this suite
            with clock("great_expectations"):
                runner = runner or GxRunner(docs_dir, compared.tables)
                outcomes = runner.run(suite, df, index_columns, parameters)
            with clock("examples"):
                for o in _with_examples(compared, [(o, index_columns) for o in outcomes]):
                    by_invariant[o.invariant].append(o)
        else:
            _require_columns(suite, compiled)
            compiled_suites.append((suite, compiled))
    with clock("evaluate"):
        counted = evaluate_suites(compared.tables, [checks for _, checks in compiled_suites])
    with clock("examples"):
        flat = _with_examples(
            compared,
            [
                (o, EXAMPLE_COLUMNS.get(suite.table, []))
                for (suite, _), outcomes in zip(compiled_suites, counted, strict=True)
                for o in outcomes
            ],
        )
    for (suite, _), outcomes in zip(compiled_suites, counted, strict=True):
        done, flat = flat[: len(outcomes)], flat[len(outcomes) :]
        records.append((suite, done))
        for o in done:
            by_invariant[o.invariant].append(o)
    with clock("great_expectations"):
        if runner is not None:  # GX is here already: the docs of every suite by it
            runner.write_docs(records)
        elif data_docs:
            docs_writer.write(docs_dir, records, compared.tables)
    with clock("coverage"):
        gaps = collect_gaps(compared.tables, by_invariant, run_dir)
    log.debug("validation: %s", ", ".join(f"{k} {v:.2f}s" for k, v in clock.seconds.items()))
    if timings is not None:
        timings.update(clock.seconds)
    accepted = set(cfg.readiness.accept_unchecked)
    named = {inv_id for suite in suites for inv_id in suite.invariants}
    results = []
    for inv in catalogue:
        checks = by_invariant.pop(inv.id, [])
        if checks:
            inv_gaps = gaps.get(inv.id, ())
            is_accepted = bool(inv_gaps) and inv.id in accepted
            results.append(fold(inv.id, inv.statement, checks, inv_gaps, is_accepted))
        else:
            reason = f"{NOT_COLLECTED}: needs {inv.needs}"
            if inv.id not in named:
                reason = (
                    f"{NOT_IN_SUITES}: no expectation in {_suites_dir(suites)} names it "
                    "(validation.expectations_dir; the shipped suites check it)"
                )
            elif inv.spark_only and not compared.tables.data_level:
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
