"""A batch scan as Spark runs it: the rows its tasks emit and the issues they report.

Both collectors (segment files, Fetch responses) run the same kind of Spark job: tasks
that walk record batches and emit one Arrow row per batch. What the walk could not read
(``ScanIssue``) is a handful of values, not data, so it travels back to the driver on an
accumulator instead of as rows beside the batches: the batches table is then written in
one pass with no second job to split it. A retried task may report its issues twice; the
driver keeps each once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import astuple, dataclass
from typing import Any

from audit.collect.batches.format import ScanIssue, ScanSink

MAX_ISSUES_PER_TASK = 1000  # a disk full of garbage must not flood the driver


def scan_schema() -> Any:
    """The Spark schema of the rows a scan emits: the ``batches`` table's."""
    from audit.schemas import spark_schema

    return spark_schema("batches")


def scan_schema_arrow() -> Any:
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    schema: pa.Schema = to_arrow_schema(scan_schema())
    return schema


def to_arrow(sink: ScanSink, schema: Any) -> Any:
    """The sink's batches as one Arrow record batch of ``schema``."""
    import pyarrow as pa

    return pa.RecordBatch.from_arrays(
        [pa.array(sink.columns[field.name], type=field.type) for field in schema], schema=schema
    )


def issue_accumulator(spark: Any) -> Any:
    """A Spark accumulator collecting issue tuples (``ScanIssue`` fields) from tasks."""
    from pyspark.accumulators import AccumulatorParam

    class IssueList(AccumulatorParam):  # type: ignore[type-arg]
        def zero(self, value: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
            return []

        def addInPlace(self, a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
            a.extend(b)
            return a

    return spark.sparkContext.accumulator([], IssueList())


def emit(sink: ScanSink, schema: Any, issues: Any, final: bool = False) -> Iterator[Any]:
    """Yield the sink's batches (when it holds many, or at the end) and send its issues."""
    if len(sink) >= 50_000 or (final and len(sink)):
        yield to_arrow(sink, schema)
        for values in sink.columns.values():
            values.clear()
    if sink.issues and (final or len(sink.issues) >= 100):
        issues.add([astuple(i) for i in sink.issues[:MAX_ISSUES_PER_TASK]])
        sink.issues.clear()


@dataclass(frozen=True)
class BatchScan:
    """A scan ready to run: its rows (lazy), the accumulator its tasks report issues on,
    and what planning learned (copies of a partition left out, the ranges planned)."""

    rows: Any
    issues: Any
    duplicates: tuple[str, ...] = ()
    ranges: int = 0

    def collected_issues(self) -> list[ScanIssue]:
        """The issues the tasks reported, each once, in file and position order (read after
        the rows were written)."""
        seen = sorted(set(self.issues.value), key=lambda t: (t[2] or "", -1 if t[3] is None else t[3], t[4]))
        return [ScanIssue(*t) for t in seen]
