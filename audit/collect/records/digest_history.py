"""Mode mm2's incremental record verification: per partition, the cut up to which earlier
nightly scans verified every record, kept in ``<output root>/mm2-record-verification.json``.

A cut is a matched pair (source offset u, replica offset d) such that the source records of
the compared range through u and the replica's through d are each other's copies one to
one, in order, with nothing missing, unexplained or duplicated before it (the columns
``clean_src_through`` and ``clean_dst_through`` of mm2_record_partitions). The next scan
judges only past it: the source from u + 1, the replica from d + 1. Where the replica holds
records past d, it also reads ``records.mm2_replay_lookback`` source offsets before u + 1,
judging none of them: a task restarted behind its last commit copies records from before
the cut again, and their contents tell those copies for duplicates, not for records no
source explains.

A cut advances only to before a partition's first finding, so every run finds a finding
again until retention removes it: a nightly never forgets a loss it reported once. A cut is
dropped, and the partition read from its log start, where its topic was recreated, where
either side's log start passed it (what followed it expired unverified) or where it lies
past either side's end (the topic was truncated or the replica rebuilt). ``--full`` and
``records.incremental: false`` read everything and judge from the start; the cut the run
finds is kept all the same.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from audit.collect.records.history import RecordHistory, stamp
from audit.config import AuditConfig
from audit.snapshot import PartitionRecord, RecordDigestCutRecord, read_manifest, read_records

log = logging.getLogger(__name__)

Key = tuple[str, int]


class DigestHistory(RecordHistory):
    FILE = "mm2-record-verification.json"
    FORMAT = "mirror-audit-mm2-record-verification/1"

    def cuts(
        self, src_parts: list[PartitionRecord], dst_parts: list[PartitionRecord], cfg: AuditConfig
    ) -> tuple[dict[Key, RecordDigestCutRecord], list[str]]:
        """The cuts this scan may judge from, by source partition, and why others were
        dropped (a line each)."""
        topic_ids = {p.topic: p.topic_id for p in src_parts}
        sources = {(p.topic, p.partition): p for p in src_parts}
        replicas = {(p.topic, p.partition): p for p in dst_parts}
        out: dict[Key, RecordDigestCutRecord] = {}
        dropped: list[str] = []
        for (topic, partition), entry in sorted(self.partitions(topic_ids).items()):
            src = sources.get((topic, partition))
            dst = replicas.get((cfg.mirror.mm2.remote_topic(topic), partition))
            try:
                cut = RecordDigestCutRecord(
                    topic,
                    partition,
                    int(entry["src_through"]),
                    int(entry["dst_through"]),
                    int(entry["verified_from"]),
                )
            except (KeyError, TypeError, ValueError):
                dropped.append(f"{topic}/{partition}: its entry is not a cut")
                continue
            why = _stale(cut, src, dst)
            if why is None:
                out[(topic, partition)] = cut
            elif src is not None and dst is not None:
                dropped.append(f"{topic}/{partition}: {why}")
        return out, dropped

    def settle(self, rows: list[dict[str, Any]], topic_ids: dict[str, str | None]) -> None:
        """Fold one run's cuts in (rows of mm2_record_partitions): a judged partition's cut
        is the one the run found (none: its entry goes, so a ``--full`` run that found a
        fault before an older cut is not overruled by it); an unjudged one keeps its own."""
        parts = self.data.setdefault("partitions", {})
        now = stamp()
        for row in rows:
            key = f"{row['topic']}/{int(row['partition'])}"
            if row.get("compared_src_records") is None:
                continue
            if row.get("clean_src_through") is None or row.get("clean_dst_through") is None:
                parts.pop(key, None)
                continue
            topic = row["topic"]
            parts[key] = {
                "topic_id": topic_ids.get(topic),
                "src_through": int(row["clean_src_through"]),
                "dst_through": int(row["clean_dst_through"]),
                "verified_from": int(row["verified_from"]),
                "updated_at": now,
            }
        self.data["runs"] = self.runs + 1


def _stale(
    cut: RecordDigestCutRecord, src: PartitionRecord | None, dst: PartitionRecord | None
) -> str | None:
    """Why a cut cannot be judged from in this snapshot (None: it can)."""
    if src is None or dst is None:
        return "the partition or its replica is gone"
    if cut.src_through + 1 < src.log_start_offset:
        return f"the source's log start ({src.log_start_offset}) passed the cut ({cut.src_through})"
    if cut.dst_through + 1 < dst.log_start_offset:
        return f"the replica's log start ({dst.log_start_offset}) passed the cut ({cut.dst_through})"
    if cut.src_through >= src.high_watermark or cut.dst_through >= dst.high_watermark:
        return "the cut lies past the end of a side (truncated, or rebuilt)"
    return None


def settle_run(
    cfg: AuditConfig, source: Path, destination: Path, run_dir: Path, state_root: Path, full: bool
) -> None:
    """After a nightly's comparison: keep the cuts it found for the next scan."""
    import pyarrow.parquet as pq

    table = run_dir / "compare" / "mm2_record_partitions.parquet"
    if not table.exists():
        return
    columns = [
        "topic",
        "partition",
        "compared_src_records",
        "clean_src_through",
        "clean_dst_through",
        "verified_from",
    ]
    rows = pq.read_table(table, columns=columns).to_pylist()
    src_parts = read_records(source, "partitions", PartitionRecord)
    clusters = (
        read_manifest(source, "source").get("cluster_id"),
        read_manifest(destination, "destination").get("cluster_id"),
    )
    history = DigestHistory.load(state_root, clusters, full)
    history.settle(rows, {p.topic: p.topic_id for p in src_parts})
    history.save()
    log.info("records (mm2): cuts of %d partitions kept in %s", len(rows), history.path)
