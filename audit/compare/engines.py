"""The two engines that run the comparisons: Spark SQL and DuckDB, behind one small face.

``Tables`` is one run's tables in one engine: inputs registered by name, the comparison
queries run over them, each result cast to its declared columns, written as Parquet and
registered under its table's name for the queries after it; small results (readiness
figures, the report's slices) come back as rows. Which engine runs is the only thing the
pipeline chooses; what is computed is the same SQL (``sql.py``).

- ``spark``: Spark SQL in the session of the run, for ``audit`` and ``nightly`` and any
  size (local[*] or a cluster). Inputs are DataFrames passed to ``spark.sql`` by name, so a
  run touches no global view another run could see.
- ``local``: DuckDB in this process, for ``readiness``: a readiness check must answer in
  seconds during an incident, and a JVM alone takes longer to start. Its inputs are
  metadata (a row per partition and per committed group partition), which fits one
  process for any real cluster; DuckDB reads them as Arrow, vectorized.
"""

from __future__ import annotations

import logging
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, Protocol

from audit.compare.sql import Comparison
from audit.schemas import arrow_schema, columns, pandas_types_mapper, spark_schema
from audit.snapshot import SnapshotPair, read_arrow, read_table

log = logging.getLogger(__name__)

EngineName = Literal["spark", "local"]
# How a step computed by code reads a partition's rows of a data table (``per_partition``).
Read = Callable[[str, str, int, int, int, tuple[str, ...]], Iterator[Any]]
# What it computes of each row of its input (a partition), given the reader.
Work = Callable[[dict[str, Any], Read], dict[str, Any]]
ENGINES: tuple[EngineName, ...] = ("spark", "local")


class Tables(Protocol):
    """One run's named tables in one engine: everything the pipeline, the validator and the
    report need to know about the engine is asked here, never by its name."""

    engine: EngineName
    # Whether it computes the data-level tables (a row per batch or record chunk: they grow
    # with the data, so only the engine that spreads work over a cluster takes them).
    data_level: bool
    # How many comparisons it may compute at once (from as many threads; 1: in order).
    concurrent_queries: int

    def run_info(self) -> dict[str, Any]:
        """What summary.json's run section says of the engine's run (empty for DuckDB)."""

    def validation_source(self, sources: Any, name: str) -> Any:
        """Great Expectations' datasource over this engine's frames (``frame``): Spark
        DataFrames, or pandas."""

    def load(self, name: str, directory: Path, table: str) -> None:
        """Register a snapshot table of ``directory`` (checked, cast to its declared
        columns) as ``name``."""

    def reopen(self, name: str, path: Path) -> None:
        """A written table moved to ``path``: read it from there from now on."""

    def load_compared(self, name: str, path: Path, table: str, columns: tuple[str, ...]) -> None:
        """Register ``columns`` of a comparison table's file (checked by the caller), cast
        to their declared types."""

    def put(self, name: str, table: str, rows: list[tuple[Any, ...]]) -> None:
        """Register a small table of the declared ``table``'s columns from Python rows."""

    def compute(self, comparison: Comparison, path: Path) -> None:
        """Run a comparison, write it to ``path`` and register it under its table's name."""

    def rows(self, sql: str) -> list[dict[str, Any]]:
        """A small result (figures, bounded slices) as plain Python rows."""

    def rows_each(self, sqls: list[str]) -> list[list[dict[str, Any]]]:
        """Several small results at once, in order (independent queries: Spark runs them
        as concurrent jobs, each too small to fill the cores alone)."""

    def iter_rows(self, sql: str) -> Iterator[dict[str, Any]]:
        """A result too large to hold at once, row by row."""

    def frame(self, name: str) -> Any:
        """The engine's frame of a registered table (what Great Expectations judges)."""

    def export(self, sql: str, path: Path, name: str | None = None) -> None:
        """Write a query's result as Parquet at ``path`` (Spark: a directory of part
        files) without it passing through this process; with ``name``, later queries read
        it from there under that name (never computed twice)."""

    def per_partition(self, sql: str, table: str, reads: tuple[str, ...], work: Work) -> Any:
        """``table``'s rows (declared in ``audit.schemas``) as the engine holds a step's, one
        per row of ``sql`` (a row per partition), each ``work(row, read)``: ``read(name,
        topic, partition, lo, hi, columns)`` gives that partition's rows of the data table
        ``name`` (one of ``reads``) with offsets in [lo, hi], as Arrow batches in offset
        order. Spark deals the rows into tasks that read the tables' files themselves (no
        shuffle of a row per record); DuckDB reads them by a query."""

    def has(self, name: str) -> bool: ...

    def collected(self, name: str) -> bool:
        """Whether ``name`` holds a table that was collected (loaded from a file), not an
        empty stand-in for one that was not."""


class SparkTables:
    engine: EngineName = "spark"
    data_level = True
    concurrent_queries = 3

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self._frames: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._loaded: set[str] = set()

    def collected(self, name: str) -> bool:
        return name in self._loaded

    def has(self, name: str) -> bool:
        return name in self._frames

    def run_info(self) -> dict[str, Any]:
        from audit.spark_session import run_info

        return run_info(self.spark)

    def validation_source(self, sources: Any, name: str) -> Any:
        return sources.add_spark(name=name)

    def load(self, name: str, directory: Path, table: str) -> None:
        self._frames[name] = read_table(self.spark, directory, table)
        self._loaded.add(name)

    def reopen(self, name: str, path: Path) -> None:
        self._frames[name] = self.spark.read.parquet(str(path))

    def load_compared(self, name: str, path: Path, table: str, columns: tuple[str, ...]) -> None:
        from pyspark.sql import functions as F

        schema = spark_schema(table, "comparison")
        df = self.spark.read.parquet(str(path))
        self._frames[name] = df.select(
            [F.col(f.name).cast(f.dataType).alias(f.name) for f in schema.fields if f.name in columns]
        )
        self._loaded.add(name)

    def put(self, name: str, table: str, rows: list[tuple[Any, ...]]) -> None:
        self._frames[name] = self.spark.createDataFrame(rows, spark_schema(table))

    def query(self, sql: str) -> Any:
        with self._lock:  # comparisons computed from several threads add their frames
            frames = dict(self._frames)
        return self.spark.sql(sql, **frames)

    def compute(self, comparison: Comparison, path: Path) -> None:
        # Metadata-sized: one partition sorted by the key costs one shuffle, where ORDER BY
        # adds a sampling job for its range partitioning. Over data (a row per record),
        # coalesce(1) would pull the last stage's work (the windows after the last shuffle)
        # into one task: a shuffle of the small result gathers it instead.
        staged = []
        for step in comparison.steps:
            at = path.with_name(f"{step.name}.step.parquet")  # Spark reads no path named .* or _*
            made = step.run(self, step.sql) if step.run is not None else self.query(step.sql)
            made.write.mode("overwrite").parquet(str(at))
            self._set(step.name, self.spark.read.parquet(str(at)))
            staged.append(at)
        df = self.query(comparison.declared_sql(ordered=False))
        one = df.repartition(1) if comparison.grows_with_data else df.coalesce(1)
        self.write(comparison.table, one.sortWithinPartitions(*comparison.key), path)
        for step, at in zip(comparison.steps, staged, strict=True):  # the result was read back
            with self._lock:
                del self._frames[step.name]
            shutil.rmtree(at, ignore_errors=True)

    def write(self, table: str, df: Any, path: Path) -> None:
        """Write a DataFrame cast to ``table``'s declared columns and read it back, so that
        tables derived from it do not recompute its joins."""
        from pyspark.sql import functions as F

        declared = df.select(
            [F.col(f.name).cast(f.dataType).alias(f.name) for f in spark_schema(table, "comparison").fields]
        )
        declared.write.mode("overwrite").parquet(str(path))
        self._set(table, self.spark.read.parquet(str(path)))

    def _set(self, name: str, df: Any) -> None:
        with self._lock:
            self._frames[name] = df

    def rows(self, sql: str) -> list[dict[str, Any]]:
        return [r.asDict() for r in self.query(sql).collect()]

    def rows_each(self, sqls: list[str]) -> list[list[dict[str, Any]]]:
        # A job over a tiny table is mostly the driver's scheduling (30-90 ms on two
        # cores): submitted from a few threads at once, they overlap.
        if len(sqls) < 2:
            return [self.rows(q) for q in sqls]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(4, len(sqls)), thread_name_prefix="rows") as pool:
            return list(pool.map(self.rows, sqls))

    def iter_rows(self, sql: str) -> Iterator[dict[str, Any]]:
        for r in self.query(sql).toLocalIterator():
            yield r.asDict()

    def frame(self, name: str) -> Any:
        return self._frames[name]

    def per_partition(self, sql: str, table: str, reads: tuple[str, ...], work: Work) -> Any:
        rows = self.rows(sql)  # a row per partition: metadata-sized
        schema = spark_schema(table)
        if not rows:
            return self.spark.createDataFrame([], schema)
        files = {name: sorted(self._frames[name].inputFiles()) for name in reads}
        names = [f.name for f in schema.fields]
        tasks = max(1, min(len(rows), self.spark.sparkContext.defaultParallelism * 2))

        def run(part: Iterator[dict[str, Any]]) -> Iterator[tuple[Any, ...]]:
            from audit.compare.partition_files import PartitionFiles

            read = PartitionFiles(files).batches
            for row in part:
                made = work(row, read)
                yield tuple(made.get(n) for n in names)

        return self.spark.createDataFrame(
            self.spark.sparkContext.parallelize(rows, tasks).mapPartitions(run), schema
        )

    def export(self, sql: str, path: Path, name: str | None = None) -> None:
        self.query(sql).coalesce(1).write.mode("overwrite").parquet(str(path))
        if name is not None:
            self._frames[name] = self.spark.read.parquet(str(path))


class _ViewNames(dict[str, str]):
    """``{name}`` placeholders become the bare view name in DuckDB."""

    def __missing__(self, key: str) -> str:
        return f'"{key}"'


class LocalTables:
    engine: EngineName = "local"
    data_level = False
    concurrent_queries = 1

    def __init__(self, pair: SnapshotPair | None = None) -> None:
        import duckdb

        self._pair = pair
        self.con = duckdb.connect(":memory:")
        self._arrow: dict[str, Any] = {}
        self._loaded: set[str] = set()

    def collected(self, name: str) -> bool:
        return name in self._loaded

    def has(self, name: str) -> bool:
        return name in self._arrow

    def run_info(self) -> dict[str, Any]:
        return {}

    def validation_source(self, sources: Any, name: str) -> Any:
        return sources.add_pandas(name=name)

    def load(self, name: str, directory: Path, table: str) -> None:
        read = self._pair.arrow(directory, table) if self._pair is not None else read_arrow(directory, table)
        self._register(name, read)
        self._loaded.add(name)

    def reopen(self, name: str, path: Path) -> None:
        """The Arrow table in memory is the file's content: nothing to read again."""

    def load_compared(self, name: str, path: Path, table: str, columns: tuple[str, ...]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        declared = arrow_schema(table, "comparison")
        schema = pa.schema([f for f in declared if f.name in columns])
        self._register(name, pq.read_table(path, columns=schema.names).cast(schema))
        self._loaded.add(name)

    def _register(self, name: str, arrow: Any) -> None:
        self._arrow[name] = arrow
        self.con.register(name, arrow)

    def put(self, name: str, table: str, rows: list[tuple[Any, ...]]) -> None:
        import pyarrow as pa

        schema = arrow_schema(table)
        data = {c.name: [r[i] for r in rows] for i, c in enumerate(columns(table))}
        self._register(name, pa.Table.from_pydict(data, schema=schema))

    def query(self, sql: str) -> Any:
        return self.con.sql(sql.format_map(_ViewNames()))

    def compute(self, comparison: Comparison, path: Path) -> None:
        import pyarrow.parquet as pq

        for step in comparison.steps:
            if step.run is not None:
                self._register(step.name, step.run(self, step.sql))
            else:
                self._register(step.name, self.query(step.sql).arrow().read_all())
        schema = arrow_schema(comparison.table, "comparison")
        result = self.query(comparison.declared_sql()).arrow().read_all().cast(schema)
        pq.write_table(result, path)
        self._register(comparison.table, result)
        for step in comparison.steps:
            self.con.unregister(step.name)
            del self._arrow[step.name]

    def rows(self, sql: str) -> list[dict[str, Any]]:
        rel = self.query(sql)
        names = rel.columns
        return [dict(zip(names, r, strict=True)) for r in rel.fetchall()]

    def rows_each(self, sqls: list[str]) -> list[list[dict[str, Any]]]:
        return [self.rows(q) for q in sqls]  # one connection: one query at a time

    def iter_rows(self, sql: str) -> Iterator[dict[str, Any]]:
        # Streamed in batches; no other query runs on the connection until it is read.
        cursor = self.con.execute(sql.format_map(_ViewNames()))
        names = [d[0] for d in cursor.description]
        while batch := cursor.fetchmany(10_000):
            for r in batch:
                yield dict(zip(names, r, strict=True))

    def per_partition(self, sql: str, table: str, reads: tuple[str, ...], work: Work) -> Any:
        import pyarrow as pa

        def read(
            name: str, topic: str, partition: int, lo: int, hi: int, columns: tuple[str, ...]
        ) -> Iterator[Any]:
            assert name in reads, name
            chosen = ", ".join(f"r.{c}" for c in columns)
            query = (
                f"SELECT {chosen} FROM {{{name}}} r WHERE r.topic = ? AND r.partition = ? "
                "AND r.offset >= ? AND r.offset <= ? ORDER BY r.offset"
            )
            # Read whole: one connection streams one result at a time, and this engine
            # holds the tables in memory already.
            found = self.con.sql(query.format_map(_ViewNames()), params=[topic, partition, lo, hi])
            yield from found.to_arrow_table().to_batches()

        return pa.Table.from_pylist([work(r, read) for r in self.rows(sql)], schema=arrow_schema(table))

    def frame(self, name: str) -> Any:
        """pandas with nullable dtypes (GX's pandas engine judges these)."""
        return self._arrow[name].to_pandas(types_mapper=pandas_types_mapper())

    def export(self, sql: str, path: Path, name: str | None = None) -> None:
        import pyarrow.parquet as pq

        # Streamed batch by batch into one file: DuckDB's COPY would take the path as a glob.
        reader = self.query(sql).arrow()
        with pq.ParquetWriter(path, reader.schema) as writer:
            for batch in reader:
                writer.write_batch(batch)
        if name is not None:
            import pyarrow.dataset as ds

            self.con.register(name, ds.dataset(str(path), format="parquet"))  # scanned lazily


def open_tables(engine: EngineName, spark: Any, pair: SnapshotPair | None = None) -> Tables:
    """A run's tables in the named engine (``spark``: the run's ``SparkSettings``, the
    session built or reused from them; unused by DuckDB): the one place an engine is
    chosen by name. DuckDB takes the snapshot tables ``pair`` has read already."""
    if engine == "local":
        return LocalTables(pair)
    from audit.spark_session import build_spark

    return SparkTables(build_spark(spark))


def data_level_engine(tables: Tables) -> SparkTables | None:
    """The engine as the data-level comparisons take it (they are PySpark code:
    compare/batches.py, compare/records.py), or None where it does not compute them."""
    return tables if isinstance(tables, SparkTables) and tables.data_level else None
