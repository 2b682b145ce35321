"""The keys of every violating row, per invariant, kept beside each run's summary.

Great Expectations counts the rows a check rejects and lists a few; to say since when a
row has been failing, and what changed since the previous run, each run keeps all of them:
``RUN_DIR/violations.parquet`` holds (invariant, key_columns, key) for every row a failing
check rejected. The rows are selected by SQL derived from the very expectations GX ran
(the suites stay the single definition of what a violation is), by the engine that holds
the comparison tables, and written by it: Spark writes a directory of part files, DuckDB
one file; nothing grows in this process with the number of violations.

A key is engine-independent text: each key column as ``<length>:<value>`` (``-`` for
null), concatenated, so that no group id, whatever it holds, can make two keys equal, and
a key written by Spark in a nightly run matches one written by DuckDB in a readiness run.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from audit.compare.tables import KEY_COLUMNS
from audit.validate.results import InvariantResult

log = logging.getLogger(__name__)

VIOLATIONS_FILE = "violations.parquet"

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SAFE_TEXT = re.compile(r"^[^'\\\x00-\x1f]*$")
_OPERATORS = {"==": "=", "!=": "<>", ">": ">", ">=": ">=", "<": "<", "<=": "<="}


class _Untranslatable(Exception):
    """An expectation (an operator's own type or argument) with no SQL form here."""


def row_key(values: Sequence[Any]) -> str:
    """The key text of one row from its key columns' values, as the SQL below makes it."""
    return "".join("-" if v is None else f"{len(str(v))}:{v}" for v in values)


def parse_key(key: str, columns: Sequence[str]) -> dict[str, str | None]:
    """A key back into its columns (values as text), for the report's lists of rows."""
    out: dict[str, str | None] = {}
    i = 0
    for column in columns:
        if key[i] == "-":
            out[column], i = None, i + 1
            continue
        colon = key.index(":", i)
        n = int(key[i:colon])
        out[column], i = key[colon + 1 : colon + 1 + n], colon + 1 + n
    return out


def key_sql(columns: Sequence[str]) -> str:
    """The SQL (Spark SQL and DuckDB alike) computing ``row_key`` of a row."""
    parts = [
        f"coalesce(CAST(length(CAST({c} AS STRING)) AS STRING) || ':' || CAST({c} AS STRING), '-')"
        for c in columns
    ]
    return " || ".join(parts)


def keyed_select(invariant: str, table: str, where: str, extra: str = "") -> str:
    """The rows of ``table`` where ``where`` holds, as (invariant, key_columns, key[, extra]):
    the shape of violations.parquet and unchecked.parquet alike."""
    assert "'" not in invariant
    columns = KEY_COLUMNS[table]
    more = f", {extra}" if extra else ""
    return (
        f"SELECT '{invariant}' AS invariant, '{','.join(columns)}' AS key_columns, "
        f"{key_sql(columns)} AS key{more} FROM {{{table}}} WHERE {where}"
    )


def _name(value: Any) -> str:
    if not isinstance(value, str) or not _NAME.match(value):
        raise _Untranslatable(f"column {value!r}")
    return value


def _literal(value: Any, parameters: Mapping[str, Any]) -> str:
    if isinstance(value, dict) and set(value) == {"$PARAMETER"}:
        name = value["$PARAMETER"]
        if name not in parameters:
            raise _Untranslatable(f"parameter {name!r}")
        value = parameters[name]
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str) and _SAFE_TEXT.match(value):
        return f"'{value}'"
    raise _Untranslatable(f"value {value!r}")


def _condition(cond: Any, parameters: Mapping[str, Any]) -> str:
    """GX 1.x's structured row condition as SQL (comparisons joined by and / or)."""
    if not isinstance(cond, dict):
        raise _Untranslatable(f"row_condition {cond!r}")
    kind = cond.get("type")
    if kind in ("and", "or"):
        inner = [_condition(c, parameters) for c in cond.get("conditions") or []]
        if not inner:
            raise _Untranslatable("empty row_condition")
        return "(" + f" {kind.upper()} ".join(inner) + ")"
    if kind == "comparison":
        op = _OPERATORS.get(str(cond.get("operator")))
        if op is None:
            raise _Untranslatable(f"operator {cond.get('operator')!r}")
        column = _name((cond.get("column") or {}).get("name"))
        return f"({column} {op} {_literal(cond.get('parameter'), parameters)})"
    if kind == "nullity":
        column = _name((cond.get("column") or {}).get("name"))
        return f"({column} IS {'' if cond.get('is_null') else 'NOT '}NULL)"
    raise _Untranslatable(f"row_condition type {kind!r}")


def _unexpected(kind: str, kwargs: Mapping[str, Any], parameters: Mapping[str, Any]) -> str:
    """The rows GX counts as unexpected for one expectation (nulls are GX's "missing"
    values, never unexpected, except for the null checks)."""
    if kind in ("expect_column_values_to_be_in_set", "expect_column_values_to_not_be_in_set"):
        column = _name(kwargs.get("column"))
        values = ", ".join(_literal(v, parameters) for v in kwargs.get("value_set") or [])
        if not values:
            raise _Untranslatable("empty value_set")
        negate = "NOT " if kind == "expect_column_values_to_be_in_set" else ""
        return f"{column} IS NOT NULL AND {column} {negate}IN ({values})"
    if kind == "expect_column_values_to_be_between":
        column = _name(kwargs.get("column"))
        bounds = []
        for key, strict, op, strict_op in (
            ("min_value", "strict_min", ">=", ">"),
            ("max_value", "strict_max", "<=", "<"),
        ):
            if kwargs.get(key) is not None:
                bound = _literal(kwargs[key], parameters)
                bounds.append(f"{column} {strict_op if kwargs.get(strict) else op} {bound}")
        if not bounds:
            raise _Untranslatable("between without bounds")
        return f"{column} IS NOT NULL AND NOT ({' AND '.join(bounds)})"
    if kind == "expect_column_values_to_not_be_null":
        return f"{_name(kwargs.get('column'))} IS NULL"
    if kind == "expect_column_values_to_be_null":
        return f"{_name(kwargs.get('column'))} IS NOT NULL"
    if kind == "expect_column_pair_values_a_to_be_greater_than_b":
        a, b = _name(kwargs.get("column_A")), _name(kwargs.get("column_B"))
        op = ">=" if kwargs.get("or_equal") else ">"
        ignored = _ignored_pair_rows(kwargs)
        # A row GX does not ignore is rejected unless the comparison holds: a null on one
        # side (where only rows with both null are ignored) is rejected.
        return f"NOT coalesce({a} {op} {b}, FALSE)" + (f" AND NOT ({ignored})" if ignored else "")
    raise _Untranslatable(f"expectation type {kind}")


def unexpected_rows_sql(kind: str, kwargs: Mapping[str, Any], parameters: Mapping[str, Any]) -> str | None:
    """The WHERE clause selecting the rows an expectation rejects (its row condition
    included), or None for an expectation this cannot express (then its rows are counted
    by GX as ever, but not kept in the history)."""
    try:
        where = _unexpected(kind, kwargs, parameters)
        if kwargs.get("row_condition"):
            where = f"{_condition(kwargs['row_condition'], parameters)} AND ({where})"
        return where
    except _Untranslatable as exc:
        log.info("rows of %s are not kept in the history: no SQL form for its %s", kind, exc)
        return None


def domain_sql(kwargs: Mapping[str, Any], parameters: Mapping[str, Any]) -> str | None:
    """The WHERE clause selecting the rows an expectation judges (its row condition; every
    row without one), or None where the condition has no SQL form."""
    if not kwargs.get("row_condition"):
        return "TRUE"
    try:
        return _condition(kwargs["row_condition"], parameters)
    except _Untranslatable:
        return None


def _judged_nulls(kind: str, kwargs: Mapping[str, Any]) -> str | None:
    """The rows of an expectation's domain it cannot judge: its column is null, which
    Great Expectations counts as "missing" and neither passes nor fails. None for the null
    checks, which judge nulls themselves."""
    if kind in ("expect_column_values_to_not_be_null", "expect_column_values_to_be_null"):
        return None
    if kind == "expect_column_pair_values_a_to_be_greater_than_b":
        return _ignored_pair_rows(kwargs)
    return f"{_name(kwargs.get('column'))} IS NULL"


def _ignored_pair_rows(kwargs: Mapping[str, Any]) -> str | None:
    """The rows a column pair expectation ignores (GX's ``ignore_row_if``, its "missing"
    rows), or None where it ignores none."""
    a, b = _name(kwargs.get("column_A")), _name(kwargs.get("column_B"))
    mode = kwargs.get("ignore_row_if", "both_values_are_missing")
    if mode == "neither":
        return None
    if mode == "both_values_are_missing":
        return f"{a} IS NULL AND {b} IS NULL"
    if mode == "either_value_is_missing":
        return f"{a} IS NULL OR {b} IS NULL"
    raise _Untranslatable(f"ignore_row_if {mode!r}")


def unchecked_rows_sql(kind: str, kwargs: Mapping[str, Any], parameters: Mapping[str, Any]) -> str | None:
    """The WHERE clause selecting the rows in an expectation's domain (its row condition)
    that it could not judge because an input was missing (``audit.validate.coverage``), or
    None where it has no SQL form or judges nulls itself."""
    try:
        where = _judged_nulls(kind, kwargs)
        if where is None:
            return None
        if kwargs.get("row_condition"):
            where = f"{_condition(kwargs['row_condition'], parameters)} AND ({where})"
        return where
    except _Untranslatable:
        return None


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
