"""Write a batch scan (segments or wire) into a snapshot directory, atomically.

The scan runs once into a staging directory; ``batches``, ``markers`` and
``batch_scan_issues`` are then cut from it by Spark and renamed into place only when all
three are complete. Into an existing snapshot (taken by ``mirror-audit snapshot``) the
tables are added beside the others and the manifest notes what was scanned. Where there is
no snapshot yet (segment files of a backup, no cluster to ask), a complete
``mirror-audit-snapshot/1`` is made: its ``partitions`` table is derived from the batches
(first offset, end offset, last stable offset from unclosed transactions, topic id from
``partition.metadata`` and leader epoch from ``leader-epoch-checkpoint`` where the files
hold them), and it has no groups.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from audit.collect.batches.format import CONTROL_TYPES, ISSUE_SEVERITY, ScanIssue
from audit.collect.batches.scan import BatchScan
from audit.collect.metadata.snapshot import utc_now
from audit.config import AuditConfig
from audit.errors import ConfigError, InputError
from audit.fsutil import atomic_directory, atomic_write_json, private_dir_as_umask
from audit.redaction import redact_uri
from audit.snapshot import Role, Snapshot, make_manifest, read_manifest, write_snapshot, write_table

log = logging.getLogger(__name__)

BATCH_TABLES = ("batches", "markers", "batch_scan_issues")


def _write_markers(spark: Any, staging: Path) -> None:
    """markers.parquet from the written batches (control batches only: Parquet statistics
    on ``is_control`` skip most of the file)."""
    from pyspark.sql import functions as F

    ctype = F.col("control_type")
    name = F.lit(None).cast("string")
    for code, word in sorted(CONTROL_TYPES.items(), reverse=True):
        name = F.when(ctype == code, F.lit(word)).otherwise(name)
    name = F.when(ctype.isNull(), F.lit(None)).otherwise(
        F.coalesce(name, F.concat(F.lit("UNKNOWN("), ctype.cast("string"), F.lit(")")))
    )
    markers = (
        spark.read.parquet(str(staging / "batches.parquet"))
        .where("is_control")
        .select(
            "topic",
            "partition",
            F.col("base_offset").alias("offset"),
            name.alias("marker"),
            "control_type",
            "control_version",
            "coordinator_epoch",
            "producer_id",
            "producer_epoch",
            "partition_leader_epoch",
            F.col("first_timestamp_ms").alias("timestamp_ms"),
            "file",
            "position",
        )
    )
    markers.write.mode("overwrite").parquet(str(staging / "markers.parquet"))


def _write_issues(issues: list[ScanIssue], staging: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from audit.schemas import arrow_schema

    schema = arrow_schema("batch_scan_issues")
    columns = {name: [getattr(i, name) for i in issues] for name in schema.names}
    pq.write_table(pa.Table.from_pydict(columns, schema=schema), staging / "batch_scan_issues.parquet")


def _rows(path: Path) -> int:
    import pyarrow.dataset as ds

    return int(ds.dataset(path, format="parquet").count_rows())


def issue_summary(issues: list[ScanIssue]) -> dict[str, int]:
    out: dict[str, int] = {}
    for issue in issues:
        out[issue.kind] = out.get(issue.kind, 0) + 1
    return out


@contextmanager
def _staging(parent: Path) -> Iterator[Path]:
    parent.mkdir(parents=True, exist_ok=True)
    tmp = private_dir_as_umask(Path(tempfile.mkdtemp(prefix=".batches.", suffix=".partial", dir=parent)))
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _copy_entry(src: Path, dst: Path) -> None:
    """A snapshot's file or table directory into its replacement: hard links where the
    filesystem allows (no bytes copied), a copy elsewhere."""
    if src.is_dir():
        shutil.copytree(src, dst, copy_function=_link_or_copy)
    else:
        _link_or_copy(str(src), str(dst))


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def write_batch_scan(
    spark: Any,
    scanned: BatchScan,
    directory: Path,
    role: Role | None,
    note: dict[str, Any],
) -> dict[str, Any]:
    """Run the scan and land its tables in ``directory``; returns the manifest note.

    ``role`` is required when ``directory`` is not a snapshot yet (its manifest says
    otherwise); when it is one, a differing ``role`` is an error. A snapshot that a scan
    made has its partitions derived again from the new batches: its log end and last
    stable offset must be the new scan's, or CM-TXN-3 would judge the new batches against
    the old LSO."""
    existing = (directory / "manifest.json").exists()
    if existing:
        manifest = read_manifest(directory, role)
        derived = (manifest.get("scope") or {}).get("derived_from") == "log segments"
        with _staging(directory.parent) as staging:
            counts = _run(spark, scanned, staging)
            note = {**note, **counts, "finished_at": utc_now()}
            tables = list(BATCH_TABLES)
            if derived:
                write_table(staging, "partitions", derived_partitions(spark, staging))
                tables.append("partitions")
            # The snapshot is replaced as one unit: a whole new copy (its other tables
            # hard-linked or copied, the scan's tables and the manifest new) takes the old
            # one's place, so a crash leaves the old snapshot or the new one, never a mix.
            with atomic_directory(directory) as whole:
                for entry in directory.iterdir():
                    if entry.name not in {f"{t}.parquet" for t in tables} | {"manifest.json"}:
                        _copy_entry(entry, whole / entry.name)
                for table in tables:
                    os.replace(staging / f"{table}.parquet", whole / f"{table}.parquet")
                manifest.setdefault("notes", {})["batches"] = note
                atomic_write_json(whole / "manifest.json", manifest)
        return note
    if directory.exists() and any(directory.iterdir()):
        raise InputError(
            f"{directory} exists but is not a snapshot (no manifest.json): give a new directory "
            "or a snapshot taken by 'mirror-audit snapshot'"
        )
    if role is None:
        raise InputError(f"{directory} is not a snapshot yet: say which side it is with --role")
    started = utc_now()
    with _staging(directory.parent) as staging:
        counts = _run(spark, scanned, staging)
        note = {**note, **counts, "finished_at": utc_now()}
        partitions = derived_partitions(spark, staging)
        with atomic_directory(directory) as tmp:
            manifest = make_manifest(
                role,
                None,
                started,
                utc_now(),
                scope={"derived_from": "log segments"},
                client={},
                notes={
                    "batches": note,
                    "partitions": "derived from log segments: log_start_offset is the first batch's "
                    "base offset, high_watermark the end of the last complete batch",
                },
            )
            write_snapshot(tmp / "base", Snapshot(manifest, partitions))
            for entry in (tmp / "base").iterdir():
                os.replace(entry, tmp / entry.name)
            (tmp / "base").rmdir()
            for table in BATCH_TABLES:
                os.replace(staging / f"{table}.parquet", tmp / f"{table}.parquet")
    return note


def _run(spark: Any, scan: BatchScan, staging: Path) -> dict[str, Any]:
    """Run the scan (one pass over the data) and write its three tables into ``staging``."""
    from audit.progress import spark_progress

    with spark_progress(spark, "batch scan"):
        scan.rows.write.mode("overwrite").parquet(str(staging / "batches.parquet"))
    issues = scan.collected_issues() + backwards_offsets(spark, staging)
    _write_issues(issues, staging)
    _write_markers(spark, staging)
    counts: dict[str, Any] = {
        "batches": _rows(staging / "batches.parquet"),
        "markers": _rows(staging / "markers.parquet"),
        "batch_scan_issues": len(issues),
        "issues": issue_summary(issues),
    }
    log.info(
        "batch scan: %d batches, %d markers, %d issues",
        counts["batches"],
        counts["markers"],
        counts["batch_scan_issues"],
    )
    return counts


MAX_BACKWARDS_ISSUES = 1000


def backwards_offsets(spark: Any, staging: Path) -> list[ScanIssue]:
    """A batch whose base offset is not past the previous batch's last offset, in file
    order: a log's offsets only grow, so such a batch was crafted or the segments of two
    logs were mixed. Each batch is read on its own by the walkers (a segment is split
    into ranges), so only the written table sees the order; a Spark window per partition,
    the first ``MAX_BACKWARDS_ISSUES`` reaching the driver. Wire reads (no file) are left
    out: the fetch loop itself refuses a response that does not move forward."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    batches = spark.read.parquet(str(staging / "batches.parquet")).where("file IS NOT NULL")
    segment = F.element_at(F.split("file", "/"), -1)  # 20-digit names sort as their offsets
    order = Window.partitionBy("topic", "partition").orderBy(segment, "position")
    rows = (
        batches.select(
            "topic",
            "partition",
            "file",
            "position",
            "size_bytes",
            "base_offset",
            F.lag("last_offset").over(order).alias("previous_last"),
        )
        .where("base_offset <= previous_last")
        .orderBy("topic", "partition", "file", "position")
        .limit(MAX_BACKWARDS_ISSUES)
        .collect()
    )
    return [
        ScanIssue(
            r.topic,
            r.partition,
            r.file,
            r.position,
            "offsets_backwards",
            ISSUE_SEVERITY["offsets_backwards"],
            f"base offset {r.base_offset} is not past the previous batch's last offset {r.previous_last}",
            r.position + r.size_bytes,
        )
        for r in rows
    ]


def derived_partitions(spark: Any, staging: Path) -> tuple[Any, ...]:
    """One ``PartitionRecord`` per partition seen in the batches (metadata-sized: a row
    per partition reaches the driver)."""
    from pyspark.sql import functions as F

    from audit.collect.batches.closure import transaction_closure
    from audit.snapshot import PartitionRecord

    batches = spark.read.parquet(str(staging / "batches.parquet"))
    closure = transaction_closure(batches)
    open_txn = (
        closure.where("is_transactional AND NOT is_control AND closing_offset IS NULL")
        .groupBy("topic", "partition")
        .agg(F.min(F.struct("base_offset", "first_timestamp_ms")).alias("first_open"))
    )
    agg = (
        batches.groupBy("topic", "partition")
        .agg(
            F.min("base_offset").alias("log_start_offset"),
            (F.max("last_offset") + 1).alias("high_watermark"),
            F.max("max_timestamp_ms").alias("max_timestamp_ms"),
            F.first("file", ignorenulls=True).alias("file"),
        )
        .join(open_txn, ["topic", "partition"], "left")
    )
    out = []
    for r in agg.collect():
        topic_id, epoch = _partition_files(r["file"])
        first_open = r["first_open"]
        out.append(
            PartitionRecord(
                topic=r["topic"],
                partition=int(r["partition"]),
                topic_id=topic_id,
                leader=None,
                leader_epoch=epoch,
                log_start_offset=int(r["log_start_offset"]),
                high_watermark=int(r["high_watermark"]),
                last_stable_offset=int(first_open["base_offset"]) if first_open else int(r["high_watermark"]),
                max_timestamp_ms=int(r["max_timestamp_ms"]) if r["max_timestamp_ms"] is not None else None,
                open_txn_first_timestamp_ms=int(first_open["first_timestamp_ms"]) if first_open else None,
                tier_detail="derived from log segment files, which hold no topic config",
            )
        )
    return tuple(sorted(out, key=lambda p: (p.topic, p.partition)))


def _partition_files(segment_uri: str | None) -> tuple[str | None, int | None]:
    """Topic id (``partition.metadata``) and latest leader epoch (``leader-epoch-checkpoint``)
    beside a segment, when they can be read; (None, None) otherwise."""
    from audit.collect.batches.segments import RangeFile

    if not segment_uri or "***@" in segment_uri:
        return None, None
    base = segment_uri.rsplit("/", 1)[0]
    topic_id = epoch = None
    try:
        with RangeFile(f"{base}/partition.metadata") as f:
            for line in bytes(f.read(0, f.size)).decode("utf-8", "replace").splitlines():
                if line.startswith("topic_id:"):
                    # Kafka writes the URL-safe base64 form; confluent-kafka (the live
                    # snapshot) prints the standard one: one spelling for both.
                    raw = line.split(":", 1)[1].strip()
                    topic_id = raw.replace("-", "+").replace("_", "/") or None
    except (OSError, FileNotFoundError):
        pass
    try:
        with RangeFile(f"{base}/leader-epoch-checkpoint") as f:
            lines = bytes(f.read(0, f.size)).decode("utf-8", "replace").split("\n")
        entries = [ln.split() for ln in lines[2:] if ln.strip()]
        if entries:
            epoch = max(int(e[0]) for e in entries)
    except (OSError, FileNotFoundError, ValueError, IndexError):
        pass
    return topic_id, epoch


def wire_ranges(directory: Path) -> tuple[list[tuple[str, int, int, int]], dict[tuple[str, int], int]]:
    """(topic, partition, log start, high watermark) of every partition with records in a
    snapshot: the ranges a fetch reads, so its batches match the snapshot's offsets; and the
    local log start of each tiered partition (where the snapshot read one), below which the
    broker serves the fetch from its remote tier."""
    from audit.collect.remote_tier import partition_local_starts
    from audit.snapshot import PartitionRecord, read_records

    parts = read_records(directory, "partitions", PartitionRecord)
    ranges = [
        (p.topic, p.partition, p.log_start_offset, p.high_watermark)
        for p in parts
        if p.high_watermark > p.log_start_offset
    ]
    tiers = partition_local_starts(parts)
    return ranges, tiers


def collect_batches(spark: Any, cfg: AuditConfig, role: Role, directory: Path) -> dict[str, Any]:
    """Add one side's batch tables to its snapshot, from wire or files per ``cfg.segments``."""
    from audit.collect.batches.segments import ScanOptions, scan_segments
    from audit.collect.batches.wire import check_reachable, fetch_batches
    from audit.collect.metadata.transactions import kafka_python_settings

    seg = cfg.segments
    source = seg.source if role == "source" else seg.destination
    if source.read == "files":
        scanned = scan_segments(
            spark, list(source.paths), ScanOptions(deep=seg.deep, split_bytes=seg.split_bytes), cfg.scope
        )
        note: dict[str, Any] = {
            "read": "files",
            "paths": [redact_uri(p) for p in source.paths],
            "deep": seg.deep,
            "duplicate_copies_ignored": [redact_uri(d) for d in scanned.duplicates],
        }
    elif source.read == "wire":
        if not (directory / "manifest.json").exists():
            raise InputError(
                f"{directory} is not a snapshot: a fetch reads the offset ranges of one; take it first "
                "with 'mirror-audit snapshot --config FILE --out RUN' and give RUN/source or RUN/destination"
            )
        cluster = cfg.cluster(role)
        settings = kafka_python_settings(cluster)
        if isinstance(settings, str):
            raise ConfigError(f"{role}: segments read: wire is not possible: {settings}")
        timeout_ms = int(cluster.timeout_seconds * 1000)
        taken_from = read_manifest(directory, role).get("cluster_id")
        check_reachable(role, cluster, settings, timeout_ms, taken_from)
        ranges, tiers = wire_ranges(directory)
        scanned = fetch_batches(
            spark,
            settings,
            ranges,
            deep=seg.deep,
            split_offsets=seg.split_offsets,
            max_bytes=seg.fetch_max_bytes,
            timeout_ms=timeout_ms,
            local_starts=tiers,
        )
        # How the fetch was cut, so a run can be told apart from one with other settings
        # (and a test can see that its split was the one applied).
        note = {
            "read": "wire",
            "bootstrap_servers": cluster.bootstrap_servers,
            "deep": seg.deep,
            "split_offsets": seg.split_offsets,
            "offset_ranges": scanned.ranges,
            "fetch_max_bytes": seg.fetch_max_bytes,
        }
    else:
        raise ConfigError(f"segments.{role}.read is 'none': nothing to collect")
    return write_batch_scan(spark, scanned, directory, role, note)
