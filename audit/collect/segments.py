"""Record batches from Kafka log segment files, in Spark tasks.

Where a mirror's segment files can be read (a broker's log dirs, a backup copy, tiered
storage), batch-by-batch equality is the strongest proof that a byte-for-byte mirror did
its job. The files can be anywhere Spark's ``binaryFile`` source can list; they are read
by byte range (local files with ``os.pread``, anything else through ``pyarrow.fs``),
never loaded whole, so a 1 GiB segment costs a task's header walk, not 1 GiB of memory.

The job, all of it on Spark:

1. list ``*.log`` files with ``binaryFile`` (the content column is never selected, so
   nothing is read); the partition is the parent directory, ``<topic>-<partition>``;
2. split each file into byte ranges of about ``split_bytes`` at batch boundaries taken
   from the segment's offset index (``.index``: relative offset, position); a segment
   without a usable index is one range and a ``missing_index`` issue;
3. walk each range's batch headers (``batch_format.walk``), emitting batch rows and scan
   issues in Arrow form.
"""

from __future__ import annotations

import logging
import os
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from audit.collect.batch_format import ScanSink, walk
from audit.compare.scope import topic_in_scope
from audit.config import ScopeConfig, redact_uri
from audit.errors import InputError

log = logging.getLogger(__name__)

PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
SEGMENT_FILE = re.compile(r"^(?P<base>\d{20})\.log$")
INDEX_ENTRY = struct.Struct(">ii")  # relative offset, position

# Columns a scan task emits: every batch column, then the issue columns (null on batch
# rows). Batch columns are null on issue rows, except topic, partition, file and position.
ISSUE_COLUMNS = ("kind", "severity", "detail")


@dataclass(frozen=True)
class ScanOptions:
    deep: bool = False  # verify each batch's CRC-32C (reads every byte)
    split_bytes: int = 128 << 20  # target bytes per Spark task


def scan_schema() -> Any:
    from pyspark.sql import types as T

    from audit.schemas import spark_schema

    fields = [T.StructField(f.name, f.dataType, True) for f in spark_schema("batches").fields]
    fields += [T.StructField(name, T.StringType(), True) for name in ISSUE_COLUMNS]
    return T.StructType(fields)


def _range_schema() -> Any:
    from pyspark.sql import types as T

    return T.StructType(
        [
            T.StructField("path", T.StringType(), False),
            T.StructField("topic", T.StringType(), True),
            T.StructField("partition", T.IntegerType(), True),
            T.StructField("start", T.LongType(), False),
            T.StructField("end", T.LongType(), False),
            T.StructField("size", T.LongType(), False),
            T.StructField("is_last_segment", T.BooleanType(), False),
            T.StructField("note", T.StringType(), True),  # an issue kind found while planning
        ]
    )


# --------------------------------------------------------------------------- file access


def local_path(uri: str) -> str | None:
    """The local path of a ``file:`` URI (or a plain path), else None."""
    if uri.startswith("file:"):
        rest = uri[len("file:") :]
        return "/" + rest.lstrip("/") if rest.startswith("//") or rest.startswith("/") else rest
    if "://" not in uri:
        return uri
    return None


class RangeFile:
    """Positional reads of one file, local or on any filesystem pyarrow knows."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self._fd: int | None = None
        self._remote: Any = None
        path = local_path(uri)
        if path is not None:
            self._fd = os.open(path, os.O_RDONLY)
            self.size = os.fstat(self._fd).st_size
        else:
            from pyarrow import fs

            filesystem, inner = fs.FileSystem.from_uri(uri)
            self._remote = filesystem.open_input_file(inner)
            self.size = int(self._remote.size())

    def read(self, pos: int, size: int) -> bytes:
        if self._fd is not None:
            return os.pread(self._fd, size, pos)
        return bytes(self._remote.read_at(size, pos))

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._remote is not None:
            self._remote.close()
            self._remote = None

    def __enter__(self) -> RangeFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _sibling(uri: str, suffix: str) -> str:
    return uri[: -len(".log")] + suffix


def index_positions(uri: str) -> list[int] | None:
    """Batch start positions from a segment's offset index, or None when it has none.

    The index of the active segment is preallocated: entries after the last real one are
    zeros, and positions only ever grow, so the list stops at the first that does not."""
    try:
        with RangeFile(_sibling(uri, ".index")) as f:
            data = f.read(0, f.size)
    except (OSError, FileNotFoundError):
        return None
    positions: list[int] = []
    for i in range(len(data) // INDEX_ENTRY.size):
        _, position = INDEX_ENTRY.unpack_from(data, i * INDEX_ENTRY.size)
        if positions and position <= positions[-1]:
            break
        if not positions and position < 0:
            break
        positions.append(position)
    return positions


def split_points(positions: list[int], size: int, split_bytes: int) -> list[int]:
    """Range starts: 0, then the indexed batch position closest above each multiple of
    ``split_bytes``."""
    starts = [0]
    for p in positions:
        if p >= size:
            break
        if p - starts[-1] >= split_bytes:
            starts.append(p)
    return starts


def plan_file(
    uri: str, topic: str | None, partition: int | None, size: int, is_last: bool, split_bytes: int
) -> list[tuple[Any, ...]]:
    """The byte ranges of one segment file (rows of ``_range_schema``)."""
    if size == 0:
        return [(uri, topic, partition, 0, 0, 0, is_last, "empty_segment")]
    positions = index_positions(uri)
    note = None
    if positions is None:
        positions, note = [], "missing_index"
    starts = split_points(positions, size, split_bytes)
    ends = [*starts[1:], size]
    return [
        (uri, topic, partition, s, e, size, is_last, note if i == 0 else None)
        for i, (s, e) in enumerate(zip(starts, ends, strict=True))
    ]


def partition_of(uri: str) -> tuple[str | None, int | None]:
    """(topic, partition) from the segment's directory name, (None, None) if it is not one."""
    parent = uri.rstrip("/").rsplit("/", 2)[-2] if uri.count("/") >= 1 else ""
    m = PARTITION_DIR.match(parent)
    if not m:
        return None, None
    return m.group("topic"), int(m.group("partition"))


# --------------------------------------------------------------------------- Spark tasks


def _plan_task(split_bytes: int) -> Callable[[Iterator[Any]], Iterator[Any]]:
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        schema = _arrow(_range_schema())
        for rb in batches:
            rows: list[tuple[Any, ...]] = []
            cols = rb.to_pydict()
            for uri, topic, partition, size, last in zip(
                cols["path"],
                cols["topic"],
                cols["partition"],
                cols["length"],
                cols["is_last_segment"],
                strict=True,
            ):
                rows.extend(plan_file(uri, topic, partition, int(size), bool(last), split_bytes))
            if rows:
                yield pa.RecordBatch.from_arrays(
                    [pa.array([r[i] for r in rows], type=schema.field(i).type) for i in range(len(schema))],
                    schema=schema,
                )

    return run


def _scan_task(deep: bool) -> Callable[[Iterator[Any]], Iterator[Any]]:
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        schema = _arrow(scan_schema())
        sink = ScanSink()
        for rb in batches:
            cols = rb.to_pydict()
            for uri, topic, partition, start, end, _size, last, note in zip(
                cols["path"],
                cols["topic"],
                cols["partition"],
                cols["start"],
                cols["end"],
                cols["size"],
                cols["is_last_segment"],
                cols["note"],
                strict=True,
            ):
                shown = redact_uri(uri)  # what the tables and messages show: no credentials
                if note is not None:
                    detail = {
                        "empty_segment": "the segment file is empty",
                        "missing_index": "no usable offset index: the segment is read as one range",
                    }[note]
                    sink.issue(note, detail, topic, partition, shown, None)
                if end <= start:
                    continue
                if topic is None:
                    sink.issue(
                        "not_a_partition",
                        "the segment is not in a <topic>-<partition> directory: its batches cannot be placed",
                        None,
                        None,
                        shown,
                        None,
                    )
                    continue
                try:
                    with RangeFile(uri) as f:
                        walk(
                            f.read,
                            start,
                            end,
                            f.size,
                            sink,
                            topic=topic,
                            partition=partition,
                            file=shown,
                            deep=deep,
                            partial_tail_ok=bool(last),
                        )
                except OSError as exc:
                    sink.issue(
                        "unreadable", f"cannot read: {exc.strerror or exc}", topic, partition, shown, start
                    )
                if len(sink) >= 50_000:
                    yield to_arrow(sink, schema)
                    sink.clear()
        if len(sink) or sink.issues:
            yield to_arrow(sink, schema)

    return run


def to_arrow(sink: ScanSink, schema: Any) -> Any:
    """The sink's batches and issues as one Arrow batch of the scan schema."""
    import pyarrow as pa

    n_issues = len(sink.issues)
    arrays = []
    for field in schema:
        name = field.name
        if name in ISSUE_COLUMNS:
            values: list[Any] = [None] * len(sink) + [getattr(i, name) for i in sink.issues]
        elif name in ("topic", "partition", "file", "position"):
            values = sink.columns[name] + [getattr(i, name) for i in sink.issues]
        else:
            values = sink.columns[name] + [None] * n_issues
        arrays.append(pa.array(values, type=field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def scan_schema_arrow() -> Any:
    return _arrow(scan_schema())


def _arrow(spark_schema: Any) -> Any:
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    schema: pa.Schema = to_arrow_schema(spark_schema)
    return schema


# --------------------------------------------------------------------------- the job


def list_segments(spark: Any, paths: list[str], scope: ScopeConfig | None = None) -> tuple[Any, Any]:
    """``*.log`` files under ``paths`` (files or directories, any Hadoop filesystem), one
    row per file with its partition, and whether it is its partition's newest segment;
    and the directories left out as second copies of a partition. Topics out of ``scope``
    (by default Kafka's internal ones, e.g. ``__consumer_offsets``) are not read."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    try:
        files = (
            spark.read.format("binaryFile")
            .option("pathGlobFilter", "*.log")
            .option("recursiveFileLookup", "true")
            .load(paths)
            .select("path", "length")
        )
    except AnalysisException as exc:
        raise InputError(f"segment paths cannot be listed: {str(exc).splitlines()[0]}") from exc
    dir_re = r"^(.*)/([^/]+)/[^/]+$"
    files = (
        files.withColumn("dir", F.regexp_extract("path", dir_re, 1))
        .withColumn("dirname", F.regexp_extract("path", dir_re, 2))
        .withColumn("topic", F.regexp_extract("dirname", r"^(.+)-(\d+)$", 1))
        .withColumn("partition", F.regexp_extract("dirname", r"^(.+)-(\d+)$", 2))
        .withColumn("topic", F.when(F.col("topic") != "", F.col("topic")))
        .withColumn("partition", F.when(F.col("partition") != "", F.col("partition").cast("int")))
        .withColumn("base", F.regexp_extract("path", r"(\d{20})\.log$", 1))
    )
    if scope is not None:
        files = files.where(F.col("topic").isNull() | topic_in_scope(F.col("topic"), scope))
    # The same partition under two directories (two brokers' log dirs given at once): keep
    # the replica with the most data, so no batch is counted twice.
    per_dir = Window.partitionBy("topic", "partition")
    sized = files.withColumn("dir_bytes", F.sum("length").over(Window.partitionBy("dir")))
    chosen = sized.withColumn(
        "keep",
        F.col("topic").isNull()
        | (F.struct("dir_bytes", "dir") == F.max(F.struct("dir_bytes", "dir")).over(per_dir)),
    )
    dup = chosen.where(~F.col("keep")).select("dir").distinct()
    kept = chosen.where("keep").withColumn(
        "is_last_segment",
        F.col("topic").isNull() | (F.col("base") == F.max("base").over(Window.partitionBy("dir"))),
    )
    return kept.select("path", "topic", "partition", "length", "is_last_segment"), dup


def scan_segments(
    spark: Any, paths: list[str], opts: ScanOptions, scope: ScopeConfig | None = None
) -> tuple[Any, list[str]]:
    """The scan as a DataFrame of ``_scan_schema`` rows (batches and issues), and the
    directories left out as duplicate replicas. Lazy: nothing runs until it is written."""
    files, dup = list_segments(spark, paths, scope)
    if files.limit(1).count() == 0:
        raise InputError(f"no Kafka segment files (*.log) under {', '.join(paths)}")
    duplicates = [r["dir"] for r in dup.collect()]  # at most one per partition directory given twice
    parallel = max(2, spark.sparkContext.defaultParallelism * 2)
    ranges = files.repartition(parallel).mapInArrow(_plan_task(opts.split_bytes), _range_schema())
    scanned = ranges.repartition(parallel).mapInArrow(_scan_task(opts.deep), scan_schema())
    return scanned, duplicates
