"""The first missing record of each partition MM2-DATA-1 fails on, described for the report:
fetched from the source by the nightly that found it, while that cluster is at hand.

A bounded fetch: one record per partition, for at most ``limit`` partitions (those missing
the most records first), read by a consumer that joins no group and commits nothing. Its
key, value and header values are abbreviated as CM-DATA-1's first divergence shows them
(audit/collect/records/narrow.py). A record that cannot be fetched (gone to retention since
the scan, a read error) keeps its offset and says why. An audit of the same snapshots later
(``mirror-audit audit``) reads no cluster: it shows the offsets only.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from audit.collect.records.digests import isolation_of
from audit.collect.records.narrow import describe_record
from audit.collect.records.read import RangeReader, consumer_settings
from audit.config import AuditConfig

if TYPE_CHECKING:
    from audit.compare.run import Compared

log = logging.getLogger(__name__)

TABLE = "mm2_first_missing"
PARTITIONS = 20


def describe_first_missing(compared: Compared, cfg: AuditConfig, limit: int = PARTITIONS) -> int:
    """Register ``mm2_first_missing`` (a row per partition described) beside the run's
    comparison tables; returns how many partitions it describes."""
    if not compared.tables.has("mm2_record_partitions"):
        return 0
    found = compared.tables.rows(
        "SELECT topic, partition, first_missing_offset, missing_records FROM {mm2_record_partitions} "
        "WHERE in_scope AND missing_records > 0 "
        f"ORDER BY missing_records DESC, topic, partition LIMIT {int(limit)}"
    )
    rows: list[tuple[Any, ...]] = []
    if found:
        settings = consumer_settings(cfg.cluster("source").client_settings(), isolation_of("source", cfg))
        reader = RangeReader(settings, cfg.records.timeout_seconds)
        try:
            rows = [_fetch(reader, r) for r in found]
        finally:
            reader.close()
    compared.tables.put(TABLE, TABLE, rows)
    log.info("records (mm2): the first missing record of %d partition(s) described", len(rows))
    return len(rows)


def _fetch(reader: RangeReader, row: dict[str, Any]) -> tuple[Any, ...]:
    """(topic, partition, offset, missing_records, source_record, detail) of one partition."""
    topic, partition, offset = row["topic"], row["partition"], row["first_missing_offset"]
    described, detail = None, None
    try:
        for batch in reader.read(topic, partition, offset, offset + 1):
            match = [m for m in batch if m.offset() == offset]
            if match:
                described = describe_record(match[0])
                break
        else:
            detail = "no record at this offset on the source any more"
    except Exception as exc:  # a read error, the offset gone to retention: this partition only
        detail = f"not fetched: {type(exc).__name__}: {str(exc)[:200]}"
    return (topic, partition, offset, row["missing_records"], described, detail)
