"""The per-invariant details summary.json and the report show beside the counts: the
first divergent batch and record per partition, the record scan's coverage and the ranges
it could not read, and the open transactions behind CM-TXN-1.

Batch and record rows grow with the data, so their slices are taken in Spark (sorted and
limited before anything reaches the driver); the rest comes from the snapshots' manifests
and small tables.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from audit.compare.run import Compared
from audit.schemas import BATCH_SIDE

DIVERGENCE_PARTITIONS = 20


def _first_per_partition(bad: Any, order: str, count_as: str, limit: int) -> Any:
    """The first row by ``order`` of each partition among ``bad`` rows, with how many bad
    rows the partition has (``count_as``); the partitions with the most first, at most
    ``limit`` (a bounded slice: Spark sorts and limits before anything reaches the driver)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    per_partition = Window.partitionBy("topic", "partition")
    return (
        bad.withColumn("n", F.row_number().over(per_partition.orderBy(order)))
        .withColumn(count_as, F.count("*").over(per_partition))
        .where("n = 1")
        .orderBy(F.desc(count_as), "topic", "partition")
        .limit(limit)
    )


def first_batch_divergence(compared: Compared, limit: int = DIVERGENCE_PARTITIONS) -> list[dict[str, Any]]:
    """Per partition, the first batch that is not the same on both sides, with both
    headers side by side ("fields": name, source, destination), at most ``limit``
    partitions (the worst first: the most differing batches). Empty when batches were not
    compared."""
    df = compared.frames.get("batch_diffs")
    if df is None:
        return []

    first = _first_per_partition(
        df.where("in_scope AND batch_status != 'same'"), "base_offset", "differing_batches", limit
    )
    out = []
    for r in first.collect():
        row = r.asDict()
        out.append(
            {
                "topic": row["topic"],
                "partition": row["partition"],
                "base_offset": row["base_offset"],
                "status": row["batch_status"],
                "differing_fields": row["differing_fields"],
                "differing_batches": row["differing_batches"],
                "fields": [
                    {"name": f, "source": row.get(f"src_{f}"), "destination": row.get(f"dst_{f}")}
                    for f in BATCH_SIDE  # the header fields both sides keep (control_type: a marker)
                ],
            }
        )
    return out


# --------------------------------------------------------------------------- record level


def first_record_divergence(compared: Compared, limit: int = DIVERGENCE_PARTITIONS) -> list[dict[str, Any]]:
    """Per partition, its first chunk that is not the same on both sides, with the first
    divergent record where the chunk was narrowed (offset, kind, both sides abbreviated),
    the partitions with the most differing chunks first, at most ``limit``."""
    df = compared.frames.get("record_chunk_diffs")
    if df is None:
        return []
    from pyspark.sql import functions as F

    bad = df.where("in_scope AND chunk_status NOT IN ('same', 'tolerated', 'unverified')")
    first = _first_per_partition(bad, "chunk_start", "differing_chunks", limit).select(
        "topic",
        "partition",
        "chunk_start",
        "chunk_end",
        "chunk_status",
        "differing_chunks",
        F.col("divergence_offset").alias("offset"),
        F.col("divergence_kind").alias("kind"),
        "source_record",
        "destination_record",
    )
    return [r.asDict() for r in first.collect()]


# --------------------------------------------------------------------------- all of them


def invariant_details(
    compared: Compared, source: Path, src_manifest: dict[str, Any], dst_manifest: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """Per invariant ID, what summary.json adds to its entry."""
    details = _open_transactions(source, src_manifest)
    if "mirror_states" in compared.frames:
        details["CM-FAILOVER-1"] = _mirror_state(compared, dst_manifest, src_manifest)
    if compared.engine == "spark" and "batch_diffs" in compared.frames:
        details["CM-DATA-2"] = {"first_divergence": first_batch_divergence(compared)}
    if compared.engine == "spark" and "record_chunk_diffs" in compared.frames:
        records_note = (dst_manifest.get("notes") or {}).get("records") or {}
        details["CM-DATA-1"] = {
            "first_divergence": first_record_divergence(compared),
            "coverage": records_note.get("coverage"),
            "isolation": records_note.get("isolation"),
            "unreadable_ranges": _unreadable_ranges(records_note),
        }
    return details


def _mirror_state(compared: Compared, *manifests: dict[str, Any]) -> dict[str, Any]:
    """Where the mirror's state came from. The stopped partitions whose checks could not
    run (a state without a last mirrored offset) are the invariant's coverage gaps."""
    for manifest in manifests:
        note = (manifest.get("notes") or {}).get("mirror_state")
        if note:
            return {"mirror_state": note}
    return {}


def _unreadable_ranges(records_note: dict[str, Any]) -> dict[str, Any]:
    """The record scan's ranges that could not be read, from its manifest note: their
    chunks are absent on that side and show as missing there, which without this would
    read as lost data rather than as a read that failed."""
    issues = records_note.get("issues") or []
    first = [
        {
            "topic": i.get("topic"),
            "partition": i.get("partition"),
            "offset": i.get("position"),
            "detail": i.get("detail"),
        }
        for i in issues[:20]
    ]
    return {"total": int(records_note.get("unreadable_ranges", len(issues))), "first": first}


def _open_transactions(source: Path, manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """CM-TXN-1 names the open transactions as `kafka-transactions find-hanging` does
    (transactional id, producer id/epoch, partition, start), coordinator and partition side,
    where the source allowed the transaction admin calls; otherwise says why not."""
    from audit.snapshot import OpenTransactionRecord, check_table, read_records

    note = (manifest.get("notes") or {}).get("open_transactions", "not collected")
    if not check_table(source, "open_transactions"):
        return {"CM-TXN-1": {"open_transactions": [], "open_transactions_source": note}}
    rows = [asdict(r) for r in read_records(source, "open_transactions", OpenTransactionRecord)]
    return {"CM-TXN-1": {"open_transactions": rows[:50], "open_transactions_source": note}}
