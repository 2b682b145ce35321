"""The expectations of the suites as SQL: for each check the rows it rejects, the rows it
judges (its row condition) and the rows of its domain it cannot judge (an input missing).
The one compiled evaluation (``audit.validate.evaluate``) counts with these predicates,
and the examples, the history's violation keys, the coverage's unchecked rows and the
report's chart colours select with them; Great Expectations' own evaluation of the same
suites is the test oracle (tests/unit/test_one_evaluation.py). An expectation with no SQL
form here (an operator's own type) is evaluated by Great Expectations instead.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SAFE_TEXT = re.compile(r"^[^'\\\x00-\x1f]*$")
_OPERATORS = {"==": "=", "!=": "<>", ">": ">", ">=": ">=", "<": "<", "<=": "<="}


class _Untranslatable(Exception):
    """An expectation (an operator's own type or argument) with no SQL form here."""


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
