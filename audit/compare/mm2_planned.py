"""The ranges mode mm2's records scan matches as it reads (collect/records/digests.py): the
comparison's own ranges step (``mm2_record_ranges``, mm2_records.py) and the aligner's
parameters of it (mm2_alignment.PARAMS), run in process by DuckDB before the scan, over the
reads the scan plans as if each were read whole.

Why the comparison's definition and not one of the scan's: the comparison takes a tally the
scan made only where its own range, computed afterwards from what was read, is the one the
scan aligned (mm2_alignment.py compares every column of it). Where each read is whole, the
inputs are the same rows, so the ranges are; where one stopped short, they may differ, and
the scan keeps that partition's digests for the comparison to match again. Metadata only: a
row per partition and per offset sync.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from audit.compare.mm2_alignment import PARAMS
from audit.compare.mm2_records import RANGES
from audit.compare.scope import topic_name_rows, topic_scope_rows
from audit.config import AuditConfig
from audit.snapshot import PartitionRecord, ReadRangeRecord, RecordDigestCutRecord, check_table

Key = tuple[str, int]  # a source partition: topic, partition
# The aligner's ranges straight from the ranges step's inputs, in one query.
PLANNED = PARAMS.replace("{mm2_record_ranges}", f"({RANGES})")


def planned_ranges(
    source: Path,
    destination: Path,
    cfg: AuditConfig,
    partitions: dict[str, list[PartitionRecord]],
    reads: list[tuple[str, ReadRangeRecord]],
    cuts: dict[Key, RecordDigestCutRecord],
) -> dict[Key, dict[str, Any]]:
    """Per source partition with a compared range, its ``PARAMS`` row, from both snapshots'
    ``partitions`` (``partitions`` by side) and offset syncs, the planned ``reads`` (side,
    row: each read whole) and the ``cuts`` judged from."""
    from audit.compare.engines import LocalTables

    tables = LocalTables()
    for side, prefix in (("source", "src_"), ("destination", "dst_")):
        tables.put(prefix + "partitions", "partitions", [dataclasses.astuple(p) for p in partitions[side]])
        rows = [dataclasses.astuple(r) for s, r in reads if s == side]
        tables.put(prefix + "record_digest_ranges", "record_digest_ranges", rows)
    cut_rows = [dataclasses.astuple(c) for c in cuts.values()]
    tables.put("src_record_digest_cuts", "record_digest_cuts", cut_rows)
    src_topics = {p.topic for p in partitions["source"]}
    pairs = topic_name_rows(src_topics, {p.topic for p in partitions["destination"]}, cfg)
    tables.put("topic_names", "topic_names", pairs)
    topics = src_topics | {t for t, _ in pairs}
    tables.put("topic_scope", "topic_scope", topic_scope_rows(topics, cfg.scope.mm2_topic_in_scope))
    for directory in (source, destination):  # as the comparison loads them (compare/run.py)
        if check_table(directory, "mm2_offset_syncs"):
            tables.load("offset_syncs", directory, "mm2_offset_syncs")
            break
    else:
        tables.put("offset_syncs", "mm2_offset_syncs", [])
    return {(r["topic"], r["partition"]): r for r in tables.rows(PLANNED)}
