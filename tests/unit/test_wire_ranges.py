"""Splitting a wire fetch by offset range, on hand-made batches behind a fake broker.

A partition is fetched as many [start, end) ranges in different Spark tasks. Range
boundaries fall anywhere, usually inside a batch, and each response may end inside one, so
the batches of all ranges together must be the partition's batches exactly once each: none
lost where a range starts mid-batch, none twice where a batch straddles a boundary.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest

from audit.collect.batches.format import ScanSink
from audit.collect.batches.wire import FetchResult, FetchSession, fetch_range, in_remote_tier, plan_ranges
from tests.batches import batch, control_batch, walk_bytes

START = 100  # a log start that is not 0, as after retention


def _log() -> list[bytes]:
    """Offsets 100..121: batches of 1 to 6 records, a transaction and its marker, a
    compressed batch; sizes differ, so a byte budget cuts them at different places."""
    return [
        batch(100, [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]),
        batch(103, [(b"d", b"4")]),
        batch(
            104,
            [(b"t", bytes([i]) * 40) for i in range(5)],
            transactional=True,
            producer_id=7,
            producer_epoch=1,
        ),
        control_batch(109, 1, producer_id=7, producer_epoch=1),
        batch(110, [(b"z", b"y" * 200)] * 6, compression=1),
        batch(116, [(b"e", b"5"), (b"f", b"6")]),
        batch(118, [(b"g", b"7")] * 4),
    ]


def _last_offset(raw: bytes) -> int:
    base, delta = struct.unpack_from(">q", raw)[0], struct.unpack_from(">i", raw, 23)[0]
    return int(base + delta)


class FakeBroker(FetchSession):
    """Answers a Fetch as a broker does: from the batch holding the offset, whole batches
    up to ``max_bytes``, the first one whole even if larger (KIP-74), and the byte budget
    may end inside the next batch (the slice of the log is not cut at batch boundaries)."""

    def __init__(self, log: list[bytes]) -> None:
        self.log = log
        self.high_watermark = _last_offset(log[-1]) + 1
        self.asked: list[int] = []
        self.cut_short = 0

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
        self.asked.append(offset)
        first = next((i for i, b in enumerate(self.log) if _last_offset(b) >= offset), len(self.log))
        data = b"".join(self.log[first:])
        size = max(max_bytes, len(self.log[first])) if first < len(self.log) else 0
        if size < len(data) and size not in _boundaries(self.log[first:]):
            self.cut_short += 1
        return FetchResult(data[:size], 0, self.high_watermark, START)


def _boundaries(log: list[bytes]) -> set[int]:
    out, pos = set(), 0
    for b in log:
        pos += len(b)
        out.add(pos)
    return out


def _without_position(sink: ScanSink) -> list[dict[str, Any]]:
    """Rows minus ``position``: over the wire it is a place in one response, not in a file."""
    return [{k: v for k, v in r.items() if k != "position"} for r in sink.rows()]


def _whole() -> ScanSink:
    return walk_bytes(b"".join(_log()), partition=3, deep=True)


def test_plan_ranges_cuts_each_partition_into_split_sized_ranges() -> None:
    parts = [("t", 0, 5, 27), ("t", 1, 0, 10), ("u", 0, 7, 7)]
    assert plan_ranges(parts, 10) == [
        ("t", 0, 5, 15),
        ("t", 0, 15, 25),
        ("t", 0, 25, 27),
        ("t", 1, 0, 10),
    ]
    assert plan_ranges(parts, 1_000_000) == [("t", 0, 5, 27), ("t", 1, 0, 10)]
    assert plan_ranges(parts, 1) == [("t", 0, o, o + 1) for o in range(5, 27)] + [
        ("t", 1, o, o + 1) for o in range(10)
    ]


@pytest.mark.parametrize(
    ("max_bytes", "ends_inside_a_batch"),
    [
        (1, False),  # each response is one whole batch (KIP-74)
        (150, True),
        (400, True),
        (1 << 20, False),  # the whole rest of the log in each response
    ],
)
def test_ranges_of_any_size_give_every_batch_exactly_once(max_bytes: int, ends_inside_a_batch: bool) -> None:
    whole = _without_position(_whole())
    assert [r["base_offset"] for r in whole] == [100, 103, 104, 109, 110, 116, 118]
    mid_batch_starts = cut_short = 0
    for split in range(1, 25):
        broker = FakeBroker(_log())
        sink = ScanSink()
        for topic, partition, start, end in plan_ranges([("t", 3, START, broker.high_watermark)], split):
            fetch_range(broker, topic, partition, start, end, sink, deep=True, max_bytes=max_bytes)
        assert _without_position(sink) == whole, split
        assert sink.issues == [], (split, sink.issues)
        bases = {r["base_offset"] for r in whole}
        mid_batch_starts += sum(o not in bases for o in broker.asked)
        cut_short += broker.cut_short
    # The paths the test is about were taken: ranges starting inside a batch, and (with a
    # budget smaller than the log) responses ending inside one, then fetched again.
    assert mid_batch_starts > 0
    assert (cut_short > 0) == ends_inside_a_batch


def test_a_range_inside_one_batch_yields_nothing_and_asks_once() -> None:
    """[111, 114) lies inside the batch 110..115: that batch belongs to the range holding
    110, so this range adds nothing, and one Fetch shows it (the batch ends past 114)."""
    broker = FakeBroker(_log())
    sink = ScanSink()
    fetch_range(broker, "t", 3, 111, 114, sink, deep=False, max_bytes=1)
    assert (len(sink), sink.issues, broker.asked) == (0, [], [111])


def test_the_first_range_keeps_the_batch_holding_a_log_start_inside_it() -> None:
    """DeleteRecords moved the log start to 111, inside the batch 110..115: the
    partition's first range (keep_from) reads that batch, as a segment scan does; any
    other range starting there leaves it to the range before."""
    broker = FakeBroker(_log())
    sink = ScanSink()
    fetch_range(broker, "t", 3, 111, broker.high_watermark, sink, deep=False, max_bytes=1, keep_from=-1)
    assert [r["base_offset"] for r in _without_position(sink)] == [110, 116, 118]
    later = ScanSink()
    fetch_range(FakeBroker(_log()), "t", 3, 111, broker.high_watermark, later, deep=False, max_bytes=1)
    assert [r["base_offset"] for r in _without_position(later)] == [116, 118]


class _Issues:
    """Stands in for the Spark accumulator a task reports its issues on."""

    def __init__(self) -> None:
        self.value: list[tuple[Any, ...]] = []

    def add(self, items: list[tuple[Any, ...]]) -> None:
        self.value.extend(items)


def test_a_task_that_cannot_connect_marks_each_of_its_ranges_and_tries_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The driver could reach the cluster, this task cannot: every range it was given is a
    ``fetch_error`` naming why, the task ends normally, and the connection is attempted once,
    not once a range (each attempt costs the whole bootstrap timeout)."""
    import pyarrow as pa

    from audit.collect.batches import wire
    from audit.collect.metadata.transactions import kafka_python_settings
    from audit.config import ClusterConfig

    attempts: list[int] = []
    real = wire.FetchSession

    def counted(settings: dict[str, Any], timeout_ms: int) -> FetchSession:
        attempts.append(1)
        return real(settings, timeout_ms)

    monkeypatch.setattr(wire, "FetchSession", counted)
    settings = kafka_python_settings(ClusterConfig("127.0.0.1:9", timeout_seconds=0.5))
    assert isinstance(settings, dict)
    ranges = pa.RecordBatch.from_pydict(
        {
            "topic": ["t", "t", "u"],
            "partition": [0, 0, 3],
            "start": [0, 50, 7],
            "end": [50, 90, 9],
            "keep_from": [-1, None, -1],
            "local_start": [None, None, None],
        }
    )
    issues = _Issues()
    rows = list(wire._fetch_task(settings, 500, False, 1 << 20, issues)(iter([ranges])))
    assert sum(r.num_rows for r in rows) == 0
    assert attempts == [1]
    found = [(t[4], t[0], t[1], t[3]) for t in issues.value]  # ScanIssue: kind, topic, partition, offset
    assert found == [("fetch_error", "t", 0, 0), ("fetch_error", "t", 0, 50), ("fetch_error", "u", 3, 7)]
    assert all("no connection from this task: " in t[6] for t in issues.value), issues.value


def test_the_hand_made_log_is_the_same_bytes_whenever_it_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole-log walk and each fake broker build the log separately; a gzip header
    stamped with the current second made them differ across a second's boundary (this
    test module failed now and then under load)."""
    import time

    first = _log()
    later = time.time() + 10
    monkeypatch.setattr(time, "time", lambda: later)
    assert _log() == first


def test_a_fetch_error_below_the_local_log_start_names_the_remote_tier() -> None:
    """Of the issues a range added, each fetch error at an offset below the tiered
    partition's local log start is the remote tier's; one at or past it, another kind, the
    issues before the range, and a partition without a remote tier keep their detail."""
    sink = ScanSink()
    sink.issue("fetch_error", "an earlier range's", "t", 0, None, 0)
    since = len(sink.issues)
    sink.issue("fetch_error", "Fetch at offset 10 failed: KafkaStorageError", "t", 0, None, 10)
    sink.issue("fetch_error", "Fetch at offset 100 failed: NotLeaderForPartitionError", "t", 0, None, 100)
    sink.issue("truncated", "the partition's last batch is cut", "t", 0, None, 20)
    untouched = list(sink.issues)
    in_remote_tier(sink, since, None)
    assert sink.issues == untouched
    in_remote_tier(sink, since, 50)
    details = [i.detail for i in sink.issues]
    assert details[0] == "an earlier range's"
    below = "remote tier read failed (tiered storage: offset 10 is below the local log start 50"
    assert details[1].startswith(below)
    assert details[1].endswith("KafkaStorageError")
    assert details[2:] == [untouched[2].detail, untouched[3].detail]
