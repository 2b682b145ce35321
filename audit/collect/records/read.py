"""Reading the planned ranges of both clusters in Spark tasks and checksumming them in chunks.

Why confluent-kafka inside Spark tasks: it gives each record's leader epoch, which the
Spark Kafka source does not, so one pass yields checksums, gaps and epochs together, and
it measured faster than the JVM source (docs/benchmarks.md, "Which reader"). A task
reads its ranges of one cluster with one consumer, many partitions at once; the consumer
names a group only because librdkafka wants one: it never subscribes, never commits, and
reads by assignment, so no group is joined or created.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from audit.collect.batches.format import ScanSink
from audit.collect.batches.scan import issue_accumulator
from audit.collect.logins import librdkafka_config
from audit.collect.records import native as native_reader
from audit.collect.records import readers
from audit.collect.records.batch_reader import BatchWaves
from audit.collect.records.chunks import RangeChunker
from audit.collect.records.native import ReaderName
from audit.collect.records.plan import SIDES, RecordPlan, TaskRange, task_groups, task_ranges
from audit.config import RecordsConfig
from audit.errors import ClusterError
from audit.faultpoints import pause_point

log = logging.getLogger(__name__)


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

        self.consumer = Consumer(librdkafka_config(settings))
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
    ``reader`` picks confluent-kafka, the compiled librdkafka reader (``native_reader``) or
    the batch reader (``batch_reader``); all give the same rows. Returns each range's chunk
    rows, and the ranges that failed with why."""
    done: list[tuple[Range, list[dict[str, Any]]]] = []
    failed: list[tuple[Range, str]] = []
    pending = list(ranges)
    waves: Any
    if reader == "native":
        waves = native_reader.open_native(settings)
    elif reader == "batches":
        waves = BatchWaves(settings, timeout)
    else:
        waves = _PythonWaves(settings)
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
                if pending:
                    pause_point("records.wave")
    finally:
        waves.close()
    return done, failed


class _PythonWaves:
    """confluent-kafka's side of :func:`chunk_ranges`: one consumer, a wave at a time (the
    compiled reader has the same two methods)."""

    def __init__(self, settings: dict[str, Any]) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer(librdkafka_config(settings))

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
    clients: dict[str, dict[str, str]], cfg: RecordsConfig, issues: Any, reads: Any, reader: ReaderName
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
        use = readers.in_task(reader, cfg.reader)
        # Each range's outcome, as record_chunk_ranges keeps it: (side, topic, partition,
        # start, end, read_to, why not whole). A failed range keeps none of its chunks.
        outcomes: list[tuple[Any, ...]] = []
        try:
            for side, ranges in by_side.items():
                settings = consumer_settings(clients[side], cfg.isolation)
                done, failed = chunk_ranges(settings, ranges, cfg.chunk_records, cfg.timeout_seconds, use)
                for (topic, partition, start, end), why in failed:
                    sink.issue("fetch_error", f"{side}: {why}"[:300], topic, partition, None, start)
                    outcomes.append((side, topic, partition, start, end, start, f"{why}"[:300]))
                outcomes += [(side, *r, r[3], None) for r, _ in done]
                rows = [
                    {"side": side, **c, "isolation": cfg.isolation, "compacted": compacted[r[0]]}
                    for r, chunks in done
                    for c in chunks
                ]
                if rows:
                    yield pa.RecordBatch.from_pylist(rows, schema=schema)
        finally:
            reads.add(outcomes)
            if sink.issues:
                from dataclasses import astuple

                issues.add([astuple(i) for i in sink.issues])

    return run


@dataclass(frozen=True)
class RecordScan:
    """A records scan ready to run (``rows`` is lazy: the accumulators fill as it is
    written): the issues its tasks met, each range's outcome, and the ranges planned."""

    rows: Any
    issues: Any
    reads: Any
    ranges: list[TaskRange]


def scan_records(
    spark: Any,
    plan: RecordPlan,
    clients: dict[str, dict[str, str]],
    cfg: RecordsConfig,
    reader: ReaderName | None = None,
) -> RecordScan:
    """Both sides' chunks as one lazy DataFrame (with a ``side`` column), the issues
    accumulator its tasks report on and the one they report each range's outcome on
    (``plan.read_range_rows`` reads it), and the ranges planned. ``reader`` defaults to
    what ``records.reader`` resolves to (see ``readers.resolve``)."""
    from pyspark.sql import types as T

    from audit.schemas import spark_schema

    ranges = task_ranges(plan, cfg)
    groups = task_groups(ranges, spark.sparkContext.defaultParallelism * 2)
    out = T.StructType([T.StructField("side", T.StringType(), False), *spark_schema("record_chunks").fields])
    issues, reads = issue_accumulator(spark), issue_accumulator(spark)
    if reader is None:
        reader = resolve_reader(clients, cfg)
    frame = task_frame(spark, groups).mapInArrow(_scan_task(clients, cfg, issues, reads, reader), out)
    return RecordScan(frame, issues, reads, ranges)


def resolve_reader(clients: dict[str, dict[str, str]], cfg: RecordsConfig) -> ReaderName:
    """``records.reader`` resolved against what is installed and the clusters' settings."""
    return readers.resolve(
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
