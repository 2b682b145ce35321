"""Mode mm2's records scan: both sides of every in-scope source partition read and matched
as they are read, the tally per partition (``record_alignments``), what was read of each
partition (``record_digest_ranges``), the runs of consecutive offsets holding records
(``record_digest_runs``, found as the offsets are read: offset_runs.py), and each record's
content digest (``record_digests``) only where the comparison may need it, for MM2-DATA-1
to -4 (audit/compare/mm2_records.py) and MM2-SKIP-1 (audit/compare/mm2_reads.py).

MirrorMaker 2 writes copies at offsets of the target's choosing, so the scan cannot read
"the same chunks on both sides" as in mode cluster-mirroring: each side is read from its own
start, the source from its log start and its replica likewise. The source is read as
MirrorMaker 2's consumer reads it (``mirror.mm2.consumer_isolation``: what it reads is
what it copies); the replica as its consumers will, read_committed (a MirrorMaker 2 running
exactly once aborts what a restarted task had written). Each side ends where its isolation
lets a consumer read: the high watermark, or the last stable offset.

Compare as you read: a task holds both sides of its partitions (``pair_groups``) and reads
them in turns, a reader per cluster, the side behind first, through the aligner
(compare/mm2_alignment.py, ``align_partition``) over the range the comparison will judge,
found before the scan by the comparison's own ranges step over the planned reads
(compare/mm2_planned.py). A row per record written and read back cost more than the read
itself (bench/mm2_records.py); the comparison takes the tally wherever its own range is the
one aligned, and matches the digests only of the partitions the scan kept them for
(``keeps_digests``): a read that stopped short, a fallback, ``records.mm2_keep_digests``.

The records are walked by the batch reader (kafka-python's FetchSession, the compiled
walker keeping each record's digest), the only reader that keeps digests: a setting it
cannot honour stops the scan with the reason, and MM2-DATA-* stay unchecked. A partition's
digests are held as the walker's buffers until the scan knows whether to keep them
(``HeldDigests``: a row group's worth, past that a file of the partition's own), then
written by the task itself to Parquet (pyarrow's writer, a row group per
``ROW_GROUP_ROWS`` records), one file per task and side: a row per record never passes
through Spark's JVM. A task's memory is bounded by the aligner's window and a row group a
side, whatever the partition's size; the ranges read, failed ones with where they stopped
and why, and the tallies come back to the driver through accumulators (a row per range
and per partition), the files written as one small row each.
"""

from __future__ import annotations

import functools
import logging
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from audit.collect.batches.scan import issue_accumulator
from audit.collect.metadata.kafka_admin import KafkaAdmin, require_reachable
from audit.collect.metadata.snapshot import utc_now
from audit.collect.records import native, readers
from audit.collect.records.batch_reader import BatchWaves, RangeFailed
from audit.collect.records.digest_history import DigestHistory
from audit.collect.records.offset_runs import OffsetRuns
from audit.collect.records.plan import SIDES, TaskRange, pair_groups, read_range_rows
from audit.collect.records.read import consumer_settings, cyclic_gc_paused, task_frame
from audit.collect.remote_tier import local_starts
from audit.compare.mm2_planned import planned_ranges
from audit.config import AuditConfig
from audit.errors import ConfigError
from audit.fsutil import atomic_write_json, replace_path
from audit.progress import spark_progress
from audit.schemas import columns
from audit.snapshot import (
    PartitionRecord,
    RecordDigestCutRecord,
    read_manifest,
    read_records,
    write_table,
)

log = logging.getLogger(__name__)

READ_COMMITTED = "read_committed"
# Records per Parquet row group of record_digests: 16 MB of offsets and digests at most in
# a task's memory, and row groups large enough for the readers' statistics to prune.
ROW_GROUP_ROWS = 1 << 20
# How the columns are written: a dictionary for the few topic and partition values only (a
# digest is random, and trying a dictionary on it first cost more than all the rest), the
# offsets delta-encoded (they ascend), the digests stored as they are (snappy finds nothing
# to compress). 44 ns a record written instead of 110, files two thirds the size.
_ENCODING: dict[str, Any] = {
    "use_dictionary": ["topic", "partition"],
    "compression": {"topic": "snappy", "partition": "snappy", "offset": "snappy", "digest": "none"},
    "column_encoding": {"offset": "DELTA_BINARY_PACKED"},
}
# The runs of offsets holding records (offset_runs.py): a row per stretch, few and ascending.
_ENCODINGS: dict[str, dict[str, Any]] = {
    "record_digests": _ENCODING,
    "record_digest_runs": {
        "use_dictionary": ["topic", "partition"],
        "column_encoding": {"start_offset": "DELTA_BINARY_PACKED", "end_offset": "DELTA_BINARY_PACKED"},
    },
}
# What the scan writes from its tasks, each under its own directory of the staging root.
SCANNED = tuple(_ENCODINGS)


def isolation_of(side: str, cfg: AuditConfig) -> str:
    """How a side is read: the source as MirrorMaker 2's consumer reads it, the replica as
    its consumers will."""
    return cfg.mirror.mm2.consumer_isolation if side == "source" else READ_COMMITTED


def digest_ranges(
    src_parts: list[PartitionRecord],
    dst_parts: list[PartitionRecord],
    cfg: AuditConfig,
    cuts: dict[tuple[str, int], RecordDigestCutRecord] | None = None,
) -> list[TaskRange]:
    """(side, topic, partition, start, end, compacted=False) of every in-scope source
    partition whose replica exists, and of that replica: from the log start (past a
    partition's cut, the source from ``records.mm2_replay_lookback`` before it where the
    replica has records past it) to where the side's isolation lets a consumer read, cut
    every ``records.split_records`` offsets."""
    mm2 = cfg.mirror.mm2
    replicas = {(p.topic, p.partition): p for p in dst_parts}
    wanted: list[tuple[str, PartitionRecord, int]] = []
    for s in src_parts:
        replica = replicas.get((mm2.remote_topic(s.topic), s.partition))
        if replica is None or not cfg.scope.mm2_topic_in_scope(s.topic):
            continue
        cut = (cuts or {}).get((s.topic, s.partition))
        src_from, dst_from = s.log_start_offset, replica.log_start_offset
        if cut is not None:
            dst_from = max(dst_from, cut.dst_through + 1)
            replica_end = _end(replica, isolation_of("destination", cfg))
            lookback = cfg.records.mm2_replay_lookback if replica_end > dst_from else 0
            src_from = max(src_from, cut.src_through + 1 - lookback)
        wanted += [("source", s, src_from), ("destination", replica, dst_from)]
    out: list[TaskRange] = []
    split = cfg.records.split_records
    for side, p, start in wanted:
        end = _end(p, isolation_of(side, cfg))
        lo = min(start, end)
        if end <= lo:
            out.append((side, p.topic, p.partition, lo, lo, False))  # nothing to read: stated, not skipped
        while lo < end:
            hi = min(end, (lo // split + 1) * split)
            out.append((side, p.topic, p.partition, lo, hi, False))
            lo = hi
    return out


def _end(p: PartitionRecord, isolation: str) -> int:
    """Where a consumer of this isolation can read to."""
    return p.last_stable_offset if isolation == READ_COMMITTED else p.high_watermark


def collect_digests(
    spark: Any, cfg: AuditConfig, source: Path, destination: Path, state_root: Path | None, full: bool = False
) -> dict[str, Any]:
    """Read both sides' records into each snapshot's ``record_digests`` and
    ``record_digest_ranges``, and the cuts judged from into the source's
    ``record_digest_cuts`` (``state_root`` holds them between runs, None: keep none);
    returns the manifest note (``notes.records``)."""
    src_manifest = read_manifest(source, "source")
    dst_manifest = read_manifest(destination, "destination")
    clients = {
        "source": cfg.cluster("source").client_settings(),
        "destination": cfg.cluster("destination").client_settings(),
    }
    settings = {side: consumer_settings(clients[side], isolation_of(side, cfg)) for side in SIDES}
    _require_batch_reader(settings)
    src_parts = read_records(source, "partitions", PartitionRecord)
    dst_parts = read_records(destination, "partitions", PartitionRecord)
    cuts: dict[tuple[str, int], RecordDigestCutRecord] = {}
    dropped: list[str] = []
    if state_root is not None and cfg.records.incremental and not full:
        clusters = (src_manifest.get("cluster_id"), dst_manifest.get("cluster_id"))
        cuts, dropped = DigestHistory.load(state_root, clusters).cuts(src_parts, dst_parts, cfg)
        for line in dropped[:20]:
            log.info("records (mm2): read whole again: %s", line)
    ranges = digest_ranges(src_parts, dst_parts, cfg, cuts)
    if any(r[4] > r[3] for r in ranges):
        require_reachable("destination", cfg.cluster("destination"), dst_manifest.get("cluster_id"))
        admin: KafkaAdmin = require_reachable("source", cfg.cluster("source"), src_manifest.get("cluster_id"))
        compacted = admin.compacted_topics(sorted({r[1] for r in ranges if r[0] == "source"}))
        ranges = [
            (side, t, p, lo, hi, _source_topic(side, t, cfg) in compacted) for side, t, p, lo, hi, _ in ranges
        ]
    started = utc_now()
    outcomes, matched = issue_accumulator(spark), issue_accumulator(spark)
    planned = planned_ranges(
        source,
        destination,
        cfg,
        {"source": src_parts, "destination": dst_parts},
        read_range_rows(ranges, [(*r[:5], r[4], None) for r in ranges], lambda side: isolation_of(side, cfg)),
        cuts,
    )
    groups = pair_groups(
        [r for r in ranges if r[4] > r[3]],
        spark.sparkContext.defaultParallelism * 2,
        lambda r: (_source_topic(r[0], r[1], cfg), r[2]),
    )
    with tempfile.TemporaryDirectory(prefix=".digests.", dir=destination.parent) as tmp:
        staging = Path(tmp)
        task = _digest_task(settings, cfg, planned, outcomes, matched, str(staging))
        frame = task_frame(spark, groups).mapInArrow(task, _written_schema())
        clock = time.monotonic()
        with spark_progress(spark, "records scan (mm2)"):
            written = frame.collect()  # a row per file written: its side and records
        alignments = {(a["topic"], a["partition"]): a for a in matched.value}  # a retried task's last
        log.info(
            "records (mm2): both sides read and matched in %.1fs (%d partitions; %d digests kept, %d files)",
            time.monotonic() - clock,
            len(alignments),
            sum(w["records"] for w in written),
            len(written),
        )
        read = read_range_rows(
            ranges,
            outcomes.value,
            lambda side: isolation_of(side, cfg),
            local_starts({"source": src_parts, "destination": dst_parts}),
        )
        for side, directory in (("source", source), ("destination", destination)):
            for table in SCANNED:
                part = staging / table / f"side={side}"
                if not part.exists():  # no task read this side: an empty table, its schema kept
                    _write_empty(part, table)
                replace_path(part, directory / f"{table}.parquet")
            write_table(directory, "record_digest_ranges", tuple(r for s, r in read if s == side))
        write_table(source, "record_digest_cuts", tuple(cuts[k] for k in sorted(cuts)))
        names = [c.name for c in columns("record_alignments")]
        rows = (SimpleNamespace(**{n: alignments[k].get(n) for n in names}) for k in sorted(alignments))
        write_table(source, "record_alignments", tuple(rows))
    note = _scan_note(started, read, cfg, full, len(cuts), dropped)
    note["matched_as_read"] = sum(
        1 for a in alignments.values() if a.get("end_u") is not None and a.get("fallback") is None
    )
    note["digests_kept_partitions"] = sum(1 for a in alignments.values() if a["digests_kept"])
    for directory, manifest in ((source, src_manifest), (destination, dst_manifest)):
        manifest.setdefault("notes", {})["records"] = note
        atomic_write_json(directory / "manifest.json", manifest)
    log.info("records (mm2): %d ranges, %d unreadable", len(read), note["unreadable_ranges"])
    return note


def _scan_note(
    started: str, read: list[tuple[str, Any]], cfg: AuditConfig, full: bool, cuts: int, dropped: list[str]
) -> dict[str, Any]:
    """The scan's manifest note (``notes.records``): what it read, from which cuts, and the
    ranges it could not read whole."""
    failed = [(side, r) for side, r in read if not r.complete]
    return {
        "started_at": started,
        "finished_at": utc_now(),
        "kind": "digests",
        "reader": "batches",
        "isolation": {side: isolation_of(side, cfg) for side in SIDES},
        "ranges": len(read),
        "offsets_read": sum(r.read_to - r.start_offset for _, r in read),
        "full": full or not cfg.records.incremental,
        "judged_from_cuts": cuts,
        "cuts_dropped": dropped[:50],
        "unreadable_ranges": len(failed),
        "issues": [
            {
                "side": side,
                "topic": r.topic,
                "partition": r.partition,
                "start_offset": r.start_offset,
                "read_to": r.read_to,
                "detail": r.detail,
            }
            for side, r in failed[:50]
        ],
    }


def _source_topic(side: str, topic: str, cfg: AuditConfig) -> str | None:
    return topic if side == "source" else cfg.mirror.mm2.source_topic(topic)


def _require_batch_reader(settings: dict[str, dict[str, Any]]) -> None:
    """Only the batch reader keeps per-record digests: refused, naming why, where it cannot
    read (the compiled package missing, a client setting kafka-python cannot honour)."""
    if native.load() is None:
        raise ConfigError(
            f"records in mode mm2 read with the batch reader, but {native.MODULE} is not installed: "
            "install it (pip install ./native), or set records.enabled: false"
        )
    problem = readers.batch_problem(settings)
    if problem is not None:
        raise ConfigError(f"records in mode mm2 read with the batch reader, which cannot use {problem}")


def _written_schema() -> Any:
    """What a task tells the driver: per side, the file it wrote and how many records."""
    from pyspark.sql import types as T

    return T.StructType(
        [
            T.StructField("side", T.StringType(), False),
            T.StructField("file", T.StringType(), False),
            T.StructField("records", T.LongType(), False),
        ]
    )


def _write_empty(part: Path, table: str) -> None:
    import pyarrow.parquet as pq

    part.mkdir(parents=True, exist_ok=True)
    pq.write_table(_schema(table).empty_table(), str(part / "part-empty.parquet"), **_ENCODINGS[table])


class DigestFile:
    """One task's digests of one side (or another of the tables it writes, ``SCANNED``), as
    one Parquet file under ``<root>/side=<side>/``:
    written to a name of its own, then renamed to ``part-<name>.parquet`` once closed, so a
    file the scan keeps is whole, and a retried task (same ranges, same name) replaces its
    earlier attempt's file rather than adding to it. Batches are held until a row group's
    worth (``ROW_GROUP_ROWS``), then written: memory bounded by one row group. A row group
    holds one partition's records only, so its statistics name the partition exactly and
    the aligner reads each partition's row groups, and no other's, in offset order
    (compare/mm2_alignment.py)."""

    def __init__(self, root: str, side: str, name: str, table: str = "record_digests") -> None:
        import os
        import uuid

        self._schema = _schema(table)
        self._encoding = _ENCODINGS[table]
        self._dir = os.path.join(root, f"side={side}")
        os.makedirs(self._dir, exist_ok=True)
        self.path = os.path.join(self._dir, f"part-{name}.parquet")
        self._tmp = os.path.join(self._dir, f".{name}.{uuid.uuid4().hex}.tmp")
        self._held: list[Any] = []
        self._held_rows = 0
        self._held_key: tuple[str, int] | None = None
        self.records = 0
        self._writer: Any = None

    def add(self, batch: Any, partition: tuple[str, int]) -> None:
        """A batch of ``partition``'s records (topic, partition)."""
        if partition != self._held_key:
            self._flush()
            self._held_key = partition
        self._held.append(batch)
        self._held_rows += batch.num_rows
        if self._held_rows >= ROW_GROUP_ROWS:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self._writer is None:
            self._writer = pq.ParquetWriter(self._tmp, self._schema, **self._encoding)
        if self._held:
            self._writer.write_table(pa.Table.from_batches(self._held), row_group_size=self._held_rows)
            self.records += self._held_rows
        self._held, self._held_rows = [], 0

    def close(self) -> None:
        """Writes what is held and puts the file in place (an empty file too: its schema
        says what a side that read nothing holds)."""
        import os

        self._flush()
        self._writer.close()
        os.replace(self._tmp, self.path)

    def discard(self) -> None:
        import contextlib
        import os

        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
        with contextlib.suppress(FileNotFoundError):
            os.remove(self._tmp)


def _file_name(side: str, ranges: list[tuple[str, int, int, int]]) -> str:
    """A file's name, from its side and the ranges it holds: the same on a retried attempt."""
    import hashlib

    key = repr((side, sorted(ranges))).encode()
    return hashlib.sha1(key, usedforsecurity=False).hexdigest()[:20]


Range = tuple[str, int, int, int]  # topic, partition, start, end
Digests = tuple[bytes, bytes]  # a response's (offsets, digests), native-endian int64 buffers


class HeldDigests:
    """One side of one partition's digests until the scan knows whether the comparison may
    need them (``keep``: into the task's file) or not (``drop``): held as the walker's
    buffers up to a row group's worth, past that written to a file of the partition's own,
    which is then kept or removed whole. Memory bounded by a row group, whatever the
    partition's size; an Arrow batch is made only of what is kept."""

    def __init__(self, root: str, side: str, ranges: list[Range]) -> None:
        self._root, self._side, self._ranges = root, side, ranges
        self._key = (ranges[0][0], ranges[0][1])
        self._held: list[Digests] = []
        self._rows = 0
        self.spilled: DigestFile | None = None

    def add(self, offsets: bytes, digests: bytes) -> None:
        self._held.append((offsets, digests))
        self._rows += len(offsets) // 8
        if self._rows >= ROW_GROUP_ROWS:
            if self.spilled is None:
                # A name of its own: a task of this partition alone names its file by the same ranges.
                name = _file_name(f"{self._side}, held", self._ranges)
                self.spilled = DigestFile(self._root, self._side, name)
            self._into(self.spilled)

    def _into(self, out: DigestFile) -> None:
        for offsets, digests in self._held:
            for batch in _batch(*self._key, offsets, digests):
                out.add(batch, self._key)
        self._held, self._rows = [], 0

    def keep(self, out: DigestFile) -> None:
        """Into ``out`` (or its own file, once it has one, closed and in place)."""
        if self.spilled is None:
            self._into(out)
        else:
            self._into(self.spilled)
            self.spilled.close()

    def drop(self) -> None:
        if self.spilled is not None:
            self.spilled.discard()
        self._held, self._rows = [], 0


def _digest_task(
    settings: dict[str, dict[str, Any]],
    cfg: AuditConfig,
    planned: dict[tuple[str, int], dict[str, Any]],
    outcomes: Any,
    matched: Any,
    root: str,
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """A task's work: per source partition dealt to it, its ranges and its replica's read
    side by side (a reader per cluster) and matched as they stream (``align_partition``,
    over the range ``planned`` for it), the runs of offsets kept, the digests kept only
    where the comparison may need them (``keeps_digests``); a row per partition into ``matched``,
    the reads into ``outcomes``."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from audit.compare.mm2_alignment import RANGE_COLUMNS, SCAN_WINDOW, align_partition

    timeout = cfg.records.timeout_seconds
    size = cfg.records.chunk_records
    keep_all = cfg.records.mm2_keep_digests
    told = to_arrow_schema(_written_schema())  # the rows a task yields, as Spark declares them

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import os

        import pyarrow as pa

        units: dict[tuple[str, int], dict[str, list[Range]]] = {}
        for rb in batches:
            cols = rb.to_pydict()
            for side, topic, partition, start, end in zip(
                cols["side"], cols["topic"], cols["partition"], cols["start"], cols["end"], strict=True
            ):
                key = (_source_topic(side, topic, cfg) or topic, partition)
                units.setdefault(key, {}).setdefault(side, []).append((topic, partition, start, end))
        mine = {side: [r for u in units.values() for r in u.get(side, [])] for side in SIDES}
        read: list[tuple[Any, ...]] = []
        rows: list[dict[str, Any]] = []
        files: dict[str, tuple[DigestFile, DigestFile]] = {}
        waves: dict[str, BatchWaves] = {}
        written: list[tuple[str, DigestFile]] = []
        try:
            with cyclic_gc_paused():
                for side in SIDES:
                    if mine[side]:
                        name = _file_name(side, mine[side])
                        out, runs_out = (DigestFile(os.path.join(root, t), side, name, t) for t in SCANNED)
                        files[side] = (out, runs_out)
                        waves[side] = BatchWaves(settings[side], timeout)
                for key, by_side in units.items():
                    held: dict[str, HeldDigests] = {}
                    streams: dict[str, Iterator[Digests]] = {}
                    for side, its in by_side.items():
                        held[side] = HeldDigests(os.path.join(root, "record_digests"), side, its)
                        streams[side] = _side(
                            waves[side], side, its, size, timeout, read, held[side], files[side][1]
                        )
                    before = len(read)
                    planned_range = planned.get(key)
                    row: dict[str, Any] = {"topic": key[0], "partition": key[1]}
                    if planned_range is not None:
                        src = _upto(streams.get("source"), planned_range["end_u"])
                        dst = _upto(streams.get("destination"), planned_range["end_d"])
                        row.update({c: planned_range[c] for c in RANGE_COLUMNS})
                        row.update(align_partition(planned_range, src, dst, SCAN_WINDOW, SCAN_WINDOW >> 2))
                    for stream in streams.values():  # the rest of each read: runs, digests
                        for _ in stream:
                            pass
                    row["digests_kept"] = keeps_digests(keep_all, read[before:], row)
                    for side, h in held.items():
                        if row["digests_kept"]:
                            h.keep(files[side][0])
                            if h.spilled is not None:
                                written.append((side, h.spilled))
                        else:
                            h.drop()
                    rows.append(row)
                for side, (out, runs_out) in files.items():
                    out.close()
                    runs_out.close()
                    written.append((side, out))
        except BaseException:
            for out, runs_out in files.values():
                out.discard()
                runs_out.discard()
            raise
        finally:
            for w in waves.values():
                w.close()
            outcomes.add(read)
            matched.add(rows)
        if written:
            yield pa.RecordBatch.from_pylist(
                [{"side": side, "file": f.path, "records": f.records} for side, f in written], schema=told
            )

    return run


def keeps_digests(keep_all: bool, read: list[tuple[Any, ...]], row: dict[str, Any]) -> bool:
    """Whether a partition's digests stay in the snapshot: wherever the comparison may not
    take the scan's tally (``row``, its ``record_alignments`` row) and must match them
    itself. A read that stopped short (``read``: the partition's outcomes, detail last)
    leaves a range the comparison computes otherwise; a fallback leaves no tally;
    ``records.mm2_keep_digests`` keeps every one."""
    stopped = any(o[-1] is not None for o in read)
    return keep_all or stopped or row.get("fallback") is not None


def _side(
    waves: BatchWaves,
    side: str,
    ranges: list[Range],
    size: int,
    timeout: float,
    read: list[Any],
    held: HeldDigests,
    runs_out: DigestFile,
) -> Iterator[Digests]:
    """One side of a partition, its ranges in offset order, as the walker's buffers a
    response at a time; each response's digests held, and its offsets folded into the
    partition's runs, written to ``runs_out`` as they close (the last at the end)."""
    key = (ranges[0][0], ranges[0][1])
    runs = OffsetRuns(*key)
    for r in ranges:
        for offsets, digests in _read_range(waves, side, r, size, timeout, read):
            runs.add(offsets)
            for found in runs.take():
                runs_out.add(found, key)
            held.add(offsets, digests)
            yield offsets, digests
    for found in runs.take(final=True):
        runs_out.add(found, key)


def _upto(stream: Iterator[Digests] | None, last: int) -> Iterator[Digests]:
    """The records of ``stream`` (None: a side with nothing to read) through offset ``last``:
    what the aligner takes; the rest stays in ``stream`` for the caller to read on."""
    import numpy as np

    for offsets, digests in stream or ():
        at = np.frombuffer(offsets, dtype=np.int64)
        if at.size and at[-1] > last:
            n = int(np.searchsorted(at, last, side="right")) * 8
            if n:
                yield offsets[:n], digests[:n]
            return
        yield offsets, digests


def _read_range(
    waves: BatchWaves,
    side: str,
    r: Range,
    size: int,
    timeout: float,
    read: list[Any],
) -> Iterator[Digests]:
    """One range's records as the walker's buffers, one pair per response; its outcome
    appended to ``read`` as (side, topic, partition, start, end, read_to, detail)."""
    topic, partition, start, end = r
    reading = waves.open_range(r, size, digests=True)
    detail = None
    try:
        for _ in waves.fed(reading, r, timeout):
            yield reading.take_digests()
    except RangeFailed as why:
        detail = str(why)[:300]
    except Exception as exc:  # kafka-python's own errors, a lost connection: this range only
        detail = f"{type(exc).__name__}: {str(exc)[:300]}"
    if detail is not None:  # what was read before the failure still counts, up to read_to
        yield reading.take_digests()
    read.append((side, topic, partition, start, end, end if detail is None else reading.next, detail))


@functools.cache
def _schema(table: str) -> Any:
    """A table's Arrow schema, made once per worker."""
    from audit.schemas import arrow_schema

    return arrow_schema(table)


def _batch(topic: str, partition: int, offsets: bytes, digests: bytes) -> Iterator[Any]:
    """The records as one Arrow batch of ``record_digests`` (none if there are none), their
    columns the walker's buffers as they are."""
    import pyarrow as pa

    n = len(offsets) // 8
    if n == 0:
        return
    yield pa.RecordBatch.from_arrays(
        [
            pa.repeat(topic, n),
            pa.repeat(pa.scalar(partition, pa.int32()), n),
            pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(offsets)]),
            pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(digests)]),
        ],
        schema=_schema("record_digests"),
    )
