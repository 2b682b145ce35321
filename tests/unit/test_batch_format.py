"""The record batch walker on hand-made bytes: every field, every kind of damage."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatch

from audit.collect.batches.format import ScanSink, marker_name, walk
from audit.collect.batches.segments import index_split_positions, plan_file
from tests.batches import batch, control_batch, index, legacy_entry, walk_bytes


def _walk(data: bytes, deep: bool = False, tail_ok: bool = True, chunk: int = 4 << 20) -> ScanSink:
    return walk_bytes(data, file="f.log", deep=deep, chunk=chunk, partial_tail_ok=tail_ok)


def test_header_fields_match_kafka_python_for_plain_compressed_and_transactional_batches() -> None:
    raw = [
        batch(0, [(b"k0", b"v0"), (None, b"v1"), (b"", None)], epoch=3),
        batch(3, [(b"k", b"x" * 500)] * 4, compression=1, epoch=4),
        batch(7, [(b"t", b"1"), (b"t", b"2")], transactional=True, producer_id=42, producer_epoch=7, epoch=4),
    ]
    rows = _walk(b"".join(raw)).rows()
    assert [r["base_offset"] for r in rows] == [0, 3, 7]
    assert [r["last_offset"] for r in rows] == [2, 6, 8]
    position = 0
    for r, data in zip(rows, raw, strict=True):
        oracle = DefaultRecordBatch(data)
        assert r["crc"] == oracle.crc
        assert r["partition_leader_epoch"] == oracle.leader_epoch
        assert r["attributes"] == oracle.attributes
        assert r["producer_id"] == oracle.producer_id and r["producer_epoch"] == oracle.producer_epoch
        assert r["record_count"] == oracle.records_count
        assert r["first_timestamp_ms"] == oracle.first_timestamp
        assert r["max_timestamp_ms"] == oracle.max_timestamp
        assert r["size_bytes"] == len(data)
        assert r["position"] == position
        assert r["crc_valid"] is None  # header-only: not checked
        position += len(data)
    assert [r["compression"] for r in rows] == ["none", "gzip", "none"]
    assert [r["is_transactional"] for r in rows] == [False, False, True]
    assert not any(r["is_control"] for r in rows)


def test_control_batches_decode_into_markers_and_keep_unknown_types() -> None:
    data = (
        control_batch(10, 1, producer_id=42, producer_epoch=7, coordinator_epoch=5)
        + control_batch(11, 0, producer_id=42, producer_epoch=8, coordinator_epoch=6)
        + control_batch(12, 7, producer_id=42, producer_epoch=9)
        + control_batch(13, 9, producer_id=42, producer_epoch=9)
    )
    sink = _walk(data, deep=True)
    rows = sink.rows()
    assert [r["control_type"] for r in rows] == [1, 0, 7, 9]
    assert [marker_name(r["control_type"]) for r in rows] == ["COMMIT", "ABORT", "PID_RESET", "UNKNOWN(9)"]
    assert [r["coordinator_epoch"] for r in rows] == [5, 6, None, None]  # only markers carry one
    assert all(r["is_control"] and r["crc_valid"] for r in rows)
    assert sink.issues == []


def test_deep_scan_catches_a_flipped_payload_byte_and_goes_on() -> None:
    first, second = batch(0, [(b"k", b"hello world")]), batch(1, [(b"k", b"next")])
    damaged = bytearray(first)
    damaged[-5] ^= 0x01
    sink = _walk(bytes(damaged) + second, deep=True)
    assert [r["crc_valid"] for r in sink.rows()] == [False, True]
    (issue,) = sink.issues
    assert (issue.kind, issue.severity, issue.position) == ("crc_mismatch", "error", 0)
    # Header-only scans do not read payloads, so they cannot see it: the reason deep exists.
    assert _walk(bytes(damaged) + second).issues == []


def test_truncated_tail_is_routine_on_the_active_segment_and_an_error_elsewhere() -> None:
    whole = batch(0, [(b"k", b"v")])
    cut = batch(1, [(b"k", b"v" * 100)])[:40]
    sink = _walk(whole + cut)
    assert [r["base_offset"] for r in sink.rows()] == [0]
    (issue,) = sink.issues
    assert (issue.kind, issue.severity, issue.position) == ("truncated", "info", len(whole))
    (inside,) = _walk(whole + cut, tail_ok=False).issues
    assert (inside.kind, inside.severity) == ("truncated_inside", "error")
    # Cut after the 61-byte header, where only the length says the batch is incomplete.
    long_cut = batch(1, [(b"k", b"v" * 100)])[:90]
    (issue,) = _walk(whole + long_cut).issues
    assert issue.kind == "truncated" and "cut after 90 bytes" in issue.detail


def test_garbage_stops_the_range_with_its_position() -> None:
    good = batch(0, [(b"k", b"v")])
    sink = _walk(good + b"\x13" * 200)
    assert len(sink) == 1
    (issue,) = sink.issues
    assert (issue.kind, issue.severity, issue.position) == ("garbage", "error", len(good))


def test_old_format_entries_are_reported_and_skipped() -> None:
    old = legacy_entry(0, magic=1)
    new = batch(1, [(b"k", b"v")])
    sink = _walk(old + new)
    assert [r["base_offset"] for r in sink.rows()] == [1]
    (issue,) = sink.issues
    # Not audited, so an error: CM-DATA-2 is never a pass over its bytes (was a warning).
    assert (issue.kind, issue.severity, issue.position) == ("old_format", "error", 0)


def test_zero_padding_after_the_last_batch_is_an_info_issue_over_its_bytes() -> None:
    first = batch(0, [(b"k", b"v")])
    sink = _walk(first + b"\x00" * 4096)
    assert len(sink) == 1
    (issue,) = sink.issues
    # Accounted for (every byte is in a row or an issue), and not a fault: info.
    assert (issue.kind, issue.severity, issue.position, issue.end_position) == (
        "zero_padding",
        "info",
        len(first),
        len(first) + 4096,
    )


def test_every_issue_at_a_byte_says_where_its_bytes_end() -> None:
    old = legacy_entry(0, magic=1)
    good = batch(1, [(b"k", b"v")])
    data = old + good + b"\xff" * 40
    sink = _walk(data)
    spans = sorted((i.position, i.end_position, i.kind) for i in sink.issues)
    # The old-format entry's own bytes, then the rest of the range after the garbage.
    assert spans == [(0, len(old), "old_format"), (len(old) + len(good), len(data), "garbage")]


def test_large_batches_are_walked_by_their_headers_only() -> None:
    data = b"".join(batch(i, [(b"k", bytes([i]) * 20_000)]) for i in range(20))
    read_bytes = []

    def reader(pos: int, n: int) -> bytes:
        read_bytes.append(n)
        return data[pos : pos + n]

    sink = ScanSink()
    walk(reader, 0, len(data), len(data), sink, topic="t", partition=0, file=None, chunk=1 << 16)
    assert [r["base_offset"] for r in sink.rows()] == list(range(20))
    assert sum(read_bytes) < len(data) // 4  # a header per batch, not the bodies
    assert all(r["position"] is None for r in sink.rows())  # no file: read over the wire


def test_chunk_boundaries_do_not_change_the_result() -> None:
    data = b"".join(batch(i * 3, [(b"k", b"v" * (i * 7))] * 3) for i in range(40))
    expect = _walk(data, deep=True).rows()
    for chunk in (61, 100, 977, 4096):
        assert _walk(data, deep=True, chunk=chunk).rows() == expect


def test_index_positions_stop_at_the_preallocated_zeros(tmp_path: Path) -> None:
    seg = tmp_path / "orders-0" / "00000000000000000000.log"
    seg.parent.mkdir()
    seg.write_bytes(b"")
    (tmp_path / "orders-0" / "00000000000000000000.index").write_bytes(
        index([(10, 4096), (20, 8200)], preallocated=100)
    )
    # Split points by binary search over the real entries, never the zero padding.
    assert index_split_positions(str(seg), 10_000, 4000) == [4096, 8200]
    assert index_split_positions(str(seg), 10_000, 5000) == [8200]
    assert index_split_positions(str(seg), 8_000, 5000) == []  # 8200 lies past the data
    assert index_split_positions(str(tmp_path / "nowhere" / "00000000000000000000.log"), 10, 1) is None


def test_plan_file_notes_empty_segments_and_missing_indexes(tmp_path: Path) -> None:
    seg = tmp_path / "orders-0" / "00000000000000000005.log"
    seg.parent.mkdir()
    seg.write_bytes(b"x" * 100)
    assert plan_file(str(seg), "orders", 0, 0, True, 1 << 20) == [
        (str(seg), "orders", 0, 0, 0, 0, True, "empty_segment")
    ]
    ((_, _, _, start, end, size, _, note),) = plan_file(str(seg), "orders", 0, 100, False, 1 << 20)
    assert (start, end, size, note) == (0, 100, 100, "missing_index")
    seg.with_suffix(".index").write_bytes(index([(3, 40), (6, 70)], preallocated=8))
    assert [(r[3], r[4], r[7]) for r in plan_file(str(seg), "orders", 0, 100, False, 30)] == [
        (0, 40, None),
        (40, 70, None),
        (70, 100, None),
    ]


@pytest.mark.parametrize(
    "uri", ["file:/data/orders-3/x.log", "file:///data/orders-3/x.log", "/data/orders-3/x.log"]
)
def test_partition_from_the_directory_name(uri: str) -> None:
    from audit.collect.batches.listing import partition_of
    from audit.collect.batches.segments import local_path

    assert partition_of(uri) == ("orders", 3)
    assert local_path(uri) == "/data/orders-3/x.log"


def test_an_old_format_entry_claiming_more_bytes_than_there_are_hides_nothing() -> None:
    """Four batches with an entry claiming 2^31-1 bytes after the second: the scan exited 0
    with two rows and a warning; now the claim is an error at its position."""
    import struct

    huge = bytearray(legacy_entry(2, magic=1))
    struct.pack_into(">i", huge, 8, 2**31 - 1)
    first_two = batch(0, [(b"k", b"v")]) + batch(1, [(b"k", b"v")])
    sink = _walk(first_two + bytes(huge) + batch(3, [(b"k", b"v")]) + batch(4, [(b"k", b"v")]))
    (issue,) = sink.issues
    assert (issue.kind, issue.severity, issue.position) == ("garbage", "error", len(first_two))
    assert "past the end of the data" in issue.detail


def test_offsets_no_batch_can_have_are_an_error_not_a_row() -> None:
    import struct

    raw = bytearray(batch(0, [(b"k", b"v"), (b"k", b"w")]))
    struct.pack_into(">q", raw, 0, 2**63 - 2)  # the base offset is outside the CRC
    sink = _walk(bytes(raw) + batch(2, [(b"k", b"v")]))
    assert [r["base_offset"] for r in sink.rows()] == [2]
    (issue,) = sink.issues
    assert (issue.kind, issue.severity) == ("bad_offsets", "error") and "64-bit offset" in issue.detail


def test_a_compressed_control_batch_is_not_decoded() -> None:
    """A gzip control batch was inflated without bound (1 MB took 3 GB) and recorded as ABORT."""
    sink = _walk(control_batch(0, 0, producer_id=5, producer_epoch=1, compression=1))
    (issue,) = sink.issues
    assert issue.kind == "bad_control_record" and "compressed" in issue.detail
    assert sink.rows()[0]["control_type"] is None
