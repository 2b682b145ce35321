"""The violation keys: every shipped expectation has a SQL form selecting exactly the rows
GX rejects, and a key is one text whatever a group id holds and whichever engine made it."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import duckdb
import pytest

from audit.compare.tables import KEY_COLUMNS, ROWS
from audit.config import Thresholds
from audit.schemas import COMPARISON_TABLES
from audit.validate.expectation_sql import unexpected_rows_sql
from audit.validate.keys import key_sql, parse_key, row_key
from audit.validate.suites import shipped_expectations_dir

HOSTILE = [
    "plain",
    "",
    "with:colon",
    "3:abc",
    "9:x-",
    "-",
    "tab\tnew\nline",
    "quote'\"back\\slash",
    "nul\x00inside",
    "ünïcødé",
    "emoji 😀 beyond the BMP",
    "\u202eRTL override",
]


def test_every_shipped_expectation_has_a_sql_form() -> None:
    params = dataclasses.asdict(Thresholds())  # every threshold a suite may name
    for path in sorted(shipped_expectations_dir().glob("*.json")):
        for e in json.loads(path.read_text())["expectations"]:
            assert unexpected_rows_sql(e["type"], e["kwargs"], params) is not None, (path.name, e["type"])


def test_every_judged_table_names_its_rows_with_its_own_columns() -> None:
    """Each table a suite judges declares its key and example columns with the table, and
    they are columns of it (an example's key is computed from the example itself)."""
    judged = {
        json.loads(p.read_text())["meta"]["comparison_table"]
        for p in shipped_expectations_dir().glob("*.json")
    }
    assert judged <= set(ROWS), judged - set(ROWS)
    for table, rows in ROWS.items():
        declared = {c.name for c in COMPARISON_TABLES[table]}
        assert set(rows.example_columns) <= declared, (table, set(rows.example_columns) - declared)
        assert KEY_COLUMNS[table] == tuple(rows.example_columns[: len(rows.key)])


@pytest.mark.parametrize(
    ("kind", "kwargs", "rejected"),
    [
        ("expect_column_values_to_be_in_set", {"column": "s", "value_set": ["same"]}, {2}),
        ("expect_column_values_to_not_be_in_set", {"column": "s", "value_set": ["same"]}, {1, 3}),
        ("expect_column_values_to_be_between", {"column": "n", "min_value": 0}, {2}),
        ("expect_column_values_to_be_between", {"column": "n", "max_value": {"$PARAMETER": "limit"}}, {3}),
        ("expect_column_values_to_be_between", {"column": "n", "min_value": 0, "strict_min": True}, {1, 2}),
        ("expect_column_values_to_not_be_null", {"column": "n"}, {4}),
        (
            "expect_column_pair_values_a_to_be_greater_than_b",
            {"column_A": "n", "column_B": "m", "or_equal": True, "ignore_row_if": "either_value_is_missing"},
            {2, 3},
        ),
        (
            "expect_column_values_to_be_in_set",
            {
                "column": "s",
                "value_set": ["same"],
                "row_condition": {
                    "type": "and",
                    "conditions": [
                        {
                            "type": "comparison",
                            "column": {"name": "in_scope"},
                            "operator": "==",
                            "parameter": True,
                        }
                    ],
                },
            },
            set(),
        ),
    ],
)
def test_the_sql_rejects_what_the_expectation_rejects(
    kind: str, kwargs: dict[str, Any], rejected: set[int]
) -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE rows (id INTEGER, s VARCHAR, n INTEGER, m INTEGER, in_scope BOOLEAN)")
    con.execute(
        "INSERT INTO rows VALUES (1, 'same', 0, 0, TRUE), (2, 'other', -1, 5, FALSE),"
        " (3, 'same', 11, 20, TRUE), (4, NULL, NULL, 1, FALSE)"
    )
    where = unexpected_rows_sql(kind, kwargs, {"limit": 10})
    assert where is not None
    got = {r[0] for r in con.execute(f"SELECT id FROM rows WHERE {where}").fetchall()}
    assert got == rejected


def test_an_operators_own_expectation_type_is_counted_but_not_kept() -> None:
    assert (
        unexpected_rows_sql("expect_column_values_to_match_regex", {"column": "s", "regex": "x"}, {}) is None
    )
    assert (
        unexpected_rows_sql("expect_column_values_to_be_in_set", {"column": "s; DROP", "value_set": [1]}, {})
        is None
    )
    assert (
        unexpected_rows_sql("expect_column_values_to_be_in_set", {"column": "s", "value_set": ["a'b"]}, {})
        is None
    )


def test_keys_are_unambiguous_and_round_trip() -> None:
    keys = {row_key([a, b]) for a in HOSTILE for b in HOSTILE}
    assert len(keys) == len(HOSTILE) ** 2
    assert row_key(["a:1", 2]) != row_key(["a", "1:2"])
    assert row_key([None, 1]) != row_key(["-", 1])
    for a in HOSTILE:
        assert parse_key(row_key([a, 7, None]), ["g", "p", "x"]) == {"g": a, "p": "7", "x": None}


def test_duckdb_makes_the_same_key_as_python() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE t (g VARCHAR, p INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(g, i) for i, g in enumerate(HOSTILE)] + [(None, None)])
    got = con.execute(f"SELECT g, p, {key_sql(['g', 'p'])} FROM t").fetchall()
    assert len(got) == len(HOSTILE) + 1
    for g, p, key in got:
        assert key == row_key([g, p]), repr(g)
