"""Hand-made record batches for unit tests, built with kafka-python's batch builder.

The broker is the only writer of control batches and of base offsets and leader epochs;
these helpers set those fields afterwards the way a broker would (the leader epoch and the
base offset lie outside the CRC; the control attribute lies inside it, so the CRC is
recomputed).
"""

from __future__ import annotations

import gzip
import struct
from collections.abc import Sequence
from typing import Any

from crc32c import crc32c
from kafka.record.default_records import DefaultRecordBatchBuilder

from audit.collect.batches.format import ScanSink, walk

ATTRIBUTES_AT = 21
CRC_AT = 17
RECORDS_AT = 61


Record = tuple[bytes | None, bytes | None] | tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def batch(
    base_offset: int,
    records: Sequence[Record],
    *,
    epoch: int = 0,
    compression: int = 0,
    transactional: bool = False,
    producer_id: int = -1,
    producer_epoch: int = -1,
    timestamp: int = 1_700_000_000_000,
    deltas: list[int] | None = None,
    log_append_time: bool = False,
) -> bytes:
    """A v2 batch of ``records``: (key, value) or (key, value, headers); ``deltas`` their
    offset deltas (gaps as compaction leaves them; default 0, 1, 2, ...); record i at
    ``timestamp + i``, or the broker's append time (the batch's max timestamp) with
    ``log_append_time``."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        # gzip is applied below, by hand: kafka-python's stamps the current second into the
        # gzip header, so the same batch built twice a second apart would differ.
        compression_type=0 if compression == 1 else compression,
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=0 if producer_id >= 0 else -1,
        batch_size=1 << 20,
    )
    for i, (key, value, *rest) in enumerate(records):
        delta = i if deltas is None else deltas[i]
        builder.append(delta, timestamp=timestamp + i, key=key, value=value, headers=rest[0] if rest else [])
    buf = bytearray(builder.build())
    if log_append_time:
        attrs = struct.unpack_from(">h", buf, ATTRIBUTES_AT)[0] | 0x08
        struct.pack_into(">h", buf, ATTRIBUTES_AT, attrs)
        struct.pack_into(">I", buf, CRC_AT, crc32c(bytes(buf[ATTRIBUTES_AT:])))
    if compression == 1:
        buf = _gzipped(buf)
    struct.pack_into(">q", buf, 0, base_offset)
    struct.pack_into(">i", buf, 12, epoch)
    return bytes(buf)


def _gzipped(raw: bytearray) -> bytearray:
    """The batch with its records gzipped (header mtime 0: the same bytes every time), its
    length, compression attribute and CRC set to match."""
    out = raw[:RECORDS_AT] + bytearray(gzip.compress(bytes(raw[RECORDS_AT:]), mtime=0))
    struct.pack_into(">i", out, 8, len(out) - 12)
    attrs = (struct.unpack_from(">h", out, ATTRIBUTES_AT)[0] & ~7) | 1
    struct.pack_into(">h", out, ATTRIBUTES_AT, attrs)
    struct.pack_into(">I", out, CRC_AT, crc32c(bytes(out[ATTRIBUTES_AT:])))
    return out


def control_batch(
    offset: int,
    control_type: int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int = 5,
    epoch: int = 0,
    compression: int = 0,
) -> bytes:
    """A transaction marker as the broker writes it: one control record, key (version 0,
    type), value (version 0, coordinator epoch); ``compression`` makes one no broker writes."""
    raw = bytearray(
        batch(
            offset,
            [(struct.pack(">hh", 0, control_type), struct.pack(">hi", 0, coordinator_epoch))],
            epoch=epoch,
            transactional=True,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
        )
    )
    attrs = struct.unpack_from(">h", raw, ATTRIBUTES_AT)[0] | 0x20
    struct.pack_into(">h", raw, ATTRIBUTES_AT, attrs)
    struct.pack_into(">I", raw, CRC_AT, crc32c(bytes(raw[ATTRIBUTES_AT:])))
    if compression == 1:  # kafka-python keeps a batch this small uncompressed
        raw = _gzipped(raw)
    return bytes(raw)


def legacy_entry(offset: int, magic: int = 1, payload: bytes = b"old") -> bytes:
    """A pre-0.11 message set entry (magic 0/1): offset, size, crc, magic, attributes, ..."""
    body = struct.pack(">IbB", 0, magic, 0) + (b"\x00" * 8 if magic == 1 else b"") + struct.pack(">i", -1)
    body += struct.pack(">i", len(payload)) + payload
    return struct.pack(">qi", offset, len(body)) + body


def index(entries: list[tuple[int, int]], preallocated: int = 0) -> bytes:
    """An offset index: (relative offset, position) entries, then zero padding."""
    return b"".join(struct.pack(">ii", o, p) for o, p in entries) + b"\x00" * (8 * preallocated)


def walk_bytes(
    data: bytes, *, topic: str = "t", partition: int = 0, file: str | None = None, **options: Any
) -> ScanSink:
    """The batches of a whole segment held in memory, walked as the scan walks a file
    (``options``: ``deep``, ``chunk``, ``partial_tail_ok``)."""
    sink = ScanSink()
    walk(
        lambda pos, n: data[pos : pos + n],
        0,
        len(data),
        len(data),
        sink,
        topic=topic,
        partition=partition,
        file=file,
        **options,
    )
    return sink
