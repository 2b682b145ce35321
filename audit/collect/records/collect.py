"""One record-level verification run over a pair of snapshots (nightly, or
``mirror-audit records scan``): plan, read both clusters, land ``record_chunks`` in each
snapshot, narrow the mismatching chunks into ``record_divergences`` (destination), and
fold the outcome into the output root's history. Needs both clusters: the audit that
follows reads only the files, so it can be rerun offline.
"""

from __future__ import annotations

import dataclasses
import logging
import tempfile
import time
from pathlib import Path
from typing import Any

from audit.collect.batches.scan import BatchScan
from audit.collect.metadata.kafka_admin import KafkaAdmin, require_reachable
from audit.collect.metadata.snapshot import utc_now
from audit.collect.records.history import PartitionOutcome, RecordHistory
from audit.collect.records.narrow import narrow
from audit.collect.records.pairs import CHUNK_KEY, paired_chunks
from audit.collect.records.plan import RecordPlan, common_ranges, plan_records, read_range_rows
from audit.collect.records.read import resolve_reader, scan_records
from audit.collect.remote_tier import local_starts
from audit.config import AuditConfig
from audit.fsutil import atomic_write_json, replace_path
from audit.progress import spark_progress
from audit.snapshot import (
    PartitionRecord,
    ReadRangeRecord,
    read_manifest,
    read_records,
    read_table,
    write_table,
)

log = logging.getLogger(__name__)


def _empty(spark: Any, table: str, path: Path) -> None:
    from audit.schemas import spark_schema

    spark.createDataFrame([], spark_schema(table)).write.mode("overwrite").parquet(str(path))


def collect_records(
    spark: Any, cfg: AuditConfig, source: Path, destination: Path, output_root: Path, full: bool = False
) -> dict[str, Any]:
    """Verify the records of the snapshots' common ranges; returns the manifest note."""
    src_manifest = read_manifest(source, "source")
    dst_manifest = read_manifest(destination, "destination")
    clients = {
        "source": cfg.cluster("source").client_settings(),
        "destination": cfg.cluster("destination").client_settings(),
    }
    src_parts = read_records(source, "partitions", PartitionRecord)
    dst_parts = read_records(destination, "partitions", PartitionRecord)
    common = common_ranges(src_parts, dst_parts, cfg.scope.topic_in_scope)
    topic_ids = {p.topic: p.topic_id for p in src_parts}
    tier_starts = local_starts({"source": src_parts, "destination": dst_parts})
    history = RecordHistory.load(
        output_root, (src_manifest.get("cluster_id"), dst_manifest.get("cluster_id")), full
    )
    spans = {(p.topic, p.partition): (p.log_start_offset, p.high_watermark) for p in src_parts}
    source_admin = None
    if common:
        require_reachable("destination", cfg.cluster("destination"), dst_manifest.get("cluster_id"))
        source_admin = require_reachable("source", cfg.cluster("source"), src_manifest.get("cluster_id"))
    plan = _plan(cfg, source_admin, common, history.partitions(topic_ids), history.runs, full, spans)
    started = utc_now()
    with tempfile.TemporaryDirectory(prefix=".records.", dir=destination.parent) as tmp:
        staging = Path(tmp)
        reader = resolve_reader(clients, cfg.records)
        records = scan_records(spark, plan, clients, cfg.records, reader)
        clock = time.monotonic()
        with spark_progress(spark, "records scan"):
            records.rows.write.partitionBy("side").mode("overwrite").parquet(str(staging / "chunks"))
        log.info("records: both sides read and checksummed in %.1fs", time.monotonic() - clock)
        problems = BatchScan(records.rows, records.issues).collected_issues()
        read = read_range_rows(
            records.ranges, records.reads.value, lambda _: cfg.records.isolation, tier_starts
        )
        for side, directory in (("source", source), ("destination", destination)):
            part = staging / "chunks" / f"side={side}"
            if not part.exists():
                _empty(spark, "record_chunks", part)
            replace_path(part, directory / "record_chunks.parquet")
            write_table(directory, "record_chunk_ranges", tuple(r for s, r in read if s == side))
        mismatches = _mismatching_chunks(spark, source, destination)
        divergences = staging / "record_divergences.parquet"
        if mismatches.limit(1).count():
            clock = time.monotonic()
            with spark_progress(spark, "records narrowing"):
                narrowed_rows = narrow(spark, mismatches, clients, cfg.records)
                narrowed_rows.write.mode("overwrite").parquet(str(divergences))
            log.info("records: mismatching chunks narrowed in %.1fs", time.monotonic() - clock)
        else:
            _empty(spark, "record_divergences", divergences)
        replace_path(divergences, destination / "record_divergences.parquet")
        narrowed = spark.read.parquet(str(destination / "record_divergences.parquet"))
        outcomes = _outcomes(plan, mismatches, narrowed, unread_spans(read))
    history.record(outcomes, topic_ids)
    history.save()
    note = {
        "started_at": started,
        "finished_at": utc_now(),
        "isolation": cfg.records.isolation,
        "reader": reader,
        "chunk_records": cfg.records.chunk_records,
        "full": full,
        "ranges": len(plan.ranges),
        "offsets_planned": plan.offsets(),
        "compacted_topics": sorted(plan.compacted),
        "issues": [dataclasses.asdict(p) for p in problems[:50]],
        "unreadable_ranges": len(problems),
        "notes": list(plan.notes),
        "coverage": _coverage(history.partitions(topic_ids), plan),
    }
    for directory, manifest in ((source, src_manifest), (destination, dst_manifest)):
        manifest.setdefault("notes", {})["records"] = note
        atomic_write_json(directory / "manifest.json", manifest)
    log.info(
        "records: %d ranges, %d offsets per side, %d unreadable ranges",
        len(plan.ranges),
        plan.offsets(),
        len(problems),
    )
    return note


def _plan(
    cfg: AuditConfig,
    admin: KafkaAdmin | None,
    common: dict[tuple[str, int], tuple[int, int]],
    verified: dict[tuple[str, int], dict[str, Any]],
    runs: int,
    full: bool,
    spans: dict[tuple[str, int], tuple[int, int]],
) -> RecordPlan:
    """The plan, asking the source for what the scope and budget need: offsets for the
    time windows, partition sizes for a byte budget. ``admin``: the source's, when the
    reachability check already opened one."""
    from audit.collect.metadata.log_dirs import estimated_bytes_per_offset

    admin = admin or KafkaAdmin("source", cfg.cluster("source"))
    per_offset = None
    if cfg.records.max_bytes_per_run:
        in_plan = {tp: spans[tp] for tp in common if tp in spans}
        per_offset = estimated_bytes_per_offset("source", cfg.cluster("source"), in_plan)
    plan = plan_records(common, cfg.records, verified, full, admin.offsets_for_times, runs, per_offset)
    compacted = admin.compacted_topics(sorted({t for t, _ in common}))
    return dataclasses.replace(plan, compacted=compacted)


def _mismatching_chunks(spark: Any, source: Path, destination: Path) -> Any:
    """Chunks (of either side) that do not agree with the other side's: the ones narrowed."""
    pairs = paired_chunks(
        read_table(spark, source, "record_chunks"), read_table(spark, destination, "record_chunks")
    )
    return pairs.where("NOT agree").select(*CHUNK_KEY, "compacted")


def unread_spans(read: list[tuple[str, ReadRangeRecord]]) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """Per partition, the offsets either side's scan did not read ([read_to, end) of each
    range that stopped short), merged and in order."""
    spans: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for _, r in read:
        if not r.complete and r.read_to < r.end_offset:
            spans.setdefault((r.topic, r.partition), []).append((r.read_to, r.end_offset))
    merged: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for tp, found in spans.items():
        out: list[tuple[int, int]] = []
        for a, b in sorted(found):
            if out and a <= out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], b))
            else:
                out.append((a, b))
        merged[tp] = out
    return merged


def _overlaps(chunk: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    return any(chunk[0] < b and a < chunk[1] for a, b in spans)


def _outcomes(
    plan: RecordPlan,
    mismatches: Any,
    narrowed: Any,
    unread: dict[tuple[str, int], list[tuple[int, int]]],
) -> dict[tuple[str, int], PartitionOutcome]:
    """Per partition: its new range, the first mismatching, unverified or unreadable
    offset, the mismatched chunks (a partition's worth of chunk bounds: metadata-sized) and
    the ``unread`` spans (from the ranges' read accounts, the one record of where a scan
    stopped: a range that failed, or that no task reported). A chunk that differs where a
    side's scan stopped short differs because it was not read: it is unreadable, not
    mismatched.

    On a compacted topic a differing chunk narrowed to ``compaction_only`` is verified
    (the cleaners kept different offsets, nothing else), and one left un-narrowed by the
    cap is not verified yet but not mismatched either: it holds ``verified_through``
    back, so the next run reads and narrows it again."""
    from pyspark.sql import functions as F

    keys = ["topic", "partition", "chunk_start", "chunk_end"]
    kinds = narrowed.select(*keys, "kind")
    unresolved = (
        mismatches.join(kinds, keys, "left")
        .where(~(F.col("compacted") & F.col("kind").eqNullSafe(F.lit("compaction_only"))))
        .withColumn("unverified", F.col("compacted") & F.col("kind").isNull())
    )
    bad: dict[tuple[str, int], list[tuple[int, int]]] = {}
    stops: dict[tuple[str, int], int] = {}
    rows = (
        unresolved.groupBy("topic", "partition")
        .agg(
            F.sort_array(F.collect_list(F.struct("chunk_start", "chunk_end", "unverified"))).alias("chunks"),
        )
        .collect()
    )
    for r in rows:
        tp = (r["topic"], r["partition"])
        stops[tp] = r["chunks"][0]["chunk_start"]
        bad[tp] = [
            (c["chunk_start"], c["chunk_end"])
            for c in r["chunks"]
            if not c["unverified"] and not _overlaps((c["chunk_start"], c["chunk_end"]), unread.get(tp, []))
        ]
    out = {}
    new = {(r.topic, r.partition): (r.start, r.end) for r in plan.ranges if r.purpose == "new"}
    touched = {(r.topic, r.partition) for r in plan.ranges}
    for tp in touched:
        starts = [stops[tp]] if tp in stops else []
        starts += [unread[tp][0][0]] if unread.get(tp) else []
        out[tp] = PartitionOutcome(
            new.get(tp), min(starts) if starts else None, tuple(bad.get(tp, [])), tuple(unread.get(tp, []))
        )
    return out


def _coverage(
    parts: dict[tuple[str, int], dict[str, Any]], plan: RecordPlan, limit: int = 50
) -> dict[str, Any]:
    """Per partition: verified, mismatched, unreadable (a side's scan stopped short there)
    and not-yet-verified ranges of the common range (the partitions with mismatched or
    unreadable ranges first, at most ``limit``), and totals."""
    rows: list[dict[str, Any]] = []
    totals = {"verified": 0, "mismatched": 0, "unreadable": 0, "not_verified": 0}
    for tp, (lo, hi) in sorted(plan.common.items()):
        entry = parts.get(tp, {})
        through = min(max(int(entry.get("verified_through", lo)), lo), hi)
        listed = [(a, b, state) for state in ("mismatched", "unreadable") for a, b in entry.get(state) or []]
        found = sorted((max(lo, a), min(hi, b), state) for a, b, state in listed if b > lo and a < hi)
        ranges: list[dict[str, Any]] = []
        cursor = lo
        for first, b, state in found:
            a = max(first, cursor)
            if a >= b:
                continue
            if a > cursor:
                ranges.append(
                    {"start": cursor, "end": a, "state": "verified" if a <= through else "not_verified"}
                )
            ranges.append({"start": a, "end": b, "state": state})
            cursor = b
        if cursor < through:
            ranges.append({"start": cursor, "end": through, "state": "verified"})
            cursor = through
        if cursor < hi:
            ranges.append({"start": cursor, "end": hi, "state": "not_verified"})
        for r in ranges:
            totals[r["state"]] += r["end"] - r["start"]
        rows.append({"topic": tp[0], "partition": tp[1], "ranges": ranges})
    rows.sort(
        key=lambda r: (
            not any(x["state"] in ("mismatched", "unreadable") for x in r["ranges"]),
            r["topic"],
            r["partition"],
        )
    )
    return {"totals": totals, "partitions": rows[:limit], "partitions_total": len(rows)}
