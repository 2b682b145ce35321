"""Record batches from Kafka log segment files, in Spark tasks.

Where a mirror's segment files can be read (a broker's log dirs, a backup copy, tiered
storage), batch-by-batch equality is the strongest proof that a byte-for-byte mirror did
its job. The files can be on any filesystem Spark's Hadoop configuration reaches; they are read
by byte range (local files with ``os.pread``, anything else through ``pyarrow.fs``),
never loaded whole, so a 1 GiB segment costs a task's header walk, not 1 GiB of memory.

The job, all of it on Spark:

1. list ``*.log`` files through the session's Hadoop FileSystem on the driver (nothing
   is read; see ``list_log_files`` for why not ``binaryFile``); the partition is the
   parent directory, ``<topic>-<partition>``; the
   replica directories Kafka sets aside (``-future``, ``-delete``, ``-stray``) and its
   metadata log are left out, the former each with an information row;
2. split each file into byte ranges of about ``split_bytes`` at batch boundaries taken
   from the segment's offset index (``.index``: relative offset, position); a segment
   without a usable index is one range and a ``missing_index`` issue;
3. walk each range's batch headers, emitting batch rows in Arrow form and scan issues on
   an accumulator: the well-formed run of a mapped file in columns (``batch_columns``),
   anything else row by row (``batch_format.walk``), see ``walk_range``.
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from audit.collect.batches.columns import walk_columns
from audit.collect.batches.format import ScanSink, walk
from audit.collect.batches.listing import SET_ASIDE_DETAIL, Listing, list_segments
from audit.collect.batches.scan import BatchScan, emit, issue_accumulator, scan_schema, scan_schema_arrow
from audit.config import ScopeConfig
from audit.errors import InputError
from audit.redaction import redact_uri

log = logging.getLogger(__name__)

INDEX_ENTRY = struct.Struct(">ii")  # relative offset, position


@dataclass(frozen=True)
class ScanOptions:
    deep: bool = False  # verify each batch's CRC-32C (reads every byte)
    split_bytes: int = 128 << 20  # target bytes per Spark task


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
    """Positional reads of one file, local or on any filesystem pyarrow knows.

    Local files are memory-mapped and ``read`` returns zero-copy views of the mapping, so a
    deep scan hands the page cache straight to CRC-32C without a copy."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self._fd: int | None = None
        self._map: Any = None
        self._view: memoryview | None = None
        self._remote: Any = None
        path = local_path(uri)
        if path is not None:
            self._fd = os.open(path, os.O_RDONLY)
            self.size = os.fstat(self._fd).st_size
            if self.size:
                self._map = mmap.mmap(self._fd, self.size, access=mmap.ACCESS_READ)
                self._view = memoryview(self._map)
        else:
            from pyarrow import fs

            filesystem, inner = fs.FileSystem.from_uri(uri)
            self._remote = filesystem.open_input_file(inner)
            self.size = int(self._remote.size())

    @property
    def mapped(self) -> memoryview | None:
        """The whole file as a read-only view of its mapping (local files), else None."""
        return self._view

    def read(self, pos: int, size: int) -> bytes | memoryview:
        if self._view is not None:
            return self._view[pos : pos + size]
        if self._fd is not None:
            return b""
        return bytes(self._remote.read_at(size, pos))

    def close(self) -> None:
        if self._view is not None:
            self._view.release()
            self._view = None
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:  # a slice still alive somewhere: the GC unmaps it later
                log.debug("mmap of %s still referenced at close", self.uri)
            self._map = None
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


def index_split_positions(uri: str, size: int, split_bytes: int) -> list[int] | None:
    """Batch positions from the offset index near each multiple of ``split_bytes``, found by
    binary search (about 20 reads of 8 bytes per split, never the whole index), or None
    when the segment has no index. Positions past ``size`` or out of order (a stale or
    preallocated tail) end the search."""
    try:
        f = RangeFile(_sibling(uri, ".index"))
    except (OSError, FileNotFoundError):
        return None
    with f:
        entries = f.size // INDEX_ENTRY.size

        def position(i: int) -> int:
            return int(INDEX_ENTRY.unpack_from(bytes(f.read(i * INDEX_ENTRY.size, INDEX_ENTRY.size)))[1])

        # Real entries have positions above 0 (the first batch is never indexed); the
        # preallocated tail of an active segment's index is zeros.
        lo, hi = 0, entries
        while lo < hi:
            mid = (lo + hi) // 2
            if position(mid) > 0:
                lo = mid + 1
            else:
                hi = mid
        real = lo
        found: list[int] = []
        target = split_bytes
        while target < size:
            lo, hi = 0, real
            while lo < hi:  # first entry at or after the target position
                mid = (lo + hi) // 2
                if position(mid) < target:
                    lo = mid + 1
                else:
                    hi = mid
            if lo >= real:
                break
            p = position(lo)
            if p >= size or (found and p <= found[-1]):
                break
            found.append(p)
            target = p + split_bytes
        return found


def _size(uri: str) -> int:
    path = local_path(uri)
    if path is not None:
        return os.stat(path).st_size
    from pyarrow import fs

    filesystem, inner = fs.FileSystem.from_uri(uri)
    return int(filesystem.get_file_info(inner).size)


def _exists(uri: str) -> bool:
    path = local_path(uri)
    if path is not None:
        return os.path.exists(path)
    from pyarrow import fs

    filesystem, inner = fs.FileSystem.from_uri(uri)
    return bool(filesystem.get_file_info(inner).type != fs.FileType.NotFound)


def plan_file(
    uri: str, topic: str | None, partition: int | None, size: int, is_last: bool, split_bytes: int
) -> list[tuple[Any, ...]]:
    """The byte ranges of one segment file (rows of ``_range_schema``): a file larger than
    ``split_bytes`` is cut at indexed batch positions so its parts run as separate tasks."""
    if size == 0:
        return [(uri, topic, partition, 0, 0, 0, is_last, "empty_segment")]
    note = None
    positions: list[int] | None
    if size <= split_bytes:  # one range: the index is only looked for, not read
        positions = [] if _exists(_sibling(uri, ".index")) else None
    else:
        positions = index_split_positions(uri, size, split_bytes)
    if positions is None:
        positions, note = [], "missing_index"
    starts = [0, *positions]
    ends = [*starts[1:], size]
    return [
        (uri, topic, partition, s, e, size, is_last, note if i == 0 else None)
        for i, (s, e) in enumerate(zip(starts, ends, strict=True))
    ]


# --------------------------------------------------------------------------- Spark tasks


def walk_range(
    f: RangeFile,
    start: int,
    end: int,
    sink: ScanSink,
    schema: Any,
    *,
    topic: str,
    partition: int,
    file: str | None,
    deep: bool,
    partial_tail_ok: bool,
) -> list[Any]:
    """The batches starting in [start, end) of an open segment file: the well-formed run
    as Arrow batches (``batch_columns``, mapped local files), the rest, from whatever
    stopped that run (damage, padding, a cut tail) or for a remote file, walked row by row
    into ``sink`` with its issues (``batch_format.walk``)."""
    out: list[Any] = []
    at = start
    if f.mapped is not None:
        out, at = walk_columns(
            f.mapped, start, end, f.size, sink, schema, topic=topic, partition=partition, file=file, deep=deep
        )
    if at < end:
        walk(
            f.read,
            at,
            end,
            f.size,
            sink,
            topic=topic,
            partition=partition,
            file=file,
            deep=deep,
            partial_tail_ok=partial_tail_ok,
        )
    return out


def _scan_task(deep: bool, issues: Any) -> Callable[[Iterator[Any]], Iterator[Any]]:
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        schema = scan_schema_arrow()
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
                    kind, _, reason = note.partition(":")
                    detail = {
                        "empty_segment": "the segment file is empty",
                        "missing_index": "no offset index beside the segment: it is read as one range",
                        "unreadable": f"cannot read: {reason}",
                        "set_aside_replica": SET_ASIDE_DETAIL.get(reason, reason),
                    }[kind]
                    sink.issue(kind, detail, topic, partition, shown, None)
                if end <= start:
                    continue
                if topic is None:
                    sink.issue(
                        "not_a_partition",
                        "the segment is not in a <topic>-<partition> directory: its batches cannot be placed",
                        None,
                        None,
                        shown,
                        start,
                        end,
                    )
                    continue
                try:
                    with RangeFile(uri) as f:
                        yield from walk_range(
                            f,
                            start,
                            end,
                            sink,
                            schema,
                            topic=topic,
                            partition=partition,
                            file=shown,
                            deep=deep,
                            partial_tail_ok=bool(last),
                        )
                except OSError as exc:
                    sink.issue(
                        "unreadable",
                        f"cannot read: {exc.strerror or exc}",
                        topic,
                        partition,
                        shown,
                        start,
                        end,
                    )
                yield from emit(sink, schema, issues)
        yield from emit(sink, schema, issues, final=True)

    return run


# --------------------------------------------------------------------------- the job


def plan_ranges(listing: Listing, split_bytes: int) -> list[tuple[Any, ...]]:
    """The rows of ``_range_schema`` for a listing, biggest range first (Spark slices the
    list evenly into tasks). Metadata-sized: a stat and a few index reads per segment file.
    A set-aside directory is one empty range whose note becomes its information row."""
    ranges: list[tuple[Any, ...]] = [
        (a.directory, a.topic, a.partition, 0, 0, 0, False, f"set_aside_replica:{a.state}")
        for a in listing.set_aside
    ]
    for f in listing.files:
        try:
            size = _size(f.uri)
        except OSError as exc:
            reason = f"unreadable:{exc.strerror or exc}"
            ranges.append((f.uri, f.topic, f.partition, 0, 0, 0, f.is_last_segment, reason))
            continue
        ranges.extend(plan_file(f.uri, f.topic, f.partition, size, f.is_last_segment, split_bytes))
    ranges.sort(key=lambda r: r[4] - r[3], reverse=True)
    return ranges


def scan_segments(
    spark: Any, paths: list[str], opts: ScanOptions, scope: ScopeConfig | None = None
) -> BatchScan:
    """The scan, ready to run: batch rows (lazy until written), its issues accumulator and
    the directories left out as second copies. The ranges are planned here (a row per
    range); the reading is one Spark stage."""
    listing = list_segments(spark, paths, scope)
    if not listing.files:
        raise InputError(f"no Kafka segment files (*.log) in scope under {', '.join(paths)}")
    ranges = plan_ranges(listing, opts.split_bytes)
    parallel = max(1, min(len(ranges), spark.sparkContext.defaultParallelism * 2))
    tasks = (
        spark.createDataFrame(ranges, _range_schema()).repartition(parallel)
        if len(ranges) > parallel
        else (spark.createDataFrame(ranges, _range_schema()))
    )
    issues = issue_accumulator(spark)
    rows = tasks.mapInArrow(_scan_task(opts.deep, issues), scan_schema())
    return BatchScan(rows, issues, tuple(listing.duplicates))
