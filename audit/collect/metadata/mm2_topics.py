"""MirrorMaker 2's own state, read from its internal topics (mode mm2).

The offset-syncs topic lives on the source by default (``offset-syncs.topic.location``),
the checkpoints topic on the target; each table goes into the snapshot of the cluster it
was read from. Every record is kept with its offset and timestamp, so a later stage can
see history (monotonicity, restarts), not only the latest value. A record that does not
decode is counted in the manifest's notes with the reason, never allowed to stop the run.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from audit.collect.metadata.kafka_admin import KafkaAdmin, RawRecord
from audit.collect.metadata.mm2_formats import (
    Mm2RecordError,
    decode_checkpoint,
    decode_offset_sync,
    decode_source_position,
)
from audit.config import Mm2Config
from audit.snapshot import Mm2CheckpointRecord, Mm2OffsetSyncRecord, Mm2PositionRecord

log = logging.getLogger(__name__)

MAX_REASONS = 5

Row = TypeVar("Row", Mm2OffsetSyncRecord, Mm2CheckpointRecord, Mm2PositionRecord)


@dataclass
class _Tally:
    """What reading one internal topic found, for the manifest's notes."""

    topic: str
    records: int = 0
    decoded: int = 0
    # Decoded, and another flow's (Connect's offsets topic holds every connector's): left out.
    others: int = 0
    corrupt: int = 0
    unknown_version: Counter[int] = field(default_factory=Counter)
    reasons: list[str] = field(default_factory=list)

    def bad(self, exc: Mm2RecordError, partition: int, offset: int) -> None:
        if exc.unknown_version is not None:
            self.unknown_version[exc.unknown_version] += 1
        else:
            self.corrupt += 1
        if len(self.reasons) < MAX_REASONS:
            self.reasons.append(f"partition {partition} offset {offset}: {exc}")

    def note(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "records": self.records,
            "decoded": self.decoded,
            **({"other_flows": self.others} if self.others else {}),
            "corrupt": self.corrupt,
            "unknown_version": {str(k): v for k, v in sorted(self.unknown_version.items())},
            "examples": self.reasons,
        }


@dataclass(frozen=True)
class Mm2Tables:
    offset_syncs: tuple[Mm2OffsetSyncRecord, ...] | None
    checkpoints: tuple[Mm2CheckpointRecord, ...] | None
    notes: dict[str, Any]
    positions: tuple[Mm2PositionRecord, ...] | None = None


def _syncs_here(role: Literal["source", "destination"], mm2: Mm2Config) -> bool:
    return (mm2.offset_syncs_topic_location == "source") == (role == "source")


def _positions_here(role: Literal["source", "destination"], mm2: Mm2Config) -> bool:
    return (mm2.connect_offsets_topic_location == "source") == (role == "source")


def mm2_topics_on(role: Literal["source", "destination"], mm2: Mm2Config) -> list[str]:
    """The MirrorMaker 2 topics a snapshot of this cluster reads: the offset syncs where
    ``offset-syncs.topic.location`` puts them, the checkpoints on the target, Connect's
    offsets topic where ``connect_offsets_topic_location`` puts it."""
    return [
        *([mm2.offset_syncs_topic_name()] if _syncs_here(role, mm2) else []),
        *([mm2.checkpoints_topic_name()] if role == "destination" else []),
        *([mm2.connect_offsets_topic_name()] if _positions_here(role, mm2) else []),
    ]


def collect_mm2(admin: KafkaAdmin, role: Literal["source", "destination"], mm2: Mm2Config) -> Mm2Tables:
    """Read whichever of MM2's internal topics live on this cluster (``mm2_topics_on``)."""
    notes: dict[str, Any] = {}
    syncs = (
        _read(admin, mm2.offset_syncs_topic_name(), "mm2_offset_syncs", _sync_row, notes)
        if _syncs_here(role, mm2)
        else None
    )
    checkpoints = (
        _read(admin, mm2.checkpoints_topic_name(), "mm2_checkpoints", _checkpoint_row, notes)
        if role == "destination"
        else None
    )
    positions = (
        _read(admin, mm2.connect_offsets_topic_name(), "mm2_positions", _position_reader(mm2), notes)
        if _positions_here(role, mm2)
        else None
    )
    return Mm2Tables(syncs, checkpoints, notes, positions)


def _position_reader(mm2: Mm2Config) -> Callable[[RawRecord], Mm2PositionRecord | None]:
    """The positions of this flow's MirrorSourceConnector; another connector's record is
    None (left out, counted in the note)."""

    def to_row(r: RawRecord) -> Mm2PositionRecord | None:
        p = decode_source_position(r.key, r.value, mm2.source_connector, mm2.source_alias)
        if p is None:
            return None
        return Mm2PositionRecord(p.topic, p.partition, p.offset, r.partition, r.offset, r.timestamp_ms)

    return to_row


def _sync_row(r: RawRecord) -> Mm2OffsetSyncRecord:
    s = decode_offset_sync(r.key, r.value)
    return Mm2OffsetSyncRecord(
        s.topic, s.partition, s.upstream_offset, s.downstream_offset, r.partition, r.offset, r.timestamp_ms
    )


def _checkpoint_row(r: RawRecord) -> Mm2CheckpointRecord:
    c = decode_checkpoint(r.key, r.value)
    return Mm2CheckpointRecord(
        c.group_id,
        c.topic,
        c.partition,
        c.upstream_offset,
        c.downstream_offset,
        c.metadata or None,  # MM2 writes "" for no metadata
        r.partition,
        r.offset,
        r.timestamp_ms,
    )


def _read(
    admin: KafkaAdmin,
    topic: str,
    table: str,
    to_row: Callable[[RawRecord], Row | None],
    notes: dict[str, Any],
) -> tuple[Row, ...] | None:
    """Every decodable record of ``topic`` as a row (None from ``to_row``: another flow's,
    left out); what did not decode goes to ``notes``."""
    raw = admin.read_topic(topic)
    if raw is None:
        notes[table] = {"topic": topic, "missing": True}
        log.warning("%s: MirrorMaker 2 topic %s does not exist", admin.role, topic)
        return None
    tally = _Tally(topic, records=len(raw))
    rows = []
    for r in raw:
        try:
            row = to_row(r)
        except Mm2RecordError as exc:
            tally.bad(exc, r.partition, r.offset)
            continue
        if row is None:
            tally.others += 1
        else:
            rows.append(row)
    tally.decoded = len(rows) + tally.others
    notes[table] = tally.note()
    bad = tally.records - tally.decoded
    if bad:
        log.warning(
            "%s: %d of %d records in %s could not be decoded (first: %s)",
            admin.role,
            bad,
            tally.records,
            topic,
            tally.reasons[0],
        )
    return tuple(rows)
