"""A row's key: how violations.parquet and unchecked.parquet name the rows they keep.

A key is engine-independent text: each key column as ``<length>:<value>`` (``-`` for
null), concatenated, so that no group id, whatever it holds, can make two keys equal, and
a key written by Spark in a nightly run matches one written by DuckDB in a readiness run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from audit.compare.tables import KEY_COLUMNS


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
