"""The keys of every violating row, per invariant, kept beside each run's summary.

Great Expectations counts the rows a check rejects and lists a few; to say since when a
row has been failing, and what changed since the previous run, each run keeps all of them:
``RUN_DIR/violations.parquet`` holds (invariant, key_columns, key) for every row a failing
check rejected, keyed as ``audit.validate.keys`` says. The rows are selected by the
predicates the validation evaluated (``audit.validate.expectation_sql``: the suites stay
the single definition of what a violation is), by the engine that holds the comparison
tables, and written by it: Spark writes a directory of part files, DuckDB one file;
nothing grows in this process with the number of violations.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from audit.compare.tables import KEY_COLUMNS
from audit.validate.keys import keyed_select
from audit.validate.results import InvariantResult

log = logging.getLogger(__name__)

VIOLATIONS_FILE = "violations.parquet"


def counted_checks(result: InvariantResult) -> list[Any]:
    """The checks whose rows make up the invariant's violations (as ``fold`` counts them):
    its failing fail-severity checks when it fails, its failing warn checks when it warns."""
    if result.status not in ("fail", "warn"):
        return []
    return [c for c in result.checks if not c.success and c.severity == result.status]


_EMPTY = (
    "SELECT CAST(NULL AS STRING) AS invariant, CAST(NULL AS STRING) AS key_columns, "
    "CAST(NULL AS STRING) AS key WHERE 1 = 0"
)


def violations_sql(results: Sequence[InvariantResult]) -> tuple[str, list[str]]:
    """One query over the comparison tables giving every violating row's key per
    invariant, and the invariants whose rows it cannot give (an untranslatable check)."""
    selects, untracked = [], []
    for result in results:
        for check in counted_checks(result):
            columns = KEY_COLUMNS.get(check.table)
            if check.unexpected_sql is None or columns is None:
                untracked.append(result.id)
                continue
            selects.append(keyed_select(result.id, check.table, check.unexpected_sql))
    if not selects:
        return _EMPTY, sorted(set(untracked))
    return "SELECT DISTINCT * FROM (\n" + "\nUNION ALL\n".join(selects) + "\n) v", sorted(set(untracked))


def violations_path(run_dir: Path) -> Path:
    return run_dir / VIOLATIONS_FILE


def violations_dataset(run_dir: Path) -> Any | None:
    """A run's violation keys as a pyarrow dataset (Spark's part files or DuckDB's one file;
    read lazily, filters pushed down), or None for a run that kept none (an earlier
    version's)."""
    import pyarrow.dataset as ds

    path = violations_path(run_dir)
    files = sorted(path.glob("*.parquet")) if path.is_dir() else ([path] if path.is_file() else [])
    return ds.dataset([str(f) for f in files], format="parquet") if files else None


def write_violation_keys(tables: Any, results: Sequence[InvariantResult], run_dir: Path) -> list[str]:
    """Every violating row's key into ``RUN_DIR/violations.parquet``, written by the engine
    that holds the comparison tables (``tables``); returns the invariants whose rows are
    counted but cannot be kept (a check with no SQL form: an operator's own type)."""
    sql, untracked = violations_sql(results)
    tables.export(sql, violations_path(run_dir))
    if untracked:
        log.warning(
            "violating rows of %s are not kept for the history (a check with no SQL form)",
            ", ".join(untracked),
        )
    return untracked
