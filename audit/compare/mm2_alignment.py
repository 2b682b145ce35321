"""MirrorMaker 2, record by record, without a row per record: each partition's two sides
streamed through the aligner (native/src/align.rs, ``Aligner``) in offset order, a small row
per partition out (``mm2_record_alignments``), a step of ``mm2_record_partitions``
(mm2_records.py).

Why: the row-per-record query numbers every record's occurrence of its content on each
side, joins the sides on it and orders the pairs by the replica's offsets, all of it over
windows that Spark shuffles and sorts: 12.8 us a record, against 142 ns streamed through
the aligner (docs/benchmarks.md, ``make bench-mm2-align``). The aligner gives exactly the query's
tally (the range's start, the counts, the first offsets, the order breaks, the clean cut),
held to it by a differential test (tests/unit/test_mm2_alignment.py), or it says why it
cannot (``fallback``: a gap or a replay longer than its window, records out of offset
order, the compiled package missing), and that partition alone goes through the query.

The records scan aligns each partition as it reads it (collect/records/digests.py) and
keeps the tally (``record_alignments``); this step takes it wherever the range it aligned
is the comparison's (``RANGE_COLUMNS``, every one equal) and aligns the others from the
digests the scan kept of them. Spark does the distribution, not the matching: the ranges
(a row per partition) are dealt into tasks, and each task reads its partitions' digests
straight from the scan's Parquet files, pruning row groups by their statistics. The scan
writes each side of a partition into one file in offset order, which is the order the
aligner takes; digests written otherwise (an older scan) are refused as out of order, and
matched row by row. DuckDB, in process, reads them by a query ordered by offset.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from audit.compare.sql import Step
from audit.schemas import columns

if TYPE_CHECKING:
    from audit.compare.engines import Read

TABLE = "mm2_record_alignments"
# Records per side held unmatched before they are final: the aligner's memory (about 40
# bytes a record a side) and its cost (cache misses: 63 ns a record at 16,384, 141 at
# 65,536, 162 at 262,144; bench/mm2_align.py) against how long a gap or a replay it can
# still match without falling back.
WINDOW = 1 << 16
# Records pushed per turn of a side: both sides advance together, so what one is ahead of
# the other stays within a turn.
TURN = 1 << 14
# The records scan's window (collect/records/digests.py): a quarter of this step's, its
# turns a quarter of that. The scan aligns every record of every partition, and the
# aligner's cost is its window's cache misses; a partition it cannot answer within it keeps
# its digests, and this step aligns them again with ``WINDOW`` before any goes row by row.
SCAN_WINDOW = WINDOW >> 2

# What the aligner needs of each partition: the query's own ranges step, so both paths
# judge the same range. The records scan aligns as it reads, over these columns of the
# range it expects (compare/mm2_planned.py): its tally serves where they are the same.
RANGE_COLUMNS = (
    "remote_topic",
    "end_u",
    "end_d",
    "src_read_start",
    "dst_read_start",
    "first_sync_u",
    "first_sync_d",
    "cut_u",
    "cut_d",
)
PARAMS = f"""
SELECT e.topic, e.partition, {", ".join(f"e.{c}" for c in RANGE_COLUMNS)}
FROM {{mm2_record_ranges}} e
WHERE e.end_u IS NOT NULL
"""
# The scan's tally (``record_alignments``): what the aligner answers.
_NOT_TALLY = ("topic", "partition", "digests_missing")
TALLY_COLUMNS = tuple(c.name for c in columns(TABLE) if c.name not in _NOT_TALLY)
_SCANNED = ("digests_kept", *RANGE_COLUMNS, *TALLY_COLUMNS)
# Each range with the scan's row of its partition beside it, columns prefixed ``scan_``.
_WITH_SCAN = f"""
SELECT p.*, {", ".join(f"s.{c} AS scan_{c}" for c in _SCANNED)}
FROM ({PARAMS}) p
LEFT JOIN {{src_record_alignments}} s ON s.topic = p.topic AND s.partition = p.partition
"""
# The scan's counts a tally cannot be without (the first offsets and the clean cut may be
# null): a row without one of them (a crafted or damaged file) is no tally, never a zero.
_COUNTED = (
    "compared_src_start",
    "compared_dst_start",
    "compared_src_records",
    "compared_dst_records",
    "missing_records",
    "duplicate_records",
    "unexplained_records",
    "order_breaks",
)
DIGESTS_MISSING = (
    "the records scan matched another range of this partition as it read it, or left its "
    "counts incomplete, and kept none of its digests (the snapshots compared under another "
    "configuration?): scan again, or set records.mm2_keep_digests: true"
)


def alignment_step(window: int | None) -> Step:
    """The step, aligning with ``window`` records a side; None: every partition matched row
    by row (the reference path the differential tests hold the aligner to) where the
    snapshots hold its digests."""
    if window is None:
        nulls = ", ".join(f"CAST(NULL AS BIGINT) AS {c}" for c in TALLY_COLUMNS[1:])
        sql = (
            f"SELECT p.topic, p.partition,\n"
            f"  CASE WHEN p.scan_digests_kept = FALSE THEN '{DIGESTS_MISSING}'\n"
            f"    ELSE 'asked to (the reference path)' END AS fallback, {nulls},\n"
            f"  CASE WHEN p.scan_digests_kept = FALSE THEN TRUE END AS digests_missing\n"
            f"FROM ({_WITH_SCAN}) p"
        )
        return Step(TABLE, sql)
    return Step(TABLE, _WITH_SCAN, run=functools.partial(aligned, window=window))


def aligned(tables: Any, sql: str, window: int) -> Any:
    """The step's rows in ``tables``' engine: a row per partition of ``sql``'s ranges, each
    partition's two sides read in offset order by the engine (``Tables.per_partition``)."""
    return tables.per_partition(
        sql, TABLE, ("src_record_digests", "dst_record_digests"), functools.partial(_align_row, window=window)
    )


def _align_row(r: dict[str, Any], read: Read, window: int) -> dict[str, Any]:
    """The scan's tally where it aligned this range and counted all of it, else the
    partition's digests aligned; unmatchable where neither serves (no digest kept)."""
    out = {"topic": r["topic"], "partition": r["partition"]}
    if r["scan_digests_kept"] is not None:
        same_range = all(r[c] == r[f"scan_{c}"] for c in RANGE_COLUMNS)
        counted = all(r[f"scan_{c}"] is not None for c in _COUNTED)
        if same_range and counted and r["scan_fallback"] is None:
            return {**out, **{c: r[f"scan_{c}"] for c in TALLY_COLUMNS}}
        if not r["scan_digests_kept"]:
            return {**out, "fallback": DIGESTS_MISSING, "digests_missing": True}
    src = read("src_record_digests", r["topic"], r["partition"], r["src_read_start"], r["end_u"], COLUMNS)
    dst = read(
        "dst_record_digests", r["remote_topic"], r["partition"], r["dst_read_start"], r["end_d"], COLUMNS
    )
    return align_partition(r, (_buffers(b) for b in src), (_buffers(b) for b in dst), window)


Batches = Iterator[tuple[bytes, bytes]]  # (offsets, digests) as native-endian int64 buffers
COLUMNS = ("offset", "digest")


def align_partition(
    r: dict[str, Any], src: Batches, dst: Batches, window: int = WINDOW, turn: int = TURN
) -> dict[str, Any]:
    """One partition's row: its ranges row ``r`` (PARAMS), its two sides' records in
    offset order; the sides pushed in turns of ``turn`` records, the one behind first."""
    from audit.collect.records import native

    module = native.load()
    out: dict[str, Any] = {"topic": r["topic"], "partition": r["partition"]}
    if module is None:
        return {**out, "fallback": f"the compiled aligner is not installed ({native.INSTALL})"}
    aligner = new_aligner(module, r, window)
    sides = [(aligner.push_src, _turns(src, turn)), (aligner.push_dst, _turns(dst, turn))]
    pushed = [0, 0]
    ended = [False, False]
    try:
        while not all(ended) and aligner.fallback is None:
            i = min((j for j in (0, 1) if not ended[j]), key=lambda j: pushed[j])
            push, turns = sides[i]
            taken = next(turns, None)
            if taken is None:
                ended[i] = True
                continue
            push(*taken)
            pushed[i] += len(taken[0]) // 8
            # The tally is what this step keeps: the finding rows (a row per missing record,
            # say) would pile up in the aligner unless taken.
            aligner.take_findings()
        return {**out, **aligner.finish()}
    except module.ReaderError as why:  # records out of offset order: digests of an older scan
        return {**out, "fallback": f"the digests are not in offset order ({why})"}


def new_aligner(module: Any, r: dict[str, Any], window: int) -> Any:
    """The compiled ``module``'s aligner of the range a ``mm2_record_ranges`` row gives."""
    return module.Aligner(
        r["end_u"],
        r["end_d"],
        r["src_read_start"],
        r["dst_read_start"],
        first_sync=(r["first_sync_u"], r["first_sync_d"]) if r["first_sync_u"] is not None else None,
        cut=(r["cut_u"], r["cut_d"]) if r["cut_u"] is not None else None,
        window=window,
    )


def _turns(batches: Batches, turn: int) -> Batches:
    """The batches cut to at most ``turn`` records each."""
    for offsets, digests in batches:
        for at in range(0, len(offsets), turn * 8):
            yield offsets[at : at + turn * 8], digests[at : at + turn * 8]


def _buffers(batch: Any) -> tuple[bytes, bytes]:
    """A batch of (offset, digest), int64 without nulls, as the aligner's two buffers."""

    def raw(array: Any) -> bytes:
        whole: bytes = array.buffers()[1].to_pybytes()
        return whole[array.offset * 8 : (array.offset + len(array)) * 8]

    return raw(batch.column(0)), raw(batch.column(1))
