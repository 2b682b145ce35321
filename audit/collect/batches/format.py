"""Kafka record batches (magic v2) read from raw bytes: log segment files and Fetch responses.

A log segment and the records of a Fetch response have the same layout, a sequence of
record batches back to back, so one walker serves both collectors (``segments.py`` and
``wire.py``). It reads only each batch's 61-byte header (layout: kafka-python's
``DefaultRecordBase.HEADER_STRUCT``) and never decompresses, so its cost is one
``unpack`` per batch whatever the batch holds. Deep mode also reads the bytes the CRC
covers and checks CRC-32C with the C-accelerated ``crc32c`` package. Control batches are
small and uncompressed; their one record is decoded by kafka-python's ``DefaultRecordBatch``
(a ``ControlRecord`` with version and type) rather than by hand.

Damage never stops a scan: a truncated batch, bytes that are no batch, an old-format
(magic 0/1) entry, a CRC that does not match are each reported as a ``ScanIssue`` with
the file (None for a Fetch response) and the byte position where it begins, and the walker
goes on with what it can still trust (the next batch when the length field is sound, else
the next file). Whole-file issues (an empty segment, a missing index) come from planning,
with no position (``segments.py``); a failed fetch puts its Kafka offset there
(``wire.py``).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from crc32c import crc32c
from kafka.record.default_records import DefaultRecordBase, DefaultRecordBatch

HEADER = DefaultRecordBase.HEADER_STRUCT  # baseOffset .. recordCount, 61 bytes
HEADER_SIZE = HEADER.size
LOG_OVERHEAD = 12  # baseOffset i64 + length i32: ``length`` counts the bytes after these
MAGIC_POS = 16  # the magic byte sits here in every format (v0, v1 and v2)
CRC_START = DefaultRecordBase.ATTRIBUTES_OFFSET  # CRC-32C covers attributes to the end
MIN_V2_LENGTH = HEADER_SIZE - LOG_OVERHEAD

COMPRESSION = ("none", "gzip", "snappy", "lz4", "zstd")
TRANSACTIONAL = DefaultRecordBase.TRANSACTIONAL_MASK
CONTROL = DefaultRecordBase.CONTROL_MASK
LOG_APPEND_TIME = DefaultRecordBase.TIMESTAMP_TYPE_MASK

# Control record types (the key's second i16). 7 is the KIP-1279 prototype's pid-reset
# record; any other value keeps its number.
CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 7: "PID_RESET"}
CLOSING_TYPES = (0, 1)  # the markers that end a transaction: ABORT and COMMIT
_END_TXN_VALUE = struct.Struct(">hi")  # version i16, coordinatorEpoch i32

# Issue kinds and how much they weigh: "error" is data that cannot be trusted, "warn" is
# something a person should know (an old format, a missing index), "info" is routine
# (a segment still being written ends in a partial batch; an empty segment; a replica
# directory Kafka set aside, not read). A segment outside any partition directory is an
# error: its batches cannot be placed, so nothing vouches for them.
ISSUE_SEVERITY = {
    "garbage": "error",
    "crc_mismatch": "error",
    "bad_control_record": "error",
    "unreadable": "error",
    "fetch_error": "error",
    "truncated": "info",
    "truncated_inside": "error",
    # Not audited: its bytes are not vouched for (Kafka 4 no longer reads v0/v1), and a v2
    # batch whose magic byte was damaged (the CRC does not cover it) reads as one.
    "old_format": "error",
    # A header whose offsets cannot be (negative, or past a 64-bit offset): not a batch row.
    "bad_offsets": "error",
    # A batch whose offsets do not follow the previous batch's in the partition's files.
    "offsets_backwards": "error",
    "missing_index": "warn",
    "empty_segment": "info",
    # Zeros after the last batch, to the end of the range (a preallocated segment).
    "zero_padding": "info",
    "not_a_partition": "error",
    "set_aside_replica": "info",
}

# Batch columns, in the order of ``audit.schemas.SNAPSHOT_TABLES["batches"]``.
BATCH_FIELDS = (
    "topic",
    "partition",
    "base_offset",
    "last_offset",
    "partition_leader_epoch",
    "magic",
    "crc",
    "attributes",
    "compression",
    "timestamp_type",
    "is_transactional",
    "is_control",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "record_count",
    "size_bytes",
    "first_timestamp_ms",
    "max_timestamp_ms",
    "crc_valid",
    "control_type",
    "control_version",
    "coordinator_epoch",
    "file",
    "position",
)


@dataclass(frozen=True)
class ScanIssue:
    topic: str | None
    partition: int | None
    file: str | None
    position: int | None
    kind: str
    severity: str
    detail: str
    # The issue covers bytes [position, end_position): with the batch rows, every byte of
    # a segment is accounted for. None when the issue is not about a byte range.
    end_position: int | None = None


class ScanSink:
    """Columnar output of a scan: one list per column, cheap to append to and to hand to
    Arrow in one piece (a Spark task emits thousands of batches a millisecond)."""

    def __init__(self) -> None:
        self.columns: dict[str, list[Any]] = {name: [] for name in BATCH_FIELDS}
        self.issues: list[ScanIssue] = []

    def __len__(self) -> int:
        return len(self.columns["base_offset"])

    def issue(
        self,
        kind: str,
        detail: str,
        topic: str | None,
        partition: int | None,
        file: str | None,
        position: int | None,
        end: int | None = None,
    ) -> None:
        self.issues.append(
            ScanIssue(topic, partition, file, position, kind, ISSUE_SEVERITY[kind], detail, end)
        )

    def clear(self) -> None:
        for values in self.columns.values():
            values.clear()
        self.issues.clear()

    def rows(self) -> list[dict[str, Any]]:
        """The batches as dicts (tests and small tools; Spark tasks use ``columns``)."""
        names = list(self.columns)
        return [dict(zip(names, values, strict=True)) for values in zip(*self.columns.values(), strict=True)]


INT64_MAX = 2**63 - 1


def offsets_problem(base: int, last_delta: int, count: int) -> str | None:
    """Why a v2 header's offsets cannot be a batch's (its CRC does not cover the base
    offset, and a crafted one may carry anything), or None when they can."""
    if base < 0:
        return f"negative base offset {base}"
    if last_delta < 0 or count < 0:
        return f"negative last offset delta {last_delta} or record count {count}"
    if base > INT64_MAX - 1 - last_delta:  # the batch's end (last + 1) is an offset too
        return f"last offset {base} + {last_delta} leaves no 64-bit offset after it"
    return None


def control_record(batch: bytes | memoryview) -> tuple[int, int, int | None]:
    """(type, version, coordinator epoch or None) of a control batch's one record.

    Raises ValueError when the batch does not hold a decodable control record. Kafka never
    compresses a control batch: one that says it is compressed is not decoded (a crafted
    one would inflate without bound)."""
    codec = int.from_bytes(bytes(batch[CRC_START : CRC_START + 2]), "big") & 7
    if codec:
        name = COMPRESSION[codec] if codec < len(COMPRESSION) else f"codec {codec}"
        raise ValueError(f"control batch is compressed ({name}): not decoded")
    try:
        records = list(DefaultRecordBatch(batch))
    except Exception as exc:  # kafka-python raises CorruptRecordError, struct.error, ...
        raise ValueError(f"control batch does not decode: {exc}") from exc
    if len(records) != 1:
        raise ValueError(f"control batch holds {len(records)} records, expected 1")
    rec = records[0]
    epoch = None
    value = rec.value
    if rec.type in (0, 1) and value is not None and len(value) >= _END_TXN_VALUE.size:
        epoch = _END_TXN_VALUE.unpack_from(value)[1]
    return int(rec.type), int(rec.version), epoch


def marker_name(control_type: int | None) -> str | None:
    if control_type is None:
        return None
    return CONTROL_TYPES.get(control_type, f"UNKNOWN({control_type})")


Reader = Callable[[int, int], "bytes | memoryview"]  # (position, size) -> at most size bytes


def walk(
    read: Reader,
    start: int,
    end: int,
    size: int,
    sink: ScanSink,
    *,
    topic: str | None,
    partition: int | None,
    file: str | None,
    deep: bool = False,
    chunk: int = 4 << 20,
    partial_tail_ok: bool = True,
) -> int:
    """Append the batches that start in [start, end) to ``sink``; return where it stopped.

    ``end`` is a batch boundary (a file's size, or the next split's first batch) or, for a
    Fetch response, the buffer's length; ``size`` is how much data exists (the file's
    size). When a header says its batch goes past ``size``, the walk stops with a
    ``truncated`` issue: routine at the tail of a segment being written or of a Fetch
    response (``partial_tail_ok``), an error anywhere else (``truncated_inside``).

    Reads are sized to what is needed: deep mode reads the data in ``chunk``-sized
    pieces; header mode reads big pieces while batches are small and only the 61 header
    bytes once they are large, so a scan of big batches touches a fraction of the file.

    One long function, on purpose: it is a loop over a read buffer whose state (buffer,
    its file position, the read mode, where the walk stands) every branch updates; split
    into helpers, each would take and return that state, and the reader would lose the
    one place where a batch boundary, a short read and a damaged header are told apart.
    The columnar walk (``columns.walk_columns``) takes the common case; this one handles
    the rest and is the reference the columnar one is tested against.
    """
    pos = start
    buf: bytes | memoryview = b""
    buf_pos = start
    header_only_reads = False
    unpack = HEADER.unpack_from
    cols = sink.columns
    c_topic, c_partition, c_base, c_last = (
        cols["topic"],
        cols["partition"],
        cols["base_offset"],
        cols["last_offset"],
    )
    c_epoch, c_magic, c_crc, c_attr = (
        cols["partition_leader_epoch"],
        cols["magic"],
        cols["crc"],
        cols["attributes"],
    )
    c_comp, c_tst, c_txn, c_ctl = (
        cols["compression"],
        cols["timestamp_type"],
        cols["is_transactional"],
        cols["is_control"],
    )
    c_pid, c_pep, c_seq, c_count = (
        cols["producer_id"],
        cols["producer_epoch"],
        cols["base_sequence"],
        cols["record_count"],
    )
    c_size, c_first, c_max, c_valid = (
        cols["size_bytes"],
        cols["first_timestamp_ms"],
        cols["max_timestamp_ms"],
        cols["crc_valid"],
    )
    c_ctype, c_cver, c_cep, c_file, c_posn = (
        cols["control_type"],
        cols["control_version"],
        cols["coordinator_epoch"],
        cols["file"],
        cols["position"],
    )
    while pos < end:
        off = pos - buf_pos
        if off + HEADER_SIZE > len(buf):
            want = HEADER_SIZE if header_only_reads and not deep else chunk
            buf = read(pos, max(HEADER_SIZE, want))
            buf_pos, off = pos, 0
        if len(buf) - off < MAGIC_POS + 1:
            _truncated(
                sink,
                partial_tail_ok,
                "the data ends inside a batch's header",
                topic,
                partition,
                file,
                pos,
                end,
            )
            return pos
        length = int.from_bytes(buf[off + 8 : off + 12], "big", signed=True)
        magic = buf[off + MAGIC_POS]
        if length == 0 and not any(buf[off : off + LOG_OVERHEAD]):
            # Zero padding after the last batch (a preallocated segment): no data, provided
            # it is zeros to the end; data after zeros is not skipped in silence.
            data_at = _first_nonzero(read, pos, end)
            if data_at is not None:
                sink.issue(
                    "garbage",
                    f"zero bytes from {pos} then data at {data_at}: the rest of this range is skipped",
                    topic,
                    partition,
                    file,
                    pos,
                    end,
                )
            elif pos < end:
                sink.issue(
                    "zero_padding",
                    f"{end - pos} zero bytes after the last batch (a preallocated segment)",
                    topic,
                    partition,
                    file,
                    pos,
                    end,
                )
            return pos
        if magic != 2:
            if magic in (0, 1) and length >= 14 and pos + length + LOG_OVERHEAD <= size:
                sink.issue(
                    "old_format",
                    f"message format v{magic} (pre-0.11) entry of {length + LOG_OVERHEAD} bytes: not audited",
                    topic,
                    partition,
                    file,
                    pos,
                    pos + length + LOG_OVERHEAD,
                )
                pos += length + LOG_OVERHEAD
                continue
            if magic in (0, 1) and length >= 14:
                # An entry claiming more bytes than there are would hide every batch after it.
                sink.issue(
                    "garbage",
                    f"message format v{magic} entry claims {length + LOG_OVERHEAD} bytes, past the end of "
                    f"the data ({size - pos} left): the rest of this range is skipped",
                    topic,
                    partition,
                    file,
                    pos,
                    end,
                )
                return pos
            sink.issue(
                "garbage",
                f"no record batch here (magic {magic}, length {length}): the rest of this range is skipped",
                topic,
                partition,
                file,
                pos,
                end,
            )
            return pos
        if length < MIN_V2_LENGTH:
            sink.issue(
                "garbage", f"batch length {length} is below the v2 minimum", topic, partition, file, pos, end
            )
            return pos
        if len(buf) - off < HEADER_SIZE:
            _truncated(
                sink,
                partial_tail_ok,
                "the data ends inside a batch's header",
                topic,
                partition,
                file,
                pos,
                end,
            )
            return pos
        (base, _, epoch, _, crc, attrs, last_delta, first_ts, max_ts, pid, pepoch, seq, count) = unpack(
            buf, off
        )
        total = length + LOG_OVERHEAD
        why = offsets_problem(base, last_delta, count)
        if why is not None and pos + total <= size:
            sink.issue("bad_offsets", f"{why} (base offset {base})", topic, partition, file, pos, pos + total)
            pos += total
            continue
        if pos + total > size:
            # A batch still being written ends the data; one followed by a whole batch, or
            # by another range of the file, does not: its length field is damaged, and the
            # batches after it are read, not hidden behind a "tail".
            resume = next_whole_batch(read, pos + HEADER_SIZE, end, size)
            if resume is None and end >= size:
                _truncated(
                    sink,
                    partial_tail_ok,
                    f"batch of {total} bytes at offset {base} is cut after {size - pos} bytes",
                    topic,
                    partition,
                    file,
                    pos,
                    end,
                )
                return pos
            follows = f"a whole batch follows at byte {resume}" if resume is not None else "the file goes on"
            sink.issue(
                "truncated_inside",
                f"batch at offset {base} claims {total} bytes, past the end of the data ({size - pos} left), "
                f"yet {follows}: not a batch being written, its bytes skipped",
                topic,
                partition,
                file,
                pos,
                end if resume is None else resume,
            )
            if resume is None:
                return pos
            pos = resume
            continue
        body: bytes | memoryview | None = None
        is_control = bool(attrs & CONTROL)
        if deep or is_control:
            if off + total <= len(buf):
                body = memoryview(buf)[off : off + total]
            else:
                got = read(pos, total)
                if len(got) < total:
                    _truncated(
                        sink,
                        partial_tail_ok,
                        f"batch of {total} bytes at offset {base} is cut after {len(got)} bytes",
                        topic,
                        partition,
                        file,
                        pos,
                        end,
                    )
                    return pos
                body = got
                buf, buf_pos, off = b"", pos + total, 0
        valid = None
        if deep:
            assert body is not None
            valid = crc32c(body[CRC_START:]) == crc
            if not valid:
                sink.issue(
                    "crc_mismatch",
                    f"stored CRC {crc} does not match the batch bytes (base offset {base})",
                    topic,
                    partition,
                    file,
                    pos,
                    pos + total,
                )
        ctype = cver = cep = None
        if is_control:
            assert body is not None
            try:
                ctype, cver, cep = control_record(bytes(body))
            except ValueError as exc:
                sink.issue("bad_control_record", str(exc), topic, partition, file, pos, pos + total)
        c_topic.append(topic)
        c_partition.append(partition)
        c_base.append(base)
        c_last.append(base + last_delta)
        c_epoch.append(epoch)
        c_magic.append(magic)
        c_crc.append(crc)
        c_attr.append(attrs)
        c_comp.append(COMPRESSION[attrs & 7] if attrs & 7 < len(COMPRESSION) else f"unknown({attrs & 7})")
        c_tst.append("LogAppendTime" if attrs & LOG_APPEND_TIME else "CreateTime")
        c_txn.append(bool(attrs & TRANSACTIONAL))
        c_ctl.append(is_control)
        c_pid.append(pid)
        c_pep.append(pepoch)
        c_seq.append(seq)
        c_count.append(count)
        c_size.append(total)
        c_first.append(first_ts)
        c_max.append(max_ts)
        c_valid.append(valid)
        c_ctype.append(ctype)
        c_cver.append(cver)
        c_cep.append(cep)
        c_file.append(file)
        c_posn.append(pos if file is not None else None)
        pos += total
        # Large batches: from now on read only headers (seek past the bodies).
        header_only_reads = total > 8192
    return pos


def next_whole_batch(read: Reader, lo: int, hi: int, size: int, piece: int = 4 << 20) -> int | None:
    """Where the first whole v2 batch starting in [lo, hi) begins, or None: a header with
    magic 2, a length that ends inside ``size``, offsets a batch can have and a CRC-32C
    that matches its bytes (chance agreement: one in four billion per candidate). Found
    by the magic byte, piece by piece; what a partly written tail costs is a pass over
    its own bytes."""
    step = max(piece, 2 * HEADER_SIZE)
    at = lo
    while at < hi:
        chunk = bytes(read(at, min(step, size - at)))
        if len(chunk) < HEADER_SIZE:
            return None
        last = min(hi - at, len(chunk) - HEADER_SIZE + 1)  # candidates whose header is in the piece
        j = chunk.find(b"\x02", MAGIC_POS, last + MAGIC_POS)
        while j != -1:
            q = at + j - MAGIC_POS
            if _whole_batch_at(read, chunk, j - MAGIC_POS, q, size):
                return q
            j = chunk.find(b"\x02", j + 1, last + MAGIC_POS)
        at += max(last, 1)
    return None


def _whole_batch_at(read: Reader, chunk: bytes, k: int, q: int, size: int) -> bool:
    length = int.from_bytes(chunk[k + 8 : k + 12], "big", signed=True)
    if length < MIN_V2_LENGTH or q + LOG_OVERHEAD + length > size:
        return False
    (base, _, _, _, crc, _, last_delta, *_, count) = HEADER.unpack_from(chunk, k)
    if offsets_problem(base, last_delta, count) is not None:
        return False
    body = bytes(read(q, LOG_OVERHEAD + length))
    return len(body) == LOG_OVERHEAD + length and crc32c(body[CRC_START:]) == crc


def _first_nonzero(read: Callable[[int, int], Any], pos: int, end: int) -> int | None:
    """The first non-zero byte in [pos, end), read in 1 MiB pieces, or None."""
    step = 1 << 20
    while pos < end:
        piece = bytes(read(pos, min(step, end - pos)))
        if not piece:
            return None
        stripped = piece.lstrip(b"\x00")
        if stripped:
            return pos + len(piece) - len(stripped)
        pos += len(piece)
    return None


def _truncated(
    sink: ScanSink,
    tail_ok: bool,
    detail: str,
    topic: str | None,
    partition: int | None,
    file: str | None,
    pos: int,
    end: int,
) -> None:
    kind = "truncated" if tail_ok else "truncated_inside"
    sink.issue(kind, detail, topic, partition, file, pos, end)
