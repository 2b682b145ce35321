"""A comparison as one SQL query: the single definition both engines run.

Each comparison table is one ``SELECT`` over named inputs written ``{name}``: the snapshot
tables of both sides (``{src_partitions}``, ``{dst_group_offsets}``...), the small tables of
verdicts on names that Python evaluated once (``{topic_scope}``, ``{group_scope}``,
``{topic_names}``), the run's parameters (``{run_params}``) and comparison tables computed
before it (``{partitions}``). Spark SQL runs it for ``audit`` and ``nightly`` (any cluster
size); DuckDB runs it in process for ``readiness`` (no JVM to start). The SQL is the subset
both dialects read alike: standard joins, ``CASE``, ``coalesce``, ``greatest``/``least``
(both skip nulls), window functions, ``IS NOT DISTINCT FROM``, explicit ``NULLS FIRST/LAST``
where rows are ordered, and ``CAST(x AS DOUBLE)`` before a division (Spark reads ``1000.0``
as a decimal). Every result is cast to the columns ``audit.schemas`` declares for its table,
in their order, so both engines write the same files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from audit.schemas import COMPARISON_TABLES, SNAPSHOT_TABLES

SQL_TYPES = {"string": "STRING", "int32": "INT", "int64": "BIGINT", "double": "DOUBLE", "boolean": "BOOLEAN"}


@dataclass(frozen=True)
class Cause:
    """An input whose absence leaves a row of a comparison table unchecked: its name as a
    person reads it, and the SQL that holds on the rows lacking it. Declared with the
    table (``Comparison.causes``, ``TableRows.causes``), where the nulls are made, most
    specific first: a row with a null judged column is labelled by the first that holds
    (the judged column itself where none does). ``passed_unverified``: a row a check
    passes without having verified it (a compacted chunk the narrowing did not reach),
    unchecked all the same for every invariant judging the table."""

    missing: str
    where: str
    passed_unverified: bool = False


def causes(*pairs: tuple[str, str]) -> tuple[Cause, ...]:
    for label, _ in pairs:
        assert "'" not in label and "{" not in label, label  # labels become SQL literals
    return tuple(Cause(label, where) for label, where in pairs)


# Causes several tables share.
DST_PARTITION = (
    "the destination partition (absent from the destination snapshot)",
    "dst_high_watermark IS NULL",
)
DST_EPOCH = ("destination leader epoch (none reported)", "dst_leader_epoch IS NULL")
LAST_MIRROR_OFFSET = ("mirror state field LastMirrorOffset", "last_mirror_offset IS NULL")
READ_IMPOSSIBLE = (
    "a consistent account of what the records scan read (a range read to outside its offsets, "
    "or complete short of its end)",
    "read_impossible",
)
MIRROR_ROW = ("the mirror state of the partition (no row for it)", "mirror_state IS NULL")


@dataclass(frozen=True)
class TableRows:
    """How a comparison table's rows are named, declared with the table: the key that
    identifies a row (the table's order, an example's label, a violation's key in the
    history) and the columns an example shows beside it (both sides' values a person
    needs to judge the row without opening the Parquet files)."""

    table: str
    key: tuple[str, ...]
    shown: tuple[str, ...] = ()
    # Why a row is left unchecked (``Cause``), most specific first.
    causes: tuple[Cause, ...] = ()

    @property
    def example_columns(self) -> list[str]:
        return [*self.key, *self.shown]


@dataclass(frozen=True)
class Step:
    """A named query a comparison computes before its own, written ``{name}`` in the steps
    after it and in the comparison's query: the engine materializes it (Spark: a Parquet
    file read back; DuckDB: an Arrow table), so that the work it does over every record is
    done once, however often later steps read it. Gone once the comparison is written."""

    name: str
    sql: str
    # A step computed by code rather than by the engine's SQL: given the engine's tables
    # and ``sql`` (the step's input, a small row per unit of work), it returns the step's
    # rows as the engine holds them (Spark: a DataFrame; DuckDB: an Arrow table). For work
    # a query expresses only at a row per record (mm2_alignment.py).
    run: Callable[[Any, str], Any] | None = None


@dataclass(frozen=True)
class Comparison:
    """One comparison table: its name (declared in ``audit.schemas.COMPARISON_TABLES``),
    the columns that identify a row, and the query that computes it."""

    table: str
    key: tuple[str, ...]
    sql: str
    # Inputs that must have been collected (not stood in for by an empty table) for the
    # comparison to mean anything; without them it is not computed, and its invariants
    # are skipped as not collected.
    requires: tuple[str, ...] = ()
    # The columns an example of a failing row shows beside the key (``TableRows``).
    shown: tuple[str, ...] = ()
    # Its inputs grow with the data (a row per record), though its result stays small: the
    # engine keeps the work spread to the end and gathers only the result.
    grows_with_data: bool = False
    # Queries computed and materialized first, in order (``Step``).
    steps: tuple[Step, ...] = ()
    # Why a row is left unchecked (``Cause``), most specific first.
    causes: tuple[Cause, ...] = ()

    @property
    def rows(self) -> TableRows:
        return TableRows(self.table, self.key, self.shown, self.causes)

    def declared_sql(self, ordered: bool = True) -> str:
        """The query with its result cast to the declared columns, in the declared order,
        its rows in key order (so the examples a check lists are the same whichever engine
        ran and however the rows were shuffled). ``ordered=False`` leaves the order to the
        caller (Spark sorts within one partition instead: no sampling job for a global sort)."""
        cols = ",\n  ".join(
            f"CAST({c.name} AS {SQL_TYPES[c.type]}) AS {c.name}" for c in COMPARISON_TABLES[self.table]
        )
        sql = f"SELECT\n  {cols}\nFROM (\n{self.sql}\n) declared"
        if ordered:
            sql += "\nORDER BY " + ", ".join(f"{k} NULLS FIRST" for k in self.key)
        return sql


def side(alias: str, table: str, prefix: str, skip: tuple[str, ...] = ()) -> str:
    """A snapshot table's columns under a side's prefix: ``s.topic_id AS src_topic_id, ...``."""
    return ", ".join(
        f"{alias}.{c.name} AS {prefix}{c.name}" for c in SNAPSHOT_TABLES[table] if c.name not in skip
    )


def in_list(values: tuple[str, ...]) -> str:
    """A SQL list of string literals from constants of this package (never user input)."""
    assert all("'" not in v for v in values)
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"


# States in which a group has (or is getting) live members: such a group on the destination
# is a running application there, never a target of offset sync.
# NOT_READY: a streams group with members whose topics are not ready yet.
ACTIVE_STATES = (
    "STABLE",
    "PREPARING_REBALANCING",
    "COMPLETING_REBALANCING",
    "ASSIGNING",
    "RECONCILING",
    "NOT_READY",
)


def group_active(member_count: str, state: str) -> str:
    """A group counted as live on a cluster: members, or a state that is getting some."""
    return f"coalesce({member_count} > 0 OR {state} IN {in_list(ACTIVE_STATES)}, FALSE)"


def offset_in_range(offset: str, log_start: str, end: str) -> str:
    """A committed offset consumers could resume from: inside [log start, LEO]."""
    return f"({offset} >= {log_start} AND {offset} <= {end})"
