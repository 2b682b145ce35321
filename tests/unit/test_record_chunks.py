"""Record-level verification logic on plain values: chunks, checksums, gaps, narrowing,
planning and the incremental history."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeGuard

import pytest

from audit.collect.records.chunks import Headers, RangeChunker, chunk_bounds
from audit.collect.records.collect import _coverage, unread_spans
from audit.collect.records.digest_history import DigestHistory
from audit.collect.records.history import PartitionOutcome, RecordHistory
from audit.collect.records.narrow import describe_record, first_divergence
from audit.collect.records.plan import RecordPlan, pair_groups, plan_records, task_groups
from audit.collect.records.read import cyclic_gc_paused, partition_runs
from audit.config import RecordsConfig, TopicRecordScope
from audit.errors import InputError
from audit.snapshot import ReadRangeRecord


class Msg:
    """The part of confluent_kafka.Message the narrowing reads."""

    def __init__(
        self, offset: int, key: bytes | None, value: bytes | None, ts: int = 1000, headers: Any = None
    ):
        self._o, self._k, self._v, self._t, self._h = offset, key, value, ts, headers

    def offset(self) -> int:
        return self._o

    def key(self) -> bytes | None:
        return self._k

    def value(self) -> bytes | None:
        return self._v

    def timestamp(self) -> tuple[int, int]:
        return (1, self._t)

    def headers(self) -> Any:
        return self._h

    def leader_epoch(self) -> int | None:
        return 3 + self._o // 10


def _chunks(
    records: list[tuple[int, bytes | None, bytes | None]], start: int, end: int, size: int = 10, **kw: Any
) -> list[dict[str, Any]]:
    c = RangeChunker("t", 0, start, end, size)
    for offset, key, value in records:
        c.add(offset, kw.get("ts", 1000), key, value, kw.get("headers"), kw.get("epoch", 3))
    return [x.row() for x in c.finish()]


def _plain(n: int, start: int = 0) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(i, f"k{i}".encode(), f"v{i}".encode()) for i in range(start, start + n)]


def test_chunks_are_aligned_on_multiples_of_the_size_and_clipped_to_the_range() -> None:
    assert chunk_bounds(5, 25, 10) == [(5, 10), (10, 20), (20, 25)]
    rows = _chunks(_plain(20, 5), 5, 25)
    assert [(r["chunk_start"], r["chunk_end"], r["record_count"]) for r in rows] == [
        (5, 10, 5),
        (10, 20, 10),
        (20, 25, 5),
    ]
    assert all(r["gap_count"] == 0 and r["gaps"] == [] for r in rows)


def test_checksum_is_order_sensitive_and_tells_null_from_empty() -> None:
    base = _chunks(_plain(10), 0, 10)[0]["checksum"]
    assert _chunks(_plain(10), 0, 10)[0]["checksum"] == base  # deterministic
    swapped = _plain(10)
    swapped[3], swapped[4] = (3, swapped[4][1], swapped[4][2]), (4, swapped[3][1], swapped[3][2])
    assert _chunks(swapped, 0, 10)[0]["checksum"] != base
    null_key, empty_key = _plain(10), _plain(10)
    null_key[0] = (0, None, b"v0")
    empty_key[0] = (0, b"", b"v0")
    assert len({_chunks(null_key, 0, 10)[0]["checksum"], _chunks(empty_key, 0, 10)[0]["checksum"], base}) == 3
    tomb, empty = _plain(10), _plain(10)
    tomb[9], empty[9] = (9, b"k9", None), (9, b"k9", b"")
    assert _chunks(tomb, 0, 10)[0]["checksum"] != _chunks(empty, 0, 10)[0]["checksum"]
    assert _chunks(_plain(10), 0, 10, headers=[("h", b"1")])[0]["checksum"] != base
    assert (
        _chunks(_plain(10), 0, 10, headers=[("h", None)])[0]["checksum"]
        != _chunks(_plain(10), 0, 10, headers=[("h", b"")])[0]["checksum"]
    )
    assert _chunks(_plain(10), 0, 10, ts=2000)[0]["checksum"] != base


def test_gaps_inside_and_at_the_end_of_chunks_are_ranges() -> None:
    records = [r for r in _plain(25) if r[0] not in (3, 4, 10, 21, 22, 23, 24)]
    rows = _chunks(records, 0, 25)
    assert [(r["gap_count"], r["gaps"]) for r in rows] == [
        (2, [{"start": 3, "end": 4}]),
        (1, [{"start": 10, "end": 10}]),
        (4, [{"start": 21, "end": 24}]),
    ]
    # Same pattern, same gaps checksum; another pattern, another.
    same = _chunks(records, 0, 25)
    assert [r["gaps_checksum"] for r in same] == [r["gaps_checksum"] for r in rows]
    other = _chunks([r for r in _plain(25) if r[0] not in (3, 5, 10, 21, 22, 23, 24)], 0, 25)
    assert other[0]["gaps_checksum"] != rows[0]["gaps_checksum"] and other[0]["gap_count"] == 2
    # A chunk with no record at all is all gap.
    empty = _chunks([], 0, 12)
    assert [(r["record_count"], r["gap_count"], r["first_offset"]) for r in empty] == [
        (0, 10, None),
        (0, 2, None),
    ]


def _epochs(epochs: list[int | None]) -> dict[str, Any]:
    c = RangeChunker("t", 0, 0, 10, 10)
    for i, e in enumerate(epochs):
        c.add(i, 1, b"k", b"v", None, e)
    (row,) = [x.row() for x in c.finish()]
    return row


def test_record_epochs_are_kept_as_min_max_and_the_runs_that_pin_every_offset() -> None:
    row = _epochs([4, 4, None, 5, -1, 7, 7])  # None and -1: no epoch (old formats), skipped
    assert (row["min_record_epoch"], row["max_record_epoch"]) == (4, 7)
    assert row["epoch_runs"] == [{"start": 0, "epoch": 4}, {"start": 3, "epoch": 5}, {"start": 5, "epoch": 7}]
    # Same records, same min and max, but the leader changed at another offset: the runs
    # tell the two apart, min and max cannot.
    moved = _epochs([4, 4, None, 4, -1, 7, 7])
    assert (moved["min_record_epoch"], moved["max_record_epoch"]) == (4, 7)
    assert moved["epoch_runs"] != row["epoch_runs"]
    assert moved["checksum"] == row["checksum"]  # epochs are not in the checksum


def test_the_message_loop_hashes_exactly_like_add() -> None:
    records = [r for r in _plain(35) if r[0] not in (4, 17, 18)]
    msgs = [Msg(o, k, v, ts=o * 7, headers=[("h", b"x")] if o % 5 == 0 else None) for o, k, v in records]
    msgs[2]._k = None  # a null key
    msgs[3]._v = b""  # an empty value
    one = RangeChunker("t", 0, 0, 35, 10)
    for m in msgs:
        one.add(m.offset(), m.timestamp()[1], m.key(), m.value(), m.headers(), m.leader_epoch())
    bulk = RangeChunker("t", 0, 0, 35, 10)
    bulk.add_messages(msgs[:7])
    bulk.add_messages(msgs[7:])
    assert [c.row() for c in one.finish()] == [c.row() for c in bulk.finish()]


def _is_headers(headers: object) -> TypeGuard[Headers]:
    """Whether a message's headers are what :meth:`RangeChunker.add` takes: the stubs type
    ``Message.headers()`` as anything ``produce`` accepts (a dict, str values), while a
    message hands back the list of ``(str, bytes | None)`` pairs it holds."""
    return headers is None or (
        isinstance(headers, list)
        and all(isinstance(k, str) and (v is None or isinstance(v, bytes)) for k, v in headers)
    )


def test_the_message_loop_hashes_confluent_messages_exactly_like_add() -> None:
    """Real confluent_kafka.Message objects, headers in every shape the loop inlines (a
    null, an empty and a non-empty value, several headers, a non-ASCII key), epochs that
    move inside a chunk and gaps across chunk boundaries."""
    from confluent_kafka import Message

    shapes: list[Any] = [
        None,
        [("h", b"x")],
        [("h", None)],
        [("h", b"")],
        [("é", b"1"), ("h", None), ("", b"")],
    ]
    msgs = [
        Message(
            topic="t",
            partition=0,
            offset=o,
            key=None if o % 7 == 0 else b"k%d" % o,
            value=b"" if o % 6 == 0 else b"v" * (o % 4),
            headers=shapes[o % len(shapes)],
            timestamp=(1, 1000 + o),
            leader_epoch=[2, 5, 3][o % 3] if o % 11 else -1,
        )
        for o in range(3, 47)
        if o not in (9, 20, 21, 22, 30)
    ]
    one = RangeChunker("t", 0, 3, 47, 10)
    for m in msgs:
        offset, headers = m.offset(), m.headers()
        assert offset is not None and _is_headers(headers)
        one.add(offset, m.timestamp()[1], m.key(), m.value(), headers, m.leader_epoch())
    bulk = RangeChunker("t", 0, 3, 47, 10)
    for part in (msgs[:5], msgs[5:6], msgs[6:23], msgs[23:]):
        bulk.add_messages(part)
    expected = [c.row() for c in one.finish()]
    assert [c.row() for c in bulk.finish()] == expected
    assert sum(r["record_count"] for r in expected) == len(msgs)
    # A different null-versus-empty header value changes the checksum.
    other = [
        Message(
            topic="t",
            partition=0,
            offset=m.offset(),
            key=m.key(),
            value=m.value(),
            headers=[("h", b"")] if m.headers() == [("h", None)] else m.headers(),
            timestamp=m.timestamp(),
            leader_epoch=m.leader_epoch() if m.leader_epoch() is not None else -1,
        )
        for m in msgs
    ]
    changed = RangeChunker("t", 0, 3, 47, 10)
    changed.add_messages(other)
    assert [r["checksum"] for r in (c.row() for c in changed.finish())] != [r["checksum"] for r in expected]


def _it(msgs: list[Msg]) -> Iterator[Msg]:
    return iter(msgs)


def _div(src: list[Msg], dst: list[Msg], compacted: bool = False) -> tuple[int | None, str]:
    offset, kind, _, _ = first_divergence(_it(src), _it(dst), compacted)
    return offset, kind


def _msgs(values: list[bytes | None], start: int = 0) -> list[Msg]:
    return [Msg(start + i, b"k", v) for i, v in enumerate(values)]


def test_first_divergence_names_the_offset_and_the_kind() -> None:
    src = _msgs([b"a", b"b", b"c", b"d"])
    assert _div(src, _msgs([b"a", b"b", b"c", b"d"])) == (None, "none_found")
    assert _div(src, _msgs([b"a", b"B", b"c", b"d"])) == (1, "payload_differs")
    assert _div(src, _msgs([b"a", b"b", b"d", b"?"])) == (2, "missing_record")  # c dropped, the rest shifted
    assert _div(src, _msgs([b"a", b"b", b"b", b"c"])) == (2, "duplicate_record")  # b written twice
    ts = [Msg(m.offset(), m.key(), m.value(), ts=5 if m.offset() == 3 else 1000) for m in src]
    assert _div(src, ts) == (3, "timestamp_differs")
    hd = [
        Msg(m.offset(), m.key(), m.value(), headers=[("h", b"x")] if m.offset() == 0 else None) for m in src
    ]
    assert _div(src, hd) == (0, "headers_differs")
    assert _div(src, src[:2]) == (2, "missing_record")
    assert _div(src[:2], src) == (2, "extra_record")
    holed = [m for m in src if m.offset() != 1]  # a marker where the source has a record
    assert _div(src, holed) == (1, "gap_pattern_differs")


def test_a_divergence_shows_header_values_and_escapes_losslessly() -> None:
    a = Msg(5, b"k", b"a\x00b\\x00.\xff", headers=[("trace", b"90")])
    b = Msg(5, b"k", b"a.b\\x00.\xff", headers=[("trace", b"other"), ("empty", None)])
    assert (
        describe_record(a)
        == r"key=k (1 bytes) value=a\x00b\\x00.\xff (9 bytes) ts=1000 headers=[trace=90 (2 bytes)]"
    )
    # a NUL and a literal '.' no longer print alike, nor do a byte 0xff and the text "\xff"
    assert describe_record(b).startswith(r"key=k (1 bytes) value=a.b\\x00.\xff (9 bytes)")
    assert describe_record(b).endswith("headers=[trace=other (5 bytes), empty=null]")
    long = Msg(0, None, "é".encode() * 30)
    assert describe_record(long).startswith("key=null value=" + "é" * 24 + "... (60 bytes)")


def test_compacted_topics_compare_only_the_offsets_both_sides_hold() -> None:
    src = _msgs([b"a", b"b", b"c", b"d", b"e"])
    dst = [m for m in src if m.offset() not in (1, 3)]
    assert _div(src, dst, compacted=True) == (None, "compaction_only")
    changed = [Msg(m.offset(), m.key(), b"X" if m.offset() == 4 else m.value()) for m in dst]
    assert _div(src, changed, compacted=True) == (4, "payload_differs")


CFG = RecordsConfig(chunk_records=10, split_records=100, resample_chunks=0)


def test_plan_covers_the_common_range_and_cuts_it_by_scope() -> None:
    common = {("orders", 0): (5, 95), ("clicks", 0): (0, 1000), ("events", 0): (0, 500)}
    cfg = RecordsConfig(
        chunk_records=10,
        split_records=100,
        resample_chunks=0,
        topics=(TopicRecordScope("clicks", "last", last_offsets=100), TopicRecordScope("events", "window")),
    )
    asked: dict[tuple[str, int], int] = {}

    def offsets_for_time(wanted: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        asked.update(wanted)
        return {tp: 400 for tp in wanted}

    plan = plan_records(common, cfg, {}, False, offsets_for_time, 0)
    got = {(r.topic, r.start, r.end, r.purpose) for r in plan.ranges}
    assert got == {("orders", 5, 95, "new"), ("clicks", 900, 1000, "new"), ("events", 400, 500, "new")}
    assert set(asked) == {("events", 0)}
    offline = plan_records(common, cfg, {}, False, None, 0)
    assert ("events", 0, 500, "new") in {(r.topic, r.start, r.end, r.purpose) for r in offline.ranges}
    assert offline.notes


def test_incremental_plan_reads_what_was_added_and_rechecks_old_chunks_round_robin() -> None:
    common = {("orders", 0): (0, 100)}
    history = {("orders", 0): {"verified_through": 60}}
    cfg = RecordsConfig(chunk_records=10, split_records=100, resample_chunks=2)
    plans = [plan_records(common, cfg, history, False, None, run) for run in range(3)]
    for plan in plans:
        assert [(r.start, r.end) for r in plan.ranges if r.purpose == "new"] == [(60, 100)]
    rechecks = [sorted((r.start, r.end) for r in p.ranges if r.purpose == "recheck") for p in plans]
    assert rechecks == [[(0, 10), (10, 20)], [(20, 30), (30, 40)], [(40, 50), (50, 60)]]
    full = plan_records(common, cfg, history, True, None, 0)
    assert [(r.start, r.end) for r in full.ranges if r.purpose == "new"] == [(0, 100)]


def test_budget_takes_new_data_round_robin_and_defers_the_rest() -> None:
    common = {("a", 0): (0, 100), ("b", 0): (0, 100)}
    cfg = RecordsConfig(chunk_records=10, split_records=100, resample_chunks=0, max_records_per_run=60)
    plan = plan_records(common, cfg, {}, False, None, 0)
    assert sorted((r.topic, r.start, r.end) for r in plan.ranges) == [("a", 0, 30), ("b", 0, 30)]
    assert plan.deferred == {("a", 0): (30, 100), ("b", 0): (30, 100)}
    assert plan.offsets() == 60 and plan.notes


def test_a_byte_budget_charges_each_partition_its_bytes_per_offset() -> None:
    common = {("a", 0): (0, 100), ("b", 0): (0, 100)}
    cfg = RecordsConfig(chunk_records=10, split_records=100, resample_chunks=0, max_bytes_per_run=100)
    # b's records are 4 times a's: 50 bytes per round of a chunk each
    plan = plan_records(common, cfg, {}, False, None, 0, {("a", 0): 1.0, ("b", 0): 4.0})
    assert sorted((r.topic, r.start, r.end) for r in plan.ranges) == [("a", 0, 20), ("b", 0, 20)]
    assert plan.deferred == {("a", 0): (20, 100), ("b", 0): (20, 100)}
    assert "100 bytes" in plan.notes[0]
    # once b is done, a takes what is left: 60 bytes after the first round
    short = {("a", 0): (0, 100), ("b", 0): (0, 10)}
    plan = plan_records(short, cfg, {}, False, None, 0, {("a", 0): 1.0, ("b", 0): 4.0})
    assert sorted((r.topic, r.start, r.end) for r in plan.ranges) == [("a", 0, 60), ("b", 0, 10)]
    assert plan.deferred == {("a", 0): (60, 100)}


def test_both_budgets_apply_and_an_unsized_partition_is_charged_like_the_heaviest() -> None:
    common = {("a", 0): (0, 100), ("new", 0): (0, 100)}
    both = RecordsConfig(
        chunk_records=10,
        split_records=100,
        resample_chunks=0,
        max_records_per_run=30,
        max_bytes_per_run=10**6,
    )
    plan = plan_records(common, both, {}, False, None, 0, {("a", 0): 1.0})
    # the offsets run out first (bytes would allow all): two chunks of a, one of new
    assert plan.offsets() == 30
    assert "30 offsets and 1000000 bytes" in plan.notes[0]
    cfg = RecordsConfig(chunk_records=10, split_records=100, resample_chunks=0, max_bytes_per_run=99)
    plan = plan_records(common, cfg, {}, False, None, 0, {("a", 0): 1.0, ("b", 0): 9.0})
    # "new" has no size: charged 9 bytes an offset like b, so its first chunk (90) does not fit after a's (10)
    assert [(r.topic, r.start, r.end) for r in plan.ranges] == [("a", 0, 10)]
    with pytest.raises(ValueError):
        plan_records(common, cfg, {}, False, None, 0)


def test_history_moves_verified_through_and_pulls_it_back_on_a_mismatch(tmp_path: Path) -> None:
    h = RecordHistory.load(tmp_path)
    h.record(
        {
            ("orders", 0): PartitionOutcome((0, 100), None),
            ("orders", 1): PartitionOutcome((0, 100), 40, ((40, 50),)),
        }
    )
    h.save()
    again = RecordHistory.load(tmp_path)
    parts = again.partitions()
    assert parts[("orders", 0)]["verified_through"] == 100
    assert parts[("orders", 1)]["verified_through"] == 40 and parts[("orders", 1)]["mismatched"] == [[40, 50]]
    assert again.runs == 1
    # A re-checked old chunk that now differs pulls the partition back to it.
    again.record({("orders", 0): PartitionOutcome(None, 20, ((20, 30),))})
    assert again.partitions()[("orders", 0)]["verified_through"] == 20


def _read(topic: str, partition: int, start: int, end: int, read_to: int) -> tuple[str, ReadRangeRecord]:
    detail = None if read_to == end else "remote tier read failed (...): KafkaStorageError"
    row = ReadRangeRecord(topic, partition, start, end, read_to, detail is None, "x", False, detail)
    return "source", row


def test_what_a_side_could_not_read_is_shown_unreadable_never_mismatched(tmp_path: Path) -> None:
    """A range that stopped short leaves [read_to, end) unread; the spans of a partition are
    merged, and kept in the history apart from its mismatched chunks, so the coverage shows
    them as unreadable (the chunks there differ because a side was not read, not because
    its records do)."""
    spans = unread_spans(
        [
            _read("orders", 0, 0, 100, 100),  # read whole
            _read("orders", 0, 100, 200, 150),
            _read("orders", 0, 200, 300, 200),  # adjacent: merged with [150, 200)
            _read("orders", 1, 0, 50, 0),
        ]
    )
    assert spans == {("orders", 0): [(150, 300)], ("orders", 1): [(0, 50)]}
    h = RecordHistory.load(tmp_path)
    h.record(
        {
            ("orders", 0): PartitionOutcome((0, 300), 20, ((20, 30),), tuple(spans[("orders", 0)])),
            ("orders", 1): PartitionOutcome((0, 50), 0, (), tuple(spans[("orders", 1)])),
            ("orders", 2): PartitionOutcome((0, 10), None),
        }
    )
    plan = RecordPlan((), {("orders", 0): (0, 300), ("orders", 1): (0, 50), ("orders", 2): (0, 10)})
    coverage = _coverage(h.partitions(), plan)
    by = {
        (r["topic"], r["partition"]): [(g["start"], g["end"], g["state"]) for g in r["ranges"]]
        for r in coverage["partitions"]
    }
    assert by[("orders", 0)] == [
        (0, 20, "verified"),
        (20, 30, "mismatched"),
        (30, 150, "not_verified"),
        (150, 300, "unreadable"),
    ]
    assert by[("orders", 1)] == [(0, 50, "unreadable")]
    assert by[("orders", 2)] == [(0, 10, "verified")]
    assert coverage["totals"] == {"verified": 30, "mismatched": 10, "unreadable": 200, "not_verified": 120}
    # The partitions with something to look at come first.
    assert [(r["topic"], r["partition"]) for r in coverage["partitions"]][-1] == ("orders", 2)


def test_a_history_of_other_clusters_or_a_recreated_topic_proves_nothing(tmp_path: Path) -> None:
    h = RecordHistory.load(tmp_path, ("src-1", "dst-1"))
    h.record({("orders", 0): PartitionOutcome((0, 100), None)}, {"orders": "id-a"})
    h.save()
    assert (
        RecordHistory.load(tmp_path, ("src-1", "dst-1")).partitions()[("orders", 0)]["verified_through"]
        == 100
    )
    assert RecordHistory.load(tmp_path, ("src-2", "dst-1")).partitions() == {}
    same = RecordHistory.load(tmp_path, ("src-1", "dst-1"))
    assert same.partitions({"orders": "id-b"}) == {}  # orders was deleted and created again
    assert same.partitions({"orders": "id-a"})[("orders", 0)]["verified_through"] == 100


def test_an_unreadable_history_is_an_error_not_a_fresh_start(tmp_path: Path) -> None:
    (tmp_path / "record-verification.json").write_text("{not json")
    with pytest.raises(InputError, match=r"record-verification\.json cannot be read .*or run with --full"):
        RecordHistory.load(tmp_path)
    # As the error advises, a --full run, which reads nothing of it, starts a new one.
    assert RecordHistory.load(tmp_path, full=True).partitions() == {}
    (tmp_path / "mm2-record-verification.json").write_text('{"format": "something else"}')
    with pytest.raises(InputError, match=r"not a mirror-audit-mm2-record-verification/1 file"):
        DigestHistory.load(tmp_path)


def test_partition_runs_split_a_consume_result_by_partition_topic_and_error() -> None:
    from confluent_kafka import KafkaError, Message

    def msg(topic: str, partition: int, offset: int) -> Message:
        return Message(topic=topic, partition=partition, offset=offset, value=b"v")

    eof = Message(topic="a", partition=0, offset=3, error=KafkaError(KafkaError._PARTITION_EOF))
    lost = Message(error=KafkaError(KafkaError._TRANSPORT))
    msgs = [
        msg("a", 0, 0),
        msg("a", 0, 1),
        msg("a", 0, 2),
        eof,
        msg("a", 1, 7),
        msg("b", 1, 4),  # same partition number, another topic
        msg("b", 1, 5),
        lost,
        msg("a", 0, 3),
    ]
    runs = [(t, p, lo, hi, None if e is None else e.code()) for t, p, lo, hi, e in partition_runs(msgs)]
    assert runs == [
        ("a", 0, 0, 3, None),
        ("a", 0, 3, 4, KafkaError._PARTITION_EOF),
        ("a", 1, 4, 5, None),
        ("b", 1, 5, 7, None),
        ("None", -1, 7, 8, KafkaError._TRANSPORT),
        ("a", 0, 8, 9, None),
    ]
    assert list(partition_runs([])) == []


def test_the_cyclic_gc_is_paused_inside_and_restored_after_even_on_error() -> None:
    import gc

    assert gc.isenabled()
    with cyclic_gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), cyclic_gc_paused():
        raise ValueError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with cyclic_gc_paused():
            pass
        assert not gc.isenabled()  # a caller that had it off keeps it off
    finally:
        gc.enable()


def test_task_groups_keep_one_side_per_task_and_balance_the_offsets() -> None:
    sizes = [900, 500, 400, 300, 300, 100, 100]
    ranges = [
        (side, "t", p, 0, size, False) for side in ("source", "destination") for p, size in enumerate(sizes)
    ]
    groups = task_groups(ranges, 4)
    assert len(groups) == 4
    assert all(len({r[0] for r in g}) == 1 for g in groups)  # one cluster per task
    assert sorted(r for g in groups for r in g) == sorted(ranges)  # every range exactly once
    for side in ("source", "destination"):
        loads = sorted(sum(r[4] - r[3] for r in g) for g in groups if g[0][0] == side)
        assert loads == [1300, 1300]  # 2,600 offsets split evenly
    # Fewer ranges than tasks: a task per range, never an empty one.
    two = [("source", "t", 0, 0, 5, False), ("destination", "t", 0, 0, 5, False)]
    assert task_groups(two, 8) == [[two[0]], [two[1]]]
    assert task_groups([], 4) == []
    # One slot: still one task per side, so a consumer never switches clusters.
    assert [len(g) for g in task_groups(ranges, 1)] == [7, 7]


def test_pair_groups_keep_both_sides_of_a_partition_in_one_task_in_offset_order() -> None:
    # Mode mm2: a source partition's ranges and its replica's (split every 100 offsets) in
    # one task, the source's first, each side's in offset order, so the task reads both
    # sides of the partition and matches them as it reads.
    ranges = [
        (side, topic, p, lo, lo + 100, False)
        for side, topic in (("destination", "source.t"), ("source", "t"))
        for p, n in ((0, 5), (1, 3), (2, 1))
        for lo in reversed(range(0, n * 100, 100))
    ]
    groups = pair_groups(ranges, 2, lambda r: r[2])
    assert sorted(r for g in groups for r in g) == sorted(ranges)
    for g in groups:
        for p in {r[2] for r in g}:
            mine = [(r[0], r[3]) for r in g if r[2] == p]
            n = len(mine) // 2
            assert mine == [("source", lo) for lo in range(0, n * 100, 100)] + [
                ("destination", lo) for lo in range(0, n * 100, 100)
            ]
    # 1,000 offsets against 600 + 200: partition 0 alone, the others together.
    assert [sorted({r[2] for r in g}) for g in groups] == [[0], [1, 2]]
    assert pair_groups(ranges, 8, lambda r: r[2]) != [] and len(pair_groups(ranges, 8, lambda r: r[2])) == 3
    assert pair_groups([], 4, lambda r: r[2]) == []
