"""Record-level verification: both clusters' records read in Spark tasks, checksummed in
chunks, and every mismatching chunk narrowed to its first divergent record.

Why confluent-kafka inside Spark tasks: it gives each record's leader epoch, which the
Spark Kafka source does not, so one pass yields checksums, gaps and epochs together, and
it measured faster than the JVM source (docs/benchmarks.md, "Which reader"). A task
reads its ranges of one cluster with one consumer, many partitions at once; the consumer
names a group only because librdkafka wants one: it never subscribes, never commits, and
reads by assignment, so no group is joined or created.

The plan (which ranges to read) is made on the driver from the two snapshots: the common
range of each partition, [max(log starts), min(LEOs)), cut by the topic's scope (full,
last N offsets, a time window), by the incremental history (only what was added since the
last verified offset, plus a few older chunks round robin) and by the run's budget.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from audit.collect import native_reader
from audit.collect.batch_format import ScanSink
from audit.collect.batch_scan import issue_accumulator
from audit.collect.native_reader import ReaderName
from audit.collect.record_chunks import RangeChunker, chunk_bounds, frame
from audit.config import RecordsConfig
from audit.errors import ClusterError

log = logging.getLogger(__name__)

SIDES = ("source", "destination")


@dataclass(frozen=True)
class RecordRange:
    topic: str
    partition: int
    start: int
    end: int
    purpose: str  # "new" (not verified before) | "recheck" (a sample of verified data)


@dataclass(frozen=True)
class RecordPlan:
    ranges: tuple[RecordRange, ...]
    # Per partition: the common range this run could verify and what it leaves for later.
    common: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    deferred: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    compacted: frozenset[str] = frozenset()
    notes: tuple[str, ...] = ()

    def offsets(self) -> int:
        return sum(r.end - r.start for r in self.ranges)


# --------------------------------------------------------------------------- planning


def common_ranges(
    src_parts: list[Any], dst_parts: list[Any], in_scope: Callable[[str], bool]
) -> dict[tuple[str, int], tuple[int, int]]:
    """[max(log starts), min(LEOs)) of every in-scope partition present on both sides."""
    dst = {(p.topic, p.partition): p for p in dst_parts}
    out = {}
    for s in src_parts:
        d = dst.get((s.topic, s.partition))
        if d is None or not in_scope(s.topic):
            continue
        lo, hi = max(s.log_start_offset, d.log_start_offset), min(s.high_watermark, d.high_watermark)
        if hi > lo:
            out[(s.topic, s.partition)] = (lo, hi)
    return out


def plan_records(
    common: dict[tuple[str, int], tuple[int, int]],
    cfg: RecordsConfig,
    history: dict[tuple[str, int], dict[str, Any]],
    full: bool,
    offsets_for_time: Callable[[dict[tuple[str, int], int]], dict[tuple[str, int], int]] | None,
    run_number: int,
    bytes_per_offset: dict[tuple[str, int], float] | None = None,
) -> RecordPlan:
    """Which offset ranges this run reads (see the module docstring). Pure: the clusters
    are asked only through ``offsets_for_time``; a byte budget
    (``max_bytes_per_run``) charges each range its offsets times the partition's
    ``bytes_per_offset``, which the caller estimates from the partition sizes."""
    if cfg.max_bytes_per_run and common and not bytes_per_offset:
        raise ValueError("a byte budget needs the partitions' bytes per offset")
    per_offset = bytes_per_offset or {}
    # A partition missing from the estimate is charged like the heaviest known one.
    heaviest = max(per_offset.values(), default=0.0)
    notes: list[str] = []
    scoped: dict[tuple[str, int], tuple[int, int]] = {}
    windows: dict[tuple[str, int], int] = {}
    now_ms = int(time.time() * 1000)
    for (topic, partition), (first, hi) in sorted(common.items()):
        scope = cfg.scope_for(topic)
        lo = first
        if scope.scope == "last":
            lo = max(lo, hi - scope.last_offsets)
        elif scope.scope == "window":
            windows[(topic, partition)] = now_ms - int(scope.window_seconds * 1000)
        scoped[(topic, partition)] = (lo, hi)
    if windows:
        if offsets_for_time is None:
            notes.append("time-window scopes need the source cluster: those partitions were verified fully")
        else:
            found = offsets_for_time(windows)
            for tp, offset in found.items():
                lo, hi = scoped[tp]
                scoped[tp] = (max(lo, min(hi, offset)), hi)
    new: dict[tuple[str, int], tuple[int, int]] = {}
    recheck: list[RecordRange] = []
    for tp, (lo, hi) in scoped.items():
        verified = 0 if full or not cfg.incremental else int(history.get(tp, {}).get("verified_through", 0))
        start = min(max(lo, verified), hi)
        if start < hi:
            new[tp] = (start, hi)
        done = [(a, b) for a, b in chunk_bounds(lo, start, cfg.chunk_records)]
        if done and cfg.resample_chunks:
            k = len(done)
            picks = sorted(
                {(run_number * cfg.resample_chunks + i) % k for i in range(min(cfg.resample_chunks, k))}
            )
            recheck.extend(RecordRange(tp[0], tp[1], done[i][0], done[i][1], "recheck") for i in picks)
    ranges: list[RecordRange] = []
    deferred: dict[tuple[str, int], tuple[int, int]] = {}
    max_records = cfg.max_records_per_run or None
    max_bytes = cfg.max_bytes_per_run or None
    if max_records is None and max_bytes is None:
        ranges = [RecordRange(t, p, lo, hi, "new") for (t, p), (lo, hi) in sorted(new.items())]
        ranges += recheck
    else:
        # New data first, a chunk per partition at a time (round robin), then re-checks.
        cursors = {tp: lo for tp, (lo, _) in sorted(new.items())}
        taken: dict[tuple[str, int], int] = {}
        left_records = float(max_records or "inf")
        left_bytes = float(max_bytes or "inf")

        def fits(tp: tuple[str, int], n: int) -> bool:
            return n <= left_records and n * per_offset.get(tp, heaviest) <= left_bytes

        def charge(tp: tuple[str, int], n: int) -> None:
            nonlocal left_records, left_bytes
            left_records -= n
            left_bytes -= n * per_offset.get(tp, heaviest)

        full_budget = False
        while not full_budget and cursors:
            for tp in list(cursors):
                lo, hi = cursors[tp], new[tp][1]
                step = min(hi, (lo // cfg.chunk_records + 1) * cfg.chunk_records) - lo
                if not fits(tp, step):
                    full_budget = True
                    break
                cursors[tp] = lo + step
                charge(tp, step)
                if cursors[tp] >= hi:
                    del cursors[tp]
            taken = {tp: (cursors.get(tp, new[tp][1])) for tp in new}
        for tp, (lo, hi) in sorted(new.items()):
            end = taken.get(tp, lo)
            if end > lo:
                ranges.append(RecordRange(tp[0], tp[1], lo, end, "new"))
            if end < hi:
                deferred[tp] = (end, hi)
        for r in recheck:
            if full_budget or not fits((r.topic, r.partition), r.end - r.start):
                break
            ranges.append(r)
            charge((r.topic, r.partition), r.end - r.start)
        if deferred:
            limits = []
            if max_records:
                limits.append(f"{max_records} offsets")
            if max_bytes:
                limits.append(f"{max_bytes} bytes (estimated from partition sizes)")
            budget = " and ".join(limits)
            notes.append(
                f"budget of {budget} reached: {sum(b - a for a, b in deferred.values())} offsets in "
                f"{len(deferred)} partitions left for the next runs"
            )
    return RecordPlan(tuple(ranges), dict(scoped), deferred, frozenset(), tuple(notes))


TaskRange = tuple[str, str, int, int, int, bool]  # side, topic, partition, start, end, compacted


def task_ranges(plan: RecordPlan, cfg: RecordsConfig) -> list[TaskRange]:
    """(side, topic, partition, start, end, compacted) to read: each range cut at
    chunk-aligned points every ``split_records`` offsets, for both sides."""
    out = []
    for r in plan.ranges:
        lo = r.start
        while lo < r.end:
            hi = min(r.end, (lo // cfg.split_records + 1) * cfg.split_records)
            for side in SIDES:
                out.append((side, r.topic, r.partition, lo, hi, r.topic in plan.compacted))
            lo = hi
    return out


def task_groups(ranges: list[TaskRange], tasks: int) -> list[list[TaskRange]]:
    """The ranges dealt into at most ``tasks`` Spark tasks, half of them per side, each
    task holding ranges of one cluster only (one consumer then reads all its partitions at
    once) and the offsets balanced: largest range first into the least loaded task. Dealt
    on the driver rather than by a repartition, which mixes the sides and costs a shuffle:
    4 balanced one-side tasks read 2 x 2.5 M records in 8.5 s where the repartitioned ones
    took 10.6 s (2 cores)."""
    groups: list[list[TaskRange]] = []
    per_side = max(1, tasks // len(SIDES))
    for side in SIDES:
        mine = sorted((r for r in ranges if r[0] == side), key=lambda r: r[4] - r[3], reverse=True)
        bins: list[list[TaskRange]] = [[] for _ in range(min(per_side, len(mine)))]
        loads = [0] * len(bins)
        for r in mine:
            i = loads.index(min(loads))
            bins[i].append(r)
            loads[i] += r[4] - r[3]
        groups.extend(bins)
    return groups


# --------------------------------------------------------------------------- reading


def consumer_settings(client: dict[str, str], isolation: str) -> dict[str, Any]:
    """An assignment-only reader: no group joined, nothing committed, nothing created."""
    return {
        **client,
        "group.id": "mirror-audit-never-joined",  # librdkafka wants one; assign() never uses it
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "allow.auto.create.topics": False,
        "auto.offset.reset": "error",
        "isolation.level": isolation,
        "enable.partition.eof": True,
        # Keep fetching while messages queue up: librdkafka's default backs off a second
        # once 100,000 messages wait, which halves a scan's speed (measured). The queue's
        # bounds are what bound a reader's memory whatever the topic's size: 128 MiB and
        # 200,000 messages a partition read as fast as 256 MiB and 1,000,000 and take half
        # the memory (one compiled reader over 4.8 M records: 2.3 s and 370 MB against
        # 2.2 s and 660 MB; confluent-kafka 6.6 s and 610 MB against 7.0 s and 1,070 MB).
        "fetch.queue.backoff.ms": 0,
        "queued.min.messages": 200_000,
        "queued.max.messages.kbytes": 128 << 10,
        "fetch.max.bytes": 64 << 20,
        "max.partition.fetch.bytes": 16 << 20,
    }


class RangeReader:
    """Reads [start, end) of one partition in offset order with one consumer, yielding
    lists of messages; the position (which moves past transaction markers, never delivered
    as records) tells when the range is done."""

    def __init__(self, settings: dict[str, Any], timeout: float) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer(settings)
        self.timeout = timeout

    def read(self, topic: str, partition: int, start: int, end: int) -> Iterator[list[Any]]:
        from confluent_kafka import KafkaError, TopicPartition

        tp = TopicPartition(topic, partition, start)
        self.consumer.assign([tp])
        try:
            deadline = time.monotonic() + self.timeout
            while True:
                msgs = self.consumer.consume(num_messages=10_000, timeout=0.5)
                batch = []
                for m in msgs:
                    err = m.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            continue
                        raise ClusterError(f"reading {topic}-{partition} at {start}: {err.str()}")
                    offset = m.offset()
                    if offset is None or offset >= end:
                        continue
                    batch.append(m)
                if batch:
                    deadline = time.monotonic() + self.timeout
                    yield batch
                position = self.consumer.position([TopicPartition(topic, partition)])[0].offset
                if position >= end:
                    return
                if batch and (batch[-1].offset() or 0) + 1 >= end:
                    return
                if time.monotonic() > deadline:
                    raise ClusterError(
                        f"reading {topic}-{partition} made no progress for {self.timeout:.0f}s at offset "
                        f"{max(start, position)} (range ends at {end})"
                    )
        finally:
            self.consumer.unassign()

    def close(self) -> None:
        self.consumer.close()


Range = tuple[str, int, int, int]  # topic, partition, start, end


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a read loop runs. Such a loop makes no
    reference cycles, so reference counting frees everything as before and memory stays
    where it was, but every 700 new objects (10,000 messages per ``consume``, their lists
    and tuples) would otherwise start a collection that walks the young objects: measured
    at 0.6 us of CPU a record, a fifth of a scan task's time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def partition_runs(msgs: Sequence[Any]) -> Iterator[tuple[str, int, int, int, Any]]:
    """(topic, partition, first index, end index, error) for each run of consecutive
    messages of one partition in a ``consume`` result, in order; an error event is a run
    of its own. librdkafka hands out a fetched message set partition by partition, so the
    runs are long and a message costs a comparison here rather than a dictionary update."""
    n, lo = len(msgs), 0
    while lo < n:
        m = msgs[lo]
        topic, partition, err = m.topic(), m.partition(), m.error()
        hi = lo + 1
        if err is None:
            while hi < n:
                x = msgs[hi]
                if x.partition() != partition or x.error() is not None or x.topic() != topic:
                    break
                hi += 1
        yield str(topic), int(partition if partition is not None else -1), lo, hi, err
        lo = hi


def chunk_ranges(
    settings: dict[str, Any],
    ranges: list[Range],
    size: int,
    timeout: float,
    reader: ReaderName = "python",
) -> tuple[list[tuple[Range, list[dict[str, Any]]]], list[tuple[Range, str]]]:
    """The chunks of several ranges of one cluster read at once by one consumer (a consumer
    fetching many partitions is several times faster than one reading them in turn:
    measured 3.8 times). Ranges of the same partition are read in successive waves.
    ``reader`` picks confluent-kafka or the compiled reader (``native_reader``); both give
    the same rows. Returns each range's chunk rows, and the ranges that failed with why."""
    done: list[tuple[Range, list[dict[str, Any]]]] = []
    failed: list[tuple[Range, str]] = []
    pending = list(ranges)
    waves: Any = native_reader.open_native(settings) if reader == "native" else _PythonWaves(settings)
    try:
        with cyclic_gc_paused():
            while pending:
                wave: dict[tuple[str, int], Range] = {}
                later: list[Range] = []
                for r in pending:
                    if (r[0], r[1]) in wave:
                        later.append(r)
                    else:
                        wave[(r[0], r[1])] = r
                pending = later
                finished, lost = waves.read_wave(list(wave.values()), size, timeout)
                done.extend(finished)
                failed.extend(lost)
    finally:
        waves.close()
    return done, failed


class _PythonWaves:
    """confluent-kafka's side of :func:`chunk_ranges`: one consumer, a wave at a time (the
    compiled reader has the same two methods)."""

    def __init__(self, settings: dict[str, Any]) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer(settings)

    def read_wave(
        self, wave: list[Range], size: int, timeout: float
    ) -> tuple[list[tuple[Range, list[dict[str, Any]]]], list[tuple[Range, str]]]:
        return _read_wave(self.consumer, {(r[0], r[1]): r for r in wave}, size, timeout)

    def close(self) -> None:
        self.consumer.close()


def _read_wave(
    consumer: Any, wave: dict[tuple[str, int], Range], size: int, timeout: float
) -> tuple[list[tuple[Range, list[dict[str, Any]]]], list[tuple[Range, str]]]:
    """Read one range per partition to its end: each finished range with its chunk rows,
    and the ranges that failed with why."""
    from confluent_kafka import KafkaError, TopicPartition

    done: list[tuple[Range, list[dict[str, Any]]]] = []
    failed: list[tuple[Range, str]] = []

    chunkers = {tp: RangeChunker(r[0], r[1], r[2], r[3], size) for tp, r in wave.items()}
    open_ = dict(wave)
    assigned = [TopicPartition(t, p, r[2]) for (t, p), r in wave.items()]
    consumer.assign(assigned)
    consumer.resume(assigned)  # a partition paused at the end of an earlier wave stays paused
    deadline = time.monotonic() + timeout
    while open_:
        msgs = consumer.consume(num_messages=10_000, timeout=0.5)
        progressed = False
        for topic, partition, lo, hi, err in partition_runs(msgs):
            tp = (topic, partition)
            if err is not None:
                if err.code() != KafkaError._PARTITION_EOF and tp in open_:
                    failed.append((open_.pop(tp), err.str()))
                continue
            found = open_.get(tp)
            if found is None:
                continue
            run = msgs[lo:hi]
            if run[-1].offset() >= found[3]:
                run = [m for m in run if m.offset() < found[3]]
            if run:
                chunkers[tp].add_messages(run)
                progressed = True
        if progressed:
            deadline = time.monotonic() + timeout
        if open_:
            positions = consumer.position([TopicPartition(t, p) for t, p in open_])
            finished = [
                (x.topic, x.partition) for x in positions if x.offset >= open_[(x.topic, x.partition)][3]
            ]
            if finished:
                consumer.pause([TopicPartition(t, p) for t, p in finished])
            for tp in finished:
                r = open_.pop(tp)
                done.append((r, [c.row() for c in chunkers[tp].finish()]))
        if open_ and time.monotonic() > deadline:
            for tp, r in list(open_.items()):
                failed.append((r, f"no progress for {timeout:.0f}s at the range ending at {r[3]}"))
                del open_[tp]
    consumer.unassign()
    return done, failed


def _scan_task(
    clients: dict[str, dict[str, str]], cfg: RecordsConfig, issues: Any, reader: ReaderName
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from audit.schemas import arrow_schema

        schema = arrow_schema("record_chunks")
        schema = schema.insert(0, pa.field("side", pa.string(), nullable=False))
        sink = ScanSink()
        by_side: dict[str, list[Range]] = {}
        compacted: dict[str, bool] = {}
        for rb in batches:
            cols = rb.to_pydict()
            for side, topic, partition, start, end, comp in zip(
                cols["side"],
                cols["topic"],
                cols["partition"],
                cols["start"],
                cols["end"],
                cols["compacted"],
                strict=True,
            ):
                by_side.setdefault(side, []).append((topic, partition, start, end))
                compacted[topic] = bool(comp)
        use = native_reader.in_task(reader, cfg.reader)
        try:
            for side, ranges in by_side.items():
                settings = consumer_settings(clients[side], cfg.isolation)
                done, failed = chunk_ranges(settings, ranges, cfg.chunk_records, cfg.timeout_seconds, use)
                for (topic, partition, start, _), why in failed:
                    sink.issue("fetch_error", f"{side}: {why}"[:300], topic, partition, None, start)
                rows = [
                    {"side": side, **c, "isolation": cfg.isolation, "compacted": compacted[r[0]]}
                    for r, chunks in done
                    for c in chunks
                ]
                if rows:
                    yield pa.RecordBatch.from_pylist(rows, schema=schema)
        finally:
            if sink.issues:
                from dataclasses import astuple

                issues.add([astuple(i) for i in sink.issues])

    return run


def scan_records(
    spark: Any,
    plan: RecordPlan,
    clients: dict[str, dict[str, str]],
    cfg: RecordsConfig,
    reader: ReaderName | None = None,
) -> tuple[Any, Any]:
    """Both sides' chunks as one lazy DataFrame (with a ``side`` column) and the issues
    accumulator its tasks report on. ``reader`` defaults to what ``records.reader``
    resolves to (see ``native_reader.resolve``)."""
    from pyspark.sql import types as T

    from audit.schemas import spark_schema

    groups = task_groups(task_ranges(plan, cfg), spark.sparkContext.defaultParallelism * 2)
    out = T.StructType([T.StructField("side", T.StringType(), False), *spark_schema("record_chunks").fields])
    issues = issue_accumulator(spark)
    if reader is None:
        reader = resolve_reader(clients, cfg)
    return task_frame(spark, groups).mapInArrow(_scan_task(clients, cfg, issues, reader), out), issues


def resolve_reader(clients: dict[str, dict[str, str]], cfg: RecordsConfig) -> ReaderName:
    """``records.reader`` resolved against what is installed and the clusters' settings."""
    return native_reader.resolve(
        cfg.reader, {side: consumer_settings(clients[side], cfg.isolation) for side in SIDES}
    )


def task_frame(spark: Any, groups: list[list[TaskRange]]) -> Any:
    """The ranges as a DataFrame with one Spark partition per group, in order."""
    from pyspark.sql import types as T

    schema = T.StructType(
        [
            T.StructField("side", T.StringType(), False),
            T.StructField("topic", T.StringType(), False),
            T.StructField("partition", T.IntegerType(), False),
            T.StructField("start", T.LongType(), False),
            T.StructField("end", T.LongType(), False),
            T.StructField("compacted", T.BooleanType(), False),
        ]
    )
    if not groups:
        return spark.createDataFrame([], schema)
    # parallelize cuts a list of n items into n slices of one item each.
    dealt = spark.sparkContext.parallelize(groups, len(groups)).flatMap(lambda g: g)
    return spark.createDataFrame(dealt, schema)


# --------------------------------------------------------------------------- narrowing

DIVERGENCE_KINDS = (
    "payload_differs",  # key or value
    "timestamp_differs",
    "headers_differs",
    "missing_record",  # the destination lacks a record the source has (later ones shifted)
    "duplicate_record",  # the destination repeats the record before (later ones shifted)
    "extra_record",  # the destination has a record where the source has none
    "gap_pattern_differs",  # a record on one side, a gap (marker, compaction hole) on the other
    "compaction_only",  # compacted topic: the sides hold different offsets, equal where both do
    "none_found",  # the chunk's records compare equal on a re-read (it changed since the scan)
)


def _escaped(text: str) -> str:
    """Printable characters as they are, everything else as a Python-style escape, and a
    backslash doubled: lossless, so a NUL byte never looks like a literal '.', and safe to
    show in a terminal or a report. Bytes that are not UTF-8 arrive as surrogates
    (``surrogateescape``) and come out as ``\\xNN``."""
    out = []
    for ch in text:
        if "\udc80" <= ch <= "\udcff":
            out.append(f"\\x{ord(ch) - 0xDC00:02x}")
        elif ch == "\\":
            out.append("\\\\")
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape").decode("ascii"))
    return "".join(out)


def _abbrev(value: bytes | None, limit: int = 48) -> str:
    """A value for a divergence message: null told apart from empty, its length, and at
    most ``limit`` bytes of it escaped losslessly."""
    if value is None:
        return "null"
    text = _escaped(value[:limit].decode("utf-8", "surrogateescape"))
    return f"{text}{'...' if len(value) > limit else ''} ({len(value)} bytes)"


def _describe(m: Any) -> str:
    """One record, abbreviated: header values are shown too, or a headers_differs
    divergence would print the same line for both sides."""
    if m is None:
        return "no record"
    headers = ", ".join(f"{_escaped(k)}={_abbrev(v, 24)}" for k, v in m.headers() or [])
    return f"key={_abbrev(m.key())} value={_abbrev(m.value())} ts={m.timestamp()[1]} headers=[{headers}]"


def _same_record(a: Any, b: Any) -> bool:
    return (a.key(), a.value(), a.timestamp()[1], a.headers() or []) == (
        b.key(),
        b.value(),
        b.timestamp()[1],
        b.headers() or [],
    )


def first_divergence(
    src: Iterator[Any], dst: Iterator[Any], compacted: bool
) -> tuple[int | None, str, Any, Any]:
    """(offset, kind, source message, destination message) of the first difference of two
    offset-ordered streams of messages, or (None, "none_found" | "compaction_only", ...).
    Streams are consumed one record at a time: memory stays flat whatever the range."""
    s, d = next(src, None), next(dst, None)
    prev_src = None
    skipped = False
    while s is not None or d is not None:
        so = s.offset() if s is not None else None
        do = d.offset() if d is not None else None
        if s is not None and d is not None and so is not None and so == do:
            if frame(so, s.timestamp()[1], s.key(), s.value(), s.headers()) != frame(
                so, d.timestamp()[1], d.key(), d.value(), d.headers()
            ):
                nxt = next(src, None)
                if prev_src is not None and _same_record(d, prev_src):
                    return so, "duplicate_record", s, d
                if nxt is not None and _same_record(d, nxt):
                    return so, "missing_record", s, d
                if (s.key(), s.value()) != (d.key(), d.value()):
                    return so, "payload_differs", s, d
                if s.timestamp()[1] != d.timestamp()[1]:
                    return so, "timestamp_differs", s, d
                return so, "headers_differs", s, d
            prev_src, s, d = s, next(src, None), next(dst, None)
            continue
        if compacted:  # an offset one side compacted away: compare only what both hold
            skipped = True
            if do is None or (so is not None and so < do):
                prev_src, s = s, next(src, None)
            else:
                d = next(dst, None)
            continue
        if do is None or (so is not None and so < do):
            return so, "missing_record" if d is None else "gap_pattern_differs", s, None
        return do, "extra_record" if s is None else "gap_pattern_differs", None, d
    return None, "compaction_only" if skipped else "none_found", None, None


def _narrow_task(
    clients: dict[str, dict[str, str]], cfg: RecordsConfig
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from audit.schemas import arrow_schema

        schema = arrow_schema("record_divergences")
        readers = {
            side: RangeReader(consumer_settings(clients[side], cfg.isolation), cfg.timeout_seconds)
            for side in SIDES
        }
        try:
            for rb in batches:
                rows = []
                for r in rb.to_pylist():
                    topic, partition, lo, hi = r["topic"], r["partition"], r["chunk_start"], r["chunk_end"]

                    def stream(
                        side: str, topic: str = topic, partition: int = partition, lo: int = lo, hi: int = hi
                    ) -> Generator[Any, None, None]:
                        for batch in readers[side].read(topic, partition, lo, hi):
                            yield from batch

                    try:
                        src_it, dst_it = stream("source"), stream("destination")
                        with cyclic_gc_paused():
                            offset, kind, s, d = first_divergence(src_it, dst_it, bool(r["compacted"]))
                        src_it.close()
                        dst_it.close()
                    except Exception as exc:
                        offset, kind, s, d = None, "not_narrowed", None, None
                        r["detail"] = f"{type(exc).__name__}: {exc}"[:300]
                    rows.append(
                        {
                            "topic": topic,
                            "partition": partition,
                            "chunk_start": lo,
                            "chunk_end": hi,
                            "offset": offset,
                            "kind": kind,
                            "source_record": _describe(s) if offset is not None else None,
                            "destination_record": _describe(d) if offset is not None else None,
                            "detail": r.get("detail"),
                        }
                    )
                if rows:
                    yield pa.RecordBatch.from_pylist(rows, schema=schema)
        finally:
            for reader in readers.values():
                reader.close()

    return run


def narrow(spark: Any, mismatches: Any, clients: dict[str, dict[str, str]], cfg: RecordsConfig) -> Any:
    """First divergence of each mismatching chunk (at most ``narrow_max_chunks``, the
    earliest of each partition first), re-reading only those chunks on both clusters."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from audit.schemas import spark_schema

    ranked = mismatches.withColumn(
        "n", F.row_number().over(Window.partitionBy("topic", "partition").orderBy("chunk_start"))
    )
    picked = ranked.orderBy("n", "topic", "partition").limit(cfg.narrow_max_chunks).drop("n")
    picked = picked.repartition(max(1, spark.sparkContext.defaultParallelism))
    return picked.mapInArrow(_narrow_task(clients, cfg), spark_schema("record_divergences"))
