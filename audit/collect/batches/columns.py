"""The header walk in columns: record batches of a mapped file straight into Arrow.

``batch_format.walk`` appends some 25 Python values per batch; at 16 KiB batches that
per-batch cost, not the bytes, is what a header scan spends its time on. Here a tight
loop only follows the length fields to find where the batches start, then numpy gathers
all their 61-byte headers at once and decodes every field as a column (one structured
view, big-endian), and Arrow takes the columns without a row ever being built. Deep mode
adds one CRC-32C call per batch over the mapped bytes, without a copy.

Only the well-formed run of batches is handled here: the loop stops at the first thing
that is not a complete v2 batch (old format, garbage, zero padding, a batch cut by the end
of the file), and the caller hands the rest of the range to ``batch_format.walk``, which
reports it exactly as before. Control batches are kept (they are ordinary batches to the
walk) and their one record is decoded afterwards, so a transactional topic stays on the
fast path.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
from crc32c import crc32c

from audit.collect.batches.format import (
    COMPRESSION,
    CONTROL,
    CRC_START,
    HEADER_SIZE,
    INT64_MAX,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    MIN_V2_LENGTH,
    TRANSACTIONAL,
    ScanSink,
    control_record,
)

BLOCK = 65_536  # batches per Arrow batch: bounds the gather's memory (about 4 MiB of headers)

# The 61-byte v2 header (DefaultRecordBase.HEADER_STRUCT) as a numpy record, big-endian.
HEADER_DTYPE = np.dtype(
    [
        ("base_offset", ">i8"),
        ("length", ">i4"),
        ("partition_leader_epoch", ">i4"),
        ("magic", "i1"),
        ("crc", ">u4"),
        ("attributes", ">i2"),
        ("last_offset_delta", ">i4"),
        ("first_timestamp_ms", ">i8"),
        ("max_timestamp_ms", ">i8"),
        ("producer_id", ">i8"),
        ("producer_epoch", ">i2"),
        ("base_sequence", ">i4"),
        ("record_count", ">i4"),
    ]
)
assert HEADER_DTYPE.itemsize == HEADER_SIZE
_FRAME = struct.Struct(">8xi4xb")  # length (i32 at 8) and magic (i8 at 16)
_COMPRESSION_NAMES = [*COMPRESSION, *(f"unknown({k})" for k in range(len(COMPRESSION), 8))]


def batch_positions(buf: Any, start: int, end: int, size: int, limit: int) -> tuple[list[int], int]:
    """Positions of the complete v2 batches that follow each other from ``start`` (at
    most ``limit`` of them, starting before ``end``), and where the run stopped."""
    unpack = _FRAME.unpack_from
    out: list[int] = []
    append = out.append
    pos = start
    last_header = size - HEADER_SIZE
    while pos < end and len(out) < limit:
        if pos > last_header:
            break
        length, magic = unpack(buf, pos)
        if magic != 2 or length < MIN_V2_LENGTH:
            break
        nxt = pos + LOG_OVERHEAD + length
        if nxt > size:
            break
        append(pos)
        pos = nxt
    return out, pos


def first_bad_offsets(data: np.ndarray, positions: list[int]) -> int | None:
    """The index of the first batch whose header offsets ``format.offsets_problem`` refuses
    (negative, or a last offset past 64 bits), or None; gathered from the 16 bytes that
    hold them, not the whole header."""
    if not positions:
        return None
    pos = np.asarray(positions, dtype=np.int64)

    def field(at: int, width: int, dtype: str) -> np.ndarray:
        raw = np.empty((len(pos), width), dtype=np.uint8)
        for k in range(width):
            raw[:, k] = data[pos + at + k]
        return raw.view(dtype).reshape(-1).astype(np.int64)

    base, last_delta, count = field(0, 8, ">i8"), field(23, 4, ">i4"), field(57, 4, ">i4")
    bad = (base < 0) | (last_delta < 0) | (count < 0) | (base > np.int64(INT64_MAX) - 1 - last_delta)
    hits = np.flatnonzero(bad)
    return int(hits[0]) if len(hits) else None


def _headers(data: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The headers at ``positions`` as native-endian columns of a record array."""
    raw = np.empty((len(positions), HEADER_SIZE), dtype=np.uint8)
    for k in range(HEADER_SIZE):  # 61 vectorised gathers: no (n, 61) index matrix
        raw[:, k] = data[positions + k]
    return raw.view(HEADER_DTYPE).reshape(-1)


def _column(values: np.ndarray, dtype: str) -> np.ndarray:
    return values.astype(dtype)


def to_record_batch(
    buf: Any,
    data: np.ndarray,
    positions: list[int],
    sink: ScanSink,
    schema: Any,
    *,
    topic: str,
    partition: int,
    file: str | None,
    deep: bool,
) -> Any:
    """One Arrow batch (``schema``: the batches table's) for the batches at ``positions``;
    CRC mismatches and undecodable control records go to ``sink`` as issues."""
    import pyarrow as pa

    n = len(positions)
    pos = np.asarray(positions, dtype=np.int64)
    h = _headers(data, pos)
    attrs = h["attributes"].astype(np.int32)
    base = h["base_offset"].astype(np.int64)
    length = h["length"].astype(np.int64)
    size_bytes = (length + LOG_OVERHEAD).astype(np.int32)
    is_control = (attrs & CONTROL) != 0
    crc = h["crc"].astype(np.int64)

    where = (topic, partition, file)
    crc_valid: Any = pa.nulls(n, pa.bool_())
    if deep:
        crc_valid = pa.array(_crc_valid(buf, positions, length, crc, base, sink, where))
    control = _control_fields(buf, positions, size_bytes, is_control, sink, where)
    ctype, cver, cep, decoded, cep_known = control

    compression = pa.array(_COMPRESSION_NAMES).take(pa.array(attrs & 7))
    timestamp_type = pa.array(["CreateTime", "LogAppendTime"]).take(
        pa.array(((attrs & LOG_APPEND_TIME) != 0).astype(np.int8))
    )
    columns = {
        "topic": pa.repeat(pa.scalar(topic, pa.string()), n),
        "partition": pa.repeat(pa.scalar(partition, pa.int32()), n),
        "base_offset": pa.array(base),
        "last_offset": pa.array(base + h["last_offset_delta"].astype(np.int64)),
        "partition_leader_epoch": pa.array(_column(h["partition_leader_epoch"], "int32")),
        "magic": pa.array(_column(h["magic"], "int32")),
        "crc": pa.array(crc),
        "attributes": pa.array(attrs),
        "compression": compression,
        "timestamp_type": timestamp_type,
        "is_transactional": pa.array((attrs & TRANSACTIONAL) != 0),
        "is_control": pa.array(is_control),
        "producer_id": pa.array(_column(h["producer_id"], "int64")),
        "producer_epoch": pa.array(_column(h["producer_epoch"], "int32")),
        "base_sequence": pa.array(_column(h["base_sequence"], "int32")),
        "record_count": pa.array(_column(h["record_count"], "int32")),
        "size_bytes": pa.array(size_bytes),
        "first_timestamp_ms": pa.array(_column(h["first_timestamp_ms"], "int64")),
        "max_timestamp_ms": pa.array(_column(h["max_timestamp_ms"], "int64")),
        "crc_valid": crc_valid,
        "control_type": pa.array(ctype, mask=~decoded),
        "control_version": pa.array(cver, mask=~decoded),
        "coordinator_epoch": pa.array(cep, mask=~cep_known),
        "file": pa.repeat(pa.scalar(file, pa.string()), n),
        "position": pa.array(pos) if file is not None else pa.nulls(n, pa.int64()),
    }
    return pa.RecordBatch.from_arrays([columns[f.name].cast(f.type) for f in schema], schema=schema)


def _crc_valid(
    buf: Any,
    positions: list[int],
    length: np.ndarray,
    crc: np.ndarray,
    base: np.ndarray,
    sink: ScanSink,
    where: tuple[str, int, str | None],
) -> np.ndarray:
    """Deep scans: the CRC-32C recomputed over each batch's bytes against the stored one;
    a mismatch is an issue at the batch's position."""
    view = memoryview(buf)
    try:
        computed = np.fromiter(
            (
                crc32c(view[p + CRC_START : p + LOG_OVERHEAD + ln])
                for p, ln in zip(positions, length.tolist(), strict=True)
            ),
            dtype=np.int64,
            count=len(positions),
        )
    finally:
        view.release()
    valid: np.ndarray = computed == crc
    for i in np.flatnonzero(~valid).tolist():
        sink.issue(
            "crc_mismatch",
            f"stored CRC {int(crc[i])} does not match the batch bytes (base offset {int(base[i])})",
            *where,
            positions[i],
            positions[i] + LOG_OVERHEAD + int(length[i]),
        )
    return valid


def _control_fields(
    buf: Any,
    positions: list[int],
    size_bytes: np.ndarray,
    is_control: np.ndarray,
    sink: ScanSink,
    where: tuple[str, int, str | None],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The control record of each control batch: type, version, coordinator epoch, and
    which of them decoded (an undecodable one is an issue at its position)."""
    n = len(positions)
    ctype = np.zeros(n, dtype=np.int32)
    cver = np.zeros(n, dtype=np.int32)
    cep = np.zeros(n, dtype=np.int32)
    decoded = np.zeros(n, dtype=bool)
    cep_known = np.zeros(n, dtype=bool)
    for i in np.flatnonzero(is_control).tolist():
        p = positions[i]
        try:
            t, v, e = control_record(bytes(buf[p : p + int(size_bytes[i])]))
        except ValueError as exc:
            sink.issue("bad_control_record", str(exc), *where, p, p + int(size_bytes[i]))
            continue
        ctype[i], cver[i], decoded[i] = t, v, True
        if e is not None:
            cep[i], cep_known[i] = e, True
    return ctype, cver, cep, decoded, cep_known


def walk_columns(
    buf: Any,
    start: int,
    end: int,
    size: int,
    sink: ScanSink,
    schema: Any,
    *,
    topic: str,
    partition: int,
    file: str | None,
    deep: bool = False,
) -> tuple[list[Any], int]:
    """Arrow batches for the run of well-formed batches from ``start``, and the position
    where the run stopped: ``end`` or later when the range was walked to its end, else the
    first position ``batch_format.walk`` must take over at."""
    data = np.frombuffer(buf, dtype=np.uint8)
    out: list[Any] = []
    pos = start
    try:
        while pos < end:
            positions, stop = batch_positions(buf, pos, end, size, BLOCK)
            bad = first_bad_offsets(data, positions)
            if bad is not None:  # the row walker reports it, from there
                positions, stop = positions[:bad], positions[bad]
            if positions:
                out.append(
                    to_record_batch(
                        buf,
                        data,
                        positions,
                        sink,
                        schema,
                        topic=topic,
                        partition=partition,
                        file=file,
                        deep=deep,
                    )
                )
            if stop == pos or len(positions) < BLOCK or bad is not None:
                return out, stop
            pos = stop
        return out, pos
    finally:
        del data  # the caller unmaps the file: no array may still point into it
