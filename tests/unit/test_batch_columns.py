"""The columnar header walk must give exactly what the row walker gives, damage included.

``segments.walk_range`` runs the columnar walk (``batch_columns``) over the well-formed
run of a mapped file and hands the rest to ``batch_format.walk``; the row walker alone is
the reference (it has its own field-by-field tests against kafka-python in
test_batch_format.py).
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from crc32c import crc32c

from audit.collect.batches import columns as batch_columns
from audit.collect.batches.differential import row_walk
from audit.collect.batches.format import ScanSink
from audit.collect.batches.scan import scan_schema_arrow
from audit.collect.batches.segments import RangeFile, walk_range
from tests.batches import ATTRIBUTES_AT, CRC_AT, batch, control_batch, legacy_entry


def _two_record_control_batch(offset: int) -> bytes:
    raw = bytearray(
        batch(offset, [(b"\x00\x00\x00\x01", b"x"), (b"y", b"z")], transactional=True, producer_id=9)
    )
    attrs = struct.unpack_from(">h", raw, ATTRIBUTES_AT)[0] | 0x20
    struct.pack_into(">h", raw, ATTRIBUTES_AT, attrs)
    struct.pack_into(">I", raw, CRC_AT, crc32c(bytes(raw[ATTRIBUTES_AT:])))
    return bytes(raw)


def _flipped(data: bytes) -> bytes:
    damaged = bytearray(data)
    damaged[-3] ^= 0x40
    return bytes(damaged)


def _short_length(data: bytes) -> bytes:
    """A v2 header whose length field is below the 49 bytes every v2 batch has."""
    raw = bytearray(data)
    struct.pack_into(">i", raw, 8, 30)
    return bytes(raw)


def _with_offsets(data: bytes, base: int | None = None, last_delta: int | None = None) -> bytes:
    """A batch whose base offset or last offset delta were rewritten under a valid CRC (the
    CRC covers the delta, not the base): crafted, not damaged."""
    raw = bytearray(data)
    if base is not None:
        struct.pack_into(">q", raw, 0, base)
    if last_delta is not None:
        struct.pack_into(">i", raw, 23, last_delta)
        struct.pack_into(">I", raw, CRC_AT, crc32c(bytes(raw[ATTRIBUTES_AT:])))
    return bytes(raw)


def _huge_old_format_entry() -> bytes:
    """An old-format entry claiming 2^31-1 bytes: it hid every batch after it."""
    raw = bytearray(legacy_entry(3, magic=1))
    struct.pack_into(">i", raw, 8, 2**31 - 1)
    return bytes(raw)


def _magic_flipped(data: bytes, magic: int) -> bytes:
    raw = bytearray(data)
    raw[16] = magic  # the CRC does not cover the magic byte
    return bytes(raw)


def _sorted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: r["position"])


def _reference(data: bytes, start: int, deep: bool, tail_ok: bool) -> tuple[list[dict[str, Any]], list[Any]]:
    sink = row_walk(data, deep, tail_ok, start, ("orders", 3, "seg.log"))
    return _sorted(sink.rows()), sorted(sink.issues, key=lambda i: (i.position, i.kind))


def _columnar(
    path: Path, start: int, deep: bool, tail_ok: bool
) -> tuple[list[dict[str, Any]], list[Any], int]:
    sink = ScanSink()
    with RangeFile(str(path)) as f:
        arrow = walk_range(
            f,
            start,
            f.size,
            sink,
            scan_schema_arrow(),
            topic="orders",
            partition=3,
            file="seg.log",
            deep=deep,
            partial_tail_ok=tail_ok,
        )
    rows = pa.Table.from_batches(arrow, schema=scan_schema_arrow()).to_pylist() if arrow else []
    columnar_rows = len(rows)
    rows += sink.rows()
    return _sorted(rows), sorted(sink.issues, key=lambda i: (i.position, i.kind)), columnar_rows


PLAIN = [
    batch(0, [(b"k0", b"v0"), (None, b"v1"), (b"", None)], epoch=3),
    batch(3, [(b"k", b"x" * 500)] * 4, compression=1, epoch=4),
    batch(7, [(b"t", b"1"), (b"t", b"2")], transactional=True, producer_id=42, producer_epoch=7, epoch=4),
    control_batch(9, 1, producer_id=42, producer_epoch=7, coordinator_epoch=5, epoch=4),
    control_batch(10, 7, producer_id=42, producer_epoch=8, epoch=5),
    control_batch(11, 9, producer_id=42, producer_epoch=8, epoch=5),
    batch(12, [(b"k", b"v" * 3000)] * 3, compression=1, epoch=5),
]

CASES = {
    "plain, compressed, transactional and control batches": b"".join(PLAIN),
    "a flipped payload byte": _flipped(PLAIN[0]) + b"".join(PLAIN[1:]),
    "an undecodable control batch": PLAIN[0] + _two_record_control_batch(3) + PLAIN[1],
    "a cut tail": b"".join(PLAIN) + batch(20, [(b"k", b"v" * 100)])[:90],
    "a cut header": b"".join(PLAIN) + batch(20, [(b"k", b"v")])[:40],
    "garbage in the middle": PLAIN[0] + b"\x13" * 200 + PLAIN[1],
    "an old-format entry first": legacy_entry(0, magic=1) + b"".join(PLAIN[1:]),
    "an old-format entry between batches": PLAIN[0] + legacy_entry(3, magic=0) + b"".join(PLAIN[1:]),
    "a v2 header with a length below the minimum": PLAIN[0] + _short_length(PLAIN[1]) + PLAIN[2],
    "zero padding": b"".join(PLAIN) + b"\x00" * 4096,
    "nothing but garbage": b"\xff" * 100,
    "a base offset near 2^63 (its last offset overflows)": PLAIN[0]
    + _with_offsets(PLAIN[2], base=2**63 - 2)
    + PLAIN[3],
    "a negative base offset": PLAIN[0] + _with_offsets(PLAIN[1], base=-7) + PLAIN[2],
    "a negative last offset delta": PLAIN[0] + _with_offsets(PLAIN[1], last_delta=-3) + PLAIN[2],
    "an old-format entry claiming 2^31-1 bytes": PLAIN[0]
    + PLAIN[1]
    + _huge_old_format_entry()
    + b"".join(PLAIN[2:]),
    "a v2 batch whose magic byte was flipped to 1": PLAIN[0] + _magic_flipped(PLAIN[1], 1) + PLAIN[2],
    "a compressed control batch": PLAIN[0]
    + control_batch(3, 0, producer_id=42, producer_epoch=1, compression=1)
    + PLAIN[1],
}


@pytest.mark.parametrize("deep", [False, True], ids=["headers", "deep"])
@pytest.mark.parametrize("tail_ok", [True, False], ids=["last-segment", "older-segment"])
@pytest.mark.parametrize("case", list(CASES))
def test_the_columnar_walk_equals_the_row_walk(case: str, deep: bool, tail_ok: bool, tmp_path: Path) -> None:
    data = CASES[case]
    path = tmp_path / "seg.log"
    path.write_bytes(data)
    rows, issues, _ = _columnar(path, 0, deep, tail_ok)
    assert (rows, issues) == _reference(data, 0, deep, tail_ok)


def test_a_well_formed_file_stays_on_the_columnar_path_and_damage_is_found_in_it(tmp_path: Path) -> None:
    path = tmp_path / "seg.log"
    path.write_bytes(_flipped(PLAIN[0]) + b"".join(PLAIN[1:]) + _two_record_control_batch(30))
    rows, issues, columnar = _columnar(path, 0, deep=True, tail_ok=True)
    assert columnar == len(PLAIN) + 1  # no row fell back to the row walker
    assert [i.kind for i in issues] == ["crc_mismatch", "bad_control_record"]
    assert [r["crc_valid"] for r in rows] == [False, *[True] * len(PLAIN)]
    assert [r["control_type"] for r in rows[3:]] == [1, 7, 9, None, None]
    assert [r["coordinator_epoch"] for r in rows[3:6]] == [5, None, None]


def test_a_range_starting_at_a_split_and_blocks_of_any_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = b"".join(batch(i * 2, [(b"k", b"v" * i)] * 2, epoch=i) for i in range(25))
    path = tmp_path / "seg.log"
    path.write_bytes(data)
    split = sum(len(batch(i * 2, [(b"k", b"v" * i)] * 2, epoch=i)) for i in range(10))
    for block in (1, 3, 7, 65_536):
        monkeypatch.setattr(batch_columns, "BLOCK", block)
        rows, issues, columnar = _columnar(path, split, deep=True, tail_ok=False)
        assert (rows, issues) == _reference(data, split, deep=True, tail_ok=False)
        assert columnar == 15 and [r["base_offset"] for r in rows] == list(range(20, 50, 2))
