"""Record batches from live clusters over the Kafka Fetch protocol, in Spark tasks.

Managed clusters do not let anyone read their disks, but a Fetch response carries the same
record batches, byte for byte, as the segment files: base offset, leader epoch, CRC,
attributes, producer fields and control records. So the same walker
(``batch_format.walk``) reads both, and the wire tables can be compared with segment
tables of the same partition cell by cell (tests/integration/test_segments_live.py).

confluent-kafka has no way to hand over raw batches; kafka-python's protocol layer does.
Its request plumbing is semi-internal (``KafkaAdminClient._manager``), so everything that
touches it is in :class:`FetchSession`, the one adapter. A fetch names no group, commits
nothing, and reads uncommitted (isolation level 0) so aborted batches and markers come too.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from audit.collect.batches import wire_receive
from audit.collect.batches.format import ScanSink, walk
from audit.collect.batches.scan import BatchScan, emit, issue_accumulator, scan_schema, scan_schema_arrow
from audit.collect.remote_tier import stop_detail
from audit.config import ClusterConfig
from audit.errors import ClusterError
from audit.faultpoints import pause_point

log = logging.getLogger(__name__)

FETCH_MAX_VERSION = 12  # the newest version that names topics (13+ use topic ids)
NOT_LEADER_ERRORS = {6, 74, 75}  # NOT_LEADER_OR_FOLLOWER, FENCED/UNKNOWN_LEADER_EPOCH


@dataclass(frozen=True)
class FetchResult:
    records: bytes
    error_code: int
    high_watermark: int
    log_start_offset: int
    # (producer id, first offset) of the aborted transactions in the records: a response
    # to a read_committed fetch lists them, so the reader can skip their batches.
    aborted: tuple[tuple[int, int], ...] = ()


class FetchSession:
    """One kafka-python connection set to a cluster: partition leaders and raw fetches.
    Its responses come through kafka-python's receive path as ``wire_receive`` installs it
    (fewer, larger reads; a response copied once instead of about six times)."""

    def __init__(self, settings: dict[str, Any], timeout_ms: int) -> None:
        from kafka import KafkaAdminClient

        wire_receive.install()
        self._timeout_ms = timeout_ms
        self._admin = KafkaAdminClient(**settings)
        self._manager = self._admin._manager
        self._leaders: dict[tuple[str, int], int] = {}

    def leader(self, topic: str, partition: int, refresh: bool = False) -> int:
        from kafka import TopicPartition

        key = (topic, partition)
        if refresh or key not in self._leaders:
            found = self._leaders_of(TopicPartition(*key))
            for node, tps in found.items():
                for tp in tps:
                    self._leaders[(tp.topic, tp.partition)] = int(node)
        return self._leaders[key]

    def _leaders_of(self, tp: Any) -> dict[Any, Any]:
        """The metadata answer for ``tp``, asked up to three times: kafka-python sends it to
        one broker of its choice, and a broker that just died (its connection refused) would
        otherwise fail partitions led by live brokers too (found killing one mid-fetch)."""
        for attempt in range(3):
            try:
                found: dict[Any, Any] = self._manager.run(self._admin._async_get_leader_for_partitions, {tp})
                return found
            except Exception:
                if attempt == 2:
                    raise
                time.sleep(0.2 * (attempt + 1))
        raise AssertionError("unreachable")

    def fetch(
        self,
        topic: str,
        partition: int,
        offset: int,
        max_bytes: int,
        *,
        read_committed: bool = False,
        max_wait_ms: int = 0,
    ) -> FetchResult:
        """The raw records from ``offset`` (the batch holding it first), at most about
        ``max_bytes`` (a first batch larger than that still comes whole, KIP-74). Read
        uncommitted by default: every batch, aborted ones and markers too; read committed,
        the records stop at the last stable offset and the aborted transactions come along.
        ``max_wait_ms``: how long the broker may wait for records to arrive."""
        from kafka.protocol.consumer import FetchRequest

        t = FetchRequest.FetchTopic
        p = t.FetchPartition
        request = FetchRequest(
            max_wait_ms=max_wait_ms,
            min_bytes=1 if max_wait_ms else 0,
            max_bytes=max_bytes,
            isolation_level=1 if read_committed else 0,
            session_id=0,
            session_epoch=-1,  # no incremental fetch session
            topics=[
                t(
                    topic=topic,
                    partitions=[
                        p(
                            partition=partition,
                            current_leader_epoch=-1,
                            fetch_offset=offset,
                            last_fetched_epoch=-1,
                            log_start_offset=-1,
                            partition_max_bytes=max_bytes,
                        )
                    ],
                )
            ],
            forgotten_topics_data=[],
            rack_id="",
            min_version=4,
            max_version=FETCH_MAX_VERSION,
        )
        for attempt in range(3):
            node = self.leader(topic, partition, refresh=attempt > 0)
            response = self._manager.run(self._manager.send, request, node, self._timeout_ms)
            for tr in response.responses:
                for pr in tr.partitions:
                    result = FetchResult(
                        bytes(pr.records or b""),
                        int(pr.error_code),
                        int(pr.high_watermark),
                        int(pr.log_start_offset),
                        tuple(
                            (int(a.producer_id), int(a.first_offset)) for a in pr.aborted_transactions or ()
                        ),
                    )
                    if result.error_code not in NOT_LEADER_ERRORS:
                        return result
        return result

    def close(self) -> None:
        try:
            self._admin.close()
        except Exception:  # closing must never mask the task's own outcome
            log.debug("closing the fetch session failed", exc_info=True)


def check_reachable(
    role: str,
    cfg: ClusterConfig,
    settings: dict[str, Any],
    timeout_ms: int,
    snapshot_cluster_id: str | None = None,
) -> None:
    """Fail on the driver, in one line and before any task runs, when the cluster cannot be
    read over the wire. Without this a wrong password shows only in the tasks: kafka-python
    reports a refused login as "Unable to bootstrap" after its bootstrap timeout, and the
    failed job ends as an internal error. librdkafka is asked first because it says why (a
    refused login, brokers down); kafka-python second, for what only it could get wrong (a
    setting it maps differently). ``snapshot_cluster_id``: see ``require_reachable``."""
    from audit.collect.metadata.kafka_admin import require_reachable

    require_reachable(role, cfg, snapshot_cluster_id)
    try:
        FetchSession(settings, timeout_ms).close()
    except Exception as exc:  # kafka-python raises its own hierarchy and OSError alike
        raise ClusterError(
            f"{role} cluster ({cfg.bootstrap_servers}): the wire reader (kafka-python) could not connect: "
            f"{type(exc).__name__}: {exc}; librdkafka could with the same properties: check "
            "security.protocol, sasl.mechanism and the ssl.* files"
        ) from exc


def fetch_range(
    session: FetchSession,
    topic: str,
    partition: int,
    start: int,
    end: int,
    sink: ScanSink,
    deep: bool,
    max_bytes: int,
    keep_from: int | None = None,
) -> None:
    """Batches whose base offset lies in [start, end): the batch holding ``start`` begins
    before it when ``start`` is not a batch boundary, and belongs to the range before.
    ``keep_from`` (the partition's first range: none before it) keeps batches from that
    base offset on instead: the batch holding a log start that DeleteRecords or retention
    moved inside it is read, as a segment scan reads it (CM-EPOCH-3 asks its epoch)."""
    low = start if keep_from is None else keep_from
    offset = start
    while offset < end:
        result = session.fetch(topic, partition, offset, max_bytes)
        if result.error_code != 0:
            from kafka.errors import for_code

            name = for_code(result.error_code).__name__
            sink.issue(
                "fetch_error", f"Fetch at offset {offset} failed: {name}", topic, partition, None, offset
            )
            return
        if not result.records:
            if offset < min(end, result.high_watermark):
                sink.issue(
                    "fetch_error",
                    f"Fetch at offset {offset} returned no records below the high watermark "
                    f"{result.high_watermark}",
                    topic,
                    partition,
                    None,
                    offset,
                )
            return
        before = len(sink)
        data = result.records

        def read(pos: int, n: int, data: bytes = data) -> bytes:
            return data[pos : pos + n]

        walk(
            read,
            0,
            len(result.records),
            len(result.records),
            sink,
            topic=topic,
            partition=partition,
            file=None,
            deep=deep,
            partial_tail_ok=True,
        )
        # A response ends where max_bytes cut it: the partial batch there is fetched again
        # next time, so its "truncated" note is dropped; any other issue stays.
        if sink.issues and sink.issues[-1].kind == "truncated":
            sink.issues.pop()
        if len(sink) == before:
            sink.issue("fetch_error", f"no whole batch at offset {offset}", topic, partition, None, offset)
            return
        next_offset = sink.columns["last_offset"][-1] + 1
        base = sink.columns["base_offset"]
        keep = [i for i in range(before, len(sink)) if low <= base[i] < end]
        if len(keep) != len(sink) - before:
            for values in sink.columns.values():
                values[before:] = [values[i] for i in keep]
        if next_offset <= offset:
            sink.issue("fetch_error", f"no progress past offset {offset}", topic, partition, None, offset)
            return
        offset = next_offset


def _fetch_task(
    settings: dict[str, Any], timeout_ms: int, deep: bool, max_bytes: int, issues: Any
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        schema = scan_schema_arrow()
        sink = ScanSink()
        session: FetchSession | None = None
        # Why this task could not connect at all (the driver could: check_reachable): each
        # of its ranges is then an unreadable range, not a failed job, and the connection is
        # not retried per range, each retry costing the whole bootstrap timeout.
        unreachable: str | None = None
        try:
            for rb in batches:
                cols = rb.to_pydict()
                names = ("topic", "partition", "start", "end", "keep_from", "local_start")
                ranges = zip(*(cols[n] for n in names), strict=True)
                for topic, partition, start, end, keep_from, local_start in ranges:
                    if session is None and unreachable is None:
                        try:
                            session = FetchSession(settings, timeout_ms)
                        except Exception as exc:
                            why = f"{type(exc).__name__}: {str(exc)[:200]}"
                            unreachable = f"no connection from this task: {why}"
                    if session is None:
                        sink.issue("fetch_error", unreachable or "", topic, partition, None, start)
                    else:
                        since = len(sink.issues)
                        try:
                            fetch_range(
                                session, topic, partition, start, end, sink, deep, max_bytes, keep_from
                            )
                            pause_point("fetch.range")
                        except Exception as exc:  # one partition's failure must not stop the others
                            sink.issue(
                                "fetch_error",
                                f"{type(exc).__name__}: {str(exc)[:300]}",
                                topic,
                                partition,
                                None,
                                start,
                            )
                        in_remote_tier(sink, since, local_start)
                    yield from emit(sink, schema, issues)
        finally:
            if session is not None:
                session.close()
        yield from emit(sink, schema, issues, final=True)

    return run


def in_remote_tier(sink: ScanSink, since: int, local_start: int | None) -> None:
    """The fetch errors a range added to ``sink`` from index ``since`` on, at an offset below
    the partition's local log start (``local_start``: a tiered partition's, else None):
    there the broker read its remote tier, so the detail names it ("remote tier read
    failed"), a cause of its own, as the records scan names it."""
    if local_start is None:
        return
    for i in range(since, len(sink.issues)):
        issue = sink.issues[i]
        if issue.kind == "fetch_error":
            detail = stop_detail(issue.position, local_start, issue.detail)
            sink.issues[i] = dataclasses.replace(issue, detail=detail)


def plan_ranges(
    partitions: list[tuple[str, int, int, int]], split_offsets: int
) -> list[tuple[str, int, int, int]]:
    """(topic, partition, start, end) ranges of at most ``split_offsets`` offsets each, so
    one huge partition is many tasks."""
    out = []
    for topic, partition, start, end in partitions:
        s = start
        while s < end:
            e = min(end, s + split_offsets)
            out.append((topic, partition, s, e))
            s = e
    return out


def fetch_batches(
    spark: Any,
    settings: dict[str, Any],
    partitions: list[tuple[str, int, int, int]],
    *,
    deep: bool,
    split_offsets: int,
    max_bytes: int,
    timeout_ms: int,
    local_starts: dict[tuple[str, int], int] | None = None,
) -> BatchScan:
    """The fetch, ready to run (rows lazy until written). ``local_starts``: the local log
    start of each tiered partition (``remote_tier.local_starts``), below which a failed
    fetch is named a remote tier's failure."""
    from pyspark.sql import types as T

    planned = plan_ranges(partitions, split_offsets)
    if not planned:
        raise ClusterError("nothing to fetch: no in-scope partition holds records")
    # A partition's first range also keeps the batch holding its log start (none before it).
    log_starts = {(topic, partition): start for topic, partition, start, _ in partitions}
    tiers = local_starts or {}
    ranges = [
        (t, p, s, e, -1 if log_starts[(t, p)] == s else None, tiers.get((t, p))) for t, p, s, e in planned
    ]
    schema = T.StructType(
        [
            T.StructField("topic", T.StringType(), False),
            T.StructField("partition", T.IntegerType(), False),
            T.StructField("start", T.LongType(), False),
            T.StructField("end", T.LongType(), False),
            T.StructField("keep_from", T.LongType(), True),
            T.StructField("local_start", T.LongType(), True),
        ]
    )
    parallel = max(1, min(len(ranges), spark.sparkContext.defaultParallelism * 2))
    tasks = spark.createDataFrame(ranges, schema)
    if len(ranges) > parallel:
        tasks = tasks.repartition(parallel)
    issues = issue_accumulator(spark)
    rows = tasks.mapInArrow(_fetch_task(settings, timeout_ms, deep, max_bytes, issues), scan_schema())
    return BatchScan(rows, issues, ranges=len(ranges))
