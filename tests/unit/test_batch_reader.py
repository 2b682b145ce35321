"""The batch reader's walk (native/src/batches.rs) on hand-made record batches.

The oracle for what a record is: kafka-python's own v2 record decoder (an implementation
independent of ours), its records fed to the Python chunker (``RangeChunker``), the rows
the librdkafka readers are held to; transaction filtering is asserted record by record.
The live differential test against librdkafka is tests/integration/test_records_live.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from kafka.record.memory_records import MemoryRecords

from audit.collect.records.chunks import RangeChunker
from tests.batches import batch, control_batch, legacy_entry

native = pytest.importorskip("mirror_audit_native")
pytestmark = pytest.mark.unit

H = list[tuple[str, bytes | None]]
ABORT, COMMIT = 0, 1


def decoded(data: bytes, skip_producers: frozenset[int] = frozenset()) -> list[tuple[Any, ...]]:
    """(offset, timestamp, key, value, headers, epoch) of every data record, by kafka-python;
    the batches of ``skip_producers`` left out (what read_committed drops)."""
    out = []
    records = MemoryRecords(data)
    while (b := records.next_batch()) is not None:
        if b.is_control_batch or b.producer_id in skip_producers:
            continue
        for r in b:
            out.append((r.offset, r.timestamp, r.key, r.value, list(r.headers), b.leader_epoch))
    return out


def expected_rows(records: list[tuple[Any, ...]], start: int, end: int, size: int) -> list[dict[str, Any]]:
    chunker = RangeChunker("t", 0, start, end, size)
    for offset, timestamp, key, value, headers, epoch in records:
        if start <= offset < end:
            chunker.add(offset, timestamp, key, value, headers, epoch)
    return [c.row() for c in chunker.finish()]


def read(
    responses: list[bytes],
    start: int,
    end: int,
    size: int,
    *,
    read_committed: bool = False,
    aborted: list[tuple[int, int]] | None = None,
) -> list[dict[str, Any]]:
    """The rows of [start, end) fed ``responses`` in turn, as the fetch loop feeds them."""
    r = native.BatchRange("t", 0, start, end, size, read_committed)
    for data in responses:
        r.feed(data, aborted or [])
    assert r.done
    rows: list[dict[str, Any]] = r.finish()
    return rows


HEADERS: H = [("trace", b"1"), ("trace", b"2"), ("empty", b""), ("null", None)]


def mixed_batches(compression: int = 0) -> bytes:
    return b"".join(
        [
            batch(0, [(b"k0", b"v0"), (None, b"v1", HEADERS), (b"", None)], epoch=3, compression=compression),
            batch(3, [(b"k3", b"v3", [("a", None)]), (b"k4", b"")], epoch=3, compression=compression),
            # compacted: offsets 5, 7 and 9 are gone, the batch keeps its last offset delta
            batch(5, [(b"k6", b"v6"), (b"k8", b"v8")], epoch=4, deltas=[1, 3], compression=compression),
            batch(10, [(b"k%d" % i, b"v" * i, [("h", b"x")] * (i % 3)) for i in range(10, 30)], epoch=5),
        ]
    )


@pytest.mark.parametrize("compression", [0, 1], ids=["none", "gzip"])
@pytest.mark.parametrize(("start", "end"), [(0, 30), (1, 29), (4, 12), (0, 40)])
def test_rows_equal_the_python_chunker_over_kafka_pythons_decoding(
    compression: int, start: int, end: int
) -> None:
    data = mixed_batches(compression)
    want = expected_rows(decoded(data), start, end, 4)
    if end > 30:  # a range past the log end is never done: the fetch loop waits, then fails it
        r = native.BatchRange("t", 0, start, end, 4, False)
        assert r.feed(data, []) == (30, 4)
        assert not r.done
        with pytest.raises(native.ReaderError, match="read up to offset 30 of 40"):
            r.finish()
        return
    assert read([data], start, end, 4) == want


def test_headers_keep_order_repeats_and_nulls_in_the_checksum() -> None:
    one = batch(0, [(b"k", b"v", [("a", b"1"), ("a", b"2")])])
    swapped = batch(0, [(b"k", b"v", [("a", b"2"), ("a", b"1")])])
    collapsed = batch(0, [(b"k", b"v", [("a", b"2")])])
    null = batch(0, [(b"k", b"v", [("a", b"1"), ("a", None)])])
    empty = batch(0, [(b"k", b"v", [("a", b"1"), ("a", b"")])])
    sums = {read([d], 0, 1, 10)[0]["checksum"] for d in (one, swapped, collapsed, null, empty)}
    assert len(sums) == 5
    assert read([one], 0, 1, 10) == expected_rows(decoded(one), 0, 1, 10)


def test_a_response_cut_inside_a_batch_continues_at_that_batch() -> None:
    data = mixed_batches()
    whole = read([data], 0, 30, 4)
    first_two = len(batch(0, [(b"k0", b"v0"), (None, b"v1", HEADERS), (b"", None)], epoch=3)) + len(
        batch(3, [(b"k3", b"v3", [("a", None)]), (b"k4", b"")], epoch=3)
    )
    r = native.BatchRange("t", 0, 0, 30, 4, False)
    assert r.feed(data[: first_two + 20], []) == (5, 2)  # the third batch is cut: fetched again
    assert r.next == 5
    assert not r.done
    r.feed(data[first_two:], [])
    assert r.finish() == whole


def test_a_batch_fetched_twice_is_read_once() -> None:
    data = mixed_batches()
    r = native.BatchRange("t", 0, 0, 30, 4, False)
    r.feed(data, [])
    assert r.done
    assert r.finish() == read([data], 0, 30, 4)
    again = native.BatchRange("t", 0, 0, 30, 4, False)
    again.feed(data[: len(batch(0, [(b"k0", b"v0"), (None, b"v1", HEADERS), (b"", None)], epoch=3))], [])
    again.feed(data, [])  # the next response starts at the first batch again
    assert again.finish() == read([data], 0, 30, 4)


def test_log_append_time_gives_every_record_the_batchs_max_timestamp() -> None:
    data = batch(0, [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")], log_append_time=True, timestamp=1000)
    records = decoded(data)
    assert {t for _, t, *_ in records} == {1002}  # kafka-python agrees: the max timestamp
    assert read([data], 0, 3, 10) == expected_rows(records, 0, 3, 10)


def transactions() -> bytes:
    """pid 7 aborts (2-3), pid 8 commits (4-5) interleaved, pid 7 again commits (8-9)."""
    return b"".join(
        [
            batch(0, [(b"plain", b"0"), (b"plain", b"1")]),
            batch(2, [(b"t7", b"2")], transactional=True, producer_id=7, producer_epoch=0),
            batch(3, [(b"t8", b"3")], transactional=True, producer_id=8, producer_epoch=0),
            batch(4, [(b"t7", b"4")], transactional=True, producer_id=7, producer_epoch=0),
            control_batch(5, ABORT, 7, 0),
            control_batch(6, COMMIT, 8, 0),
            batch(7, [(b"t7", b"7"), (b"t7", b"8")], transactional=True, producer_id=7, producer_epoch=1),
            control_batch(9, COMMIT, 7, 1),
            batch(10, [(b"plain", b"10")]),
        ]
    )


def test_read_uncommitted_keeps_aborted_records_and_never_the_markers() -> None:
    data = transactions()
    rows = read([data], 0, 11, 100)
    assert rows == expected_rows(decoded(data), 0, 11, 100)
    assert rows[0]["record_count"] == 8
    assert [(g["start"], g["end"]) for g in rows[0]["gaps"]] == [(5, 6), (9, 9)]


def test_read_committed_drops_the_aborted_transaction_and_nothing_after_its_marker() -> None:
    data = transactions()
    rows = read([data], 0, 11, 100, read_committed=True, aborted=[(7, 2)])
    want = [r for r in decoded(data) if r[0] not in (2, 4)]
    assert rows == expected_rows(want, 0, 11, 100)
    assert [(g["start"], g["end"]) for g in rows[0]["gaps"]] == [(2, 2), (4, 6), (9, 9)]


def test_read_committed_without_aborted_transactions_keeps_every_data_record() -> None:
    data = transactions()
    assert read([data], 0, 11, 100, read_committed=True) == read([data], 0, 11, 100)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (legacy_entry(0, magic=1), "message format v1 at offset 0: the batch reader reads v2"),
        (legacy_entry(0, magic=0), "message format v0"),
    ],
)
def test_legacy_message_sets_are_refused_naming_the_offset(data: bytes, match: str) -> None:
    r = native.BatchRange("t", 0, 0, 1, 10, False)
    with pytest.raises(native.ReaderError, match=match):
        r.feed(data, [])


def test_a_record_running_past_its_batch_is_named() -> None:
    data = bytearray(batch(40, [(b"key", b"value")]))
    data[61] = 0x7E  # the first record's length varint: 63 bytes, more than the batch holds
    r = native.BatchRange("t", 0, 40, 41, 10, False)
    with pytest.raises(native.ReaderError, match="the record batch at offset 40: a record of 63 bytes"):
        r.feed(bytes(data), [])


def test_a_gzip_batch_that_does_not_inflate_is_named() -> None:
    data = bytearray(batch(0, [(b"k", b"v" * 100)], compression=1))
    data[70:80] = b"\xff" * 10
    r = native.BatchRange("t", 0, 0, 1, 10, False)
    with pytest.raises(native.ReaderError, match="gzip records do not decompress"):
        r.feed(bytes(data), [])


def test_the_next_fetch_offset_read_from_the_headers_is_where_the_walk_ends() -> None:
    """The fetch after a response is sent before its records are walked, at the offset the
    batch headers give: the offset the walk then reaches, whole response or cut."""
    data = mixed_batches(compression=1)
    for cut in (len(data), len(data) - 1, len(data) // 2, 70, 12, 0):
        r = native.BatchRange("t", 0, 2, 100, 4, False)
        reached, _ = r.feed(data[:cut], [])
        assert native.resume_offset(data[:cut], 2) == reached, cut
    assert native.resume_offset(mixed_batches(), 100) == 100  # never behind where it starts


def digests_read(
    responses: list[bytes],
    start: int,
    end: int,
    *,
    read_committed: bool = False,
    aborted: tuple[tuple[int, int], ...] = (),
) -> list[tuple[int, int]]:
    """(offset, content digest) of each record of [start, end), taken after every response
    as the scan takes them."""
    import array

    r = native.BatchRange("t", 0, start, end, 4, read_committed, True)
    out: list[tuple[int, int]] = []
    for data in responses:
        r.feed(data, list(aborted))
        offsets, digests = (array.array("q", b) for b in r.take_digests())
        out += zip(offsets, digests, strict=True)
    assert r.done
    return out


def test_content_digests_equal_the_python_twin_over_kafka_pythons_decoding() -> None:
    """Mode mm2's per-record digests: the frame without the offset, record by record, for
    the mixed batches (nulls, repeated and null headers, a compacted batch), gzip too, and
    taken in two pieces across a response cut inside a batch."""
    from audit.collect.records.chunks import content_digest

    for compression in (0, 1):
        data = mixed_batches(compression)
        want = [(o, content_digest(t, k, v, h)) for o, t, k, v, h, _ in decoded(data) if 2 <= o < 27]
        assert digests_read([data], 2, 27) == want
    data = mixed_batches()
    cut = len(batch(0, [(b"k0", b"v0"), (None, b"v1", HEADERS), (b"", None)], epoch=3)) + 20
    assert digests_read([data[:cut], data[cut - 20 :]], 0, 30) == digests_read([data], 0, 30)


def test_content_digests_leave_the_offset_out_and_keep_every_field() -> None:
    """A copy at another offset has the same digest; any change of content does not."""
    record = (b"k", b"v", [("a", b"1"), ("a", None)])
    (at_0,) = digests_read([batch(0, [record], timestamp=5)], 0, 1)
    (at_9,) = digests_read([batch(9, [record], timestamp=5)], 9, 10)
    assert at_0[1] == at_9[1]
    changed = [
        batch(0, [(b"k", b"v", [("a", b"1")])], timestamp=5),
        batch(0, [(b"k", b"v", [("a", None), ("a", b"1")])], timestamp=5),
        batch(0, [(None, b"v", [("a", b"1"), ("a", None)])], timestamp=5),
        batch(0, [(b"k", b"", [("a", b"1"), ("a", None)])], timestamp=5),
        batch(0, [record], timestamp=6),
    ]
    assert len({digests_read([d], 0, 1)[0][1] for d in changed} | {at_0[1]}) == 6


def test_content_digests_follow_the_isolation_and_never_a_marker() -> None:
    data = transactions()
    every = digests_read([data], 0, 11)
    assert [o for o, _ in every] == [0, 1, 2, 3, 4, 7, 8, 10]
    committed = digests_read([data], 0, 11, read_committed=True, aborted=((7, 2),))
    assert [o for o, _ in committed] == [0, 1, 3, 7, 8, 10]


def test_a_range_read_for_its_digests_keeps_no_chunk_checksums() -> None:
    # Mode mm2 hashes each record once, into its digest: the chunks' checksums are not
    # computed, so the range will not hand out chunk rows that would carry none.
    r = native.BatchRange("t", 0, 0, 1, 4, False, True)
    r.feed(batch(0, [(b"k", b"v", [])], timestamp=5), [])
    assert r.done
    with pytest.raises(native.ReaderError, match="keeps no chunk checksums"):
        r.finish()
