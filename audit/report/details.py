"""The per-invariant details summary.json and the report show beside the counts: the
first divergent batch and record per partition, the record scan's coverage and the ranges
it could not read, and the open transactions behind CM-TXN-1.

Every detail is read from the tables the compare stage registered in the engine (never the
snapshot directories again): batch and record rows grow with the data, so their slices are
SQL run by the engine that holds the table, sorted and limited before anything reaches the
driver; the rest comes from the snapshots' manifests.
"""

from __future__ import annotations

from typing import Any

from audit.compare.run import Compared
from audit.schemas import BATCH_SIDE, columns
from audit.validate.invariants import with_details

DIVERGENCE_PARTITIONS = 20
OPEN_TRANSACTIONS_SHOWN = 50


def _first_per_partition(
    table: str, where: str, order: str, count_as: str, limit: int, select: str = "*"
) -> str:
    """SQL for the first row by ``order`` of each partition among ``table``'s rows matching
    ``where``, with how many such rows the partition has (``count_as``); the partitions
    with the most first, at most ``limit``: a bounded slice, sorted and limited by the
    engine that holds the table before anything reaches this process."""
    return f"""
SELECT {select} FROM (
  SELECT t.*,
    row_number() OVER (PARTITION BY topic, partition ORDER BY {order}) AS first_n,
    count(*) OVER (PARTITION BY topic, partition) AS {count_as}
  FROM {{{table}}} t
  WHERE {where}
) ranked
WHERE first_n = 1
ORDER BY {count_as} DESC, topic, partition
LIMIT {int(limit)}"""


def first_batch_divergence(compared: Compared, limit: int = DIVERGENCE_PARTITIONS) -> list[dict[str, Any]]:
    """Per partition, the first batch that is not the same on both sides, with both
    headers side by side ("fields": name, source, destination), at most ``limit``
    partitions (the worst first: the most differing batches). Empty when batches were not
    compared."""
    if not compared.tables.has("batch_diffs"):
        return []
    sql = _first_per_partition(
        "batch_diffs",
        "in_scope AND batch_status != 'same'",
        "base_offset",
        "differing_batches",
        limit,
        select="*, batch_status AS status",
    )
    out = []
    for row in compared.tables.rows(sql):
        out.append(
            {
                "topic": row["topic"],
                "partition": row["partition"],
                "base_offset": row["base_offset"],
                "status": row["status"],
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
    if not compared.tables.has("record_chunk_diffs"):
        return []
    select = (
        "topic, partition, chunk_start, chunk_end, chunk_status, differing_chunks, "
        "divergence_offset AS offset, divergence_kind AS kind, source_record, destination_record"
    )
    sql = _first_per_partition(
        "record_chunk_diffs",
        "in_scope AND chunk_status NOT IN ('same', 'tolerated', 'unverified')",
        "chunk_start",
        "differing_chunks",
        limit,
        select,
    )
    return compared.tables.rows(sql)


# --------------------------------------------------------------------------- all of them


def invariant_details(
    compared: Compared, src_manifest: dict[str, Any], dst_manifest: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """Per invariant ID, what summary.json adds to its entry: each kind of detail goes to
    the invariants that declare it (``Invariant.details``)."""
    by_kind: dict[str, dict[str, Any]] = {"open_transactions": _open_transactions(compared, src_manifest)}
    if "mirror_states" in compared.frames:
        by_kind["mirror_state"] = _mirror_state(compared, dst_manifest, src_manifest)
    if compared.tables.has("batch_diffs"):
        by_kind["batch_divergence"] = {"first_divergence": first_batch_divergence(compared)}
    if compared.tables.has("record_chunk_diffs"):
        records_note = (dst_manifest.get("notes") or {}).get("records") or {}
        by_kind["record_divergence"] = {
            "first_divergence": first_record_divergence(compared),
            "coverage": records_note.get("coverage"),
            "isolation": records_note.get("isolation"),
            "unreadable_ranges": _unreadable_ranges(records_note),
        }
    if compared.tables.has("mm2_first_missing"):
        by_kind["mm2_first_missing"] = {
            "first_missing": compared.tables.rows(
                "SELECT * FROM {mm2_first_missing} ORDER BY missing_records DESC, topic, partition"
            )
        }
    if compared.tables.has("mm2_record_partitions"):
        by_kind["mm2_matching"] = {"matching": mm2_matching(compared)}
    details: dict[str, dict[str, Any]] = {}
    for kind, fields in by_kind.items():
        for inv_id in with_details(kind):
            details.setdefault(inv_id, {}).update(fields)
    return details


def mm2_matching(compared: Compared, limit: int = 20) -> dict[str, Any]:
    """How mode mm2's records were matched (``mm2_record_partitions.matching``): the
    partitions the aligner answered as they streamed, and those it left to the row-per-record
    matching, with why (a gap or a replay longer than its window, digests out of order):
    the same answers either way, but the fallbacks cost a partition's records as rows, so
    the run says which they were."""
    (counts,) = compared.tables.rows(
        "SELECT count(CASE WHEN matching = 'aligned' THEN 1 END) AS aligned,"
        " count(CASE WHEN matching LIKE 'row by row%' THEN 1 END) AS row_by_row"
        " FROM {mm2_record_partitions}"
    )
    rows = compared.tables.rows(
        "SELECT topic, partition, matching FROM {mm2_record_partitions}"
        f" WHERE matching LIKE 'row by row%' ORDER BY topic, partition LIMIT {int(limit)}"
    )
    fallbacks = [
        {"topic": r["topic"], "partition": r["partition"], "why": r["matching"].removeprefix("row by row: ")}
        for r in rows
    ]
    return {"aligned": counts["aligned"], "row_by_row": counts["row_by_row"], "fallbacks": fallbacks}


def _mirror_state(compared: Compared, *manifests: dict[str, Any]) -> dict[str, Any]:
    """Where the mirror's state came from. The stopped partitions whose checks could not
    run (a state without a last mirrored offset) are the invariant's coverage gaps."""
    for manifest in manifests:
        note = (manifest.get("notes") or {}).get("mirror_state")
        if note:
            return {"mirror_state": note}
    return {}


def _unreadable_ranges(records_note: dict[str, Any]) -> dict[str, Any]:
    """The record scan's ranges that could not be read, from its manifest note: their rows
    are unchecked (``record_chunk_ranges``), and this says where and why the reads failed."""
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


def _open_transactions(compared: Compared, manifest: dict[str, Any]) -> dict[str, Any]:
    """The open transactions (CM-TXN-1's details) named as `kafka-transactions find-hanging` does
    (transactional id, producer id/epoch, partition, start), coordinator and partition side,
    where the source allowed the transaction admin calls; otherwise says why not. Read from
    the engine's copy of the source's table (the compare stage registered it), the first
    ``OPEN_TRANSACTIONS_SHOWN`` in a stable order."""
    note = (manifest.get("notes") or {}).get("open_transactions", "not collected")
    if not compared.tables.collected("src_open_transactions"):
        return {"open_transactions": [], "open_transactions_source": note}
    names = ", ".join(c.name for c in columns("open_transactions"))
    rows = compared.tables.rows(
        f"SELECT {names} FROM {{src_open_transactions}} "
        "ORDER BY side, transactional_id NULLS FIRST, producer_id, topic NULLS FIRST, partition NULLS FIRST "
        f"LIMIT {OPEN_TRANSACTIONS_SHOWN}"
    )
    return {"open_transactions": rows, "open_transactions_source": note}
