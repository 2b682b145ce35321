"""Collecting MirrorMaker 2's internal topics: which cluster holds which table, names from
the configuration, corrupt records counted with their reasons and never fatal.

The admin here is a stand-in that returns given raw records (pure logic); reading real
topics written by a real MirrorMaker 2 is tests/integration/test_mm2_sandbox.py."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from audit.collect.metadata.kafka_admin import KafkaAdmin, RawRecord
from audit.collect.metadata.mm2_topics import collect_mm2
from audit.config import Mm2Config
from audit.config_file import parse_config
from audit.snapshot import Mm2CheckpointRecord, Snapshot, make_manifest, read_records, write_snapshot


def _s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def _sync(topic: str, partition: int, up: int, down: int, offset: int) -> RawRecord:
    return RawRecord(
        0, offset, 1000 + offset, _s(topic) + struct.pack(">i", partition), struct.pack(">qq", up, down)
    )


def _ckpt(group: str, topic: str, up: int, down: int, offset: int, version: int = 0) -> RawRecord:
    value = struct.pack(">hqq", version, up, down) + _s("")
    return RawRecord(0, offset, 2000 + offset, _s(group) + _s(topic) + struct.pack(">i", 0), value)


class _Admin(KafkaAdmin):
    """A KafkaAdmin that connects nowhere: ``read_topic`` (all ``collect_mm2`` calls)
    returns the given records; ``__init__`` skips the real one and its client."""

    def __init__(self, role: str, topics: dict[str, list[RawRecord]]) -> None:
        self.role = role
        self.topics = topics
        self.read: list[str] = []

    def read_topic(self, topic: str) -> list[RawRecord] | None:
        self.read.append(topic)
        return self.topics.get(topic)


def test_default_names_and_locations() -> None:
    mm2 = Mm2Config()
    src = _Admin("source", {"mm2-offset-syncs.target.internal": [_sync("orders", 0, 10, 4, 0)]})
    dst = _Admin("destination", {"source.checkpoints.internal": [_ckpt("g", "orders", 10, 4, 0)]})
    on_src = collect_mm2(src, "source", mm2)
    on_dst = collect_mm2(dst, "destination", mm2)
    assert src.read == ["mm2-offset-syncs.target.internal"]
    assert dst.read == ["source.checkpoints.internal", "mm2-offsets.source.internal"]
    assert on_src.checkpoints is None and on_dst.offset_syncs is None
    assert on_src.offset_syncs is not None and on_src.offset_syncs[0].downstream_offset == 4
    assert on_dst.checkpoints is not None and on_dst.checkpoints[0].group_id == "g"
    assert on_dst.checkpoints[0].metadata is None  # MM2 writes "" for no metadata


def test_offset_syncs_on_the_target_and_custom_names() -> None:
    mm2 = Mm2Config(
        source_alias="dc1",
        target_alias="dc2",
        offset_syncs_topic_location="target",
        checkpoints_topic="custom.checkpoints",
    )
    dst = _Admin("destination", {})
    tables = collect_mm2(dst, "destination", mm2)
    # Named after the cluster it is not on: the real MirrorMaker 2 creates
    # mm2-offset-syncs.source.internal on the target (tests/integration/test_mm2_records_live.py).
    assert dst.read == ["mm2-offset-syncs.dc1.internal", "custom.checkpoints", "mm2-offsets.dc1.internal"]
    assert tables.offset_syncs is None and tables.checkpoints is None  # both topics missing
    assert tables.notes["mm2_checkpoints"] == {"topic": "custom.checkpoints", "missing": True}
    assert mm2.remote_topic("orders") == "dc1.orders"
    assert (mm2.source_topic("dc1.orders"), mm2.source_topic("orders"), mm2.source_topic("dc2.x")) == (
        "orders",
        None,
        None,
    )
    assert Mm2Config(replication_policy="identity").remote_topic("orders") == "orders"


def test_corrupt_and_unknown_version_records_are_counted_not_fatal() -> None:
    records = [
        _ckpt("g", "orders", 10, 4, 0),
        RawRecord(0, 1, None, b"\x00", b"\x00"),
        _ckpt("g", "orders", 12, 6, 2, version=3),
        _ckpt("g", "orders", 14, 8, 3),
    ]
    tables = collect_mm2(
        _Admin("destination", {"source.checkpoints.internal": records}), "destination", Mm2Config()
    )
    assert tables.checkpoints is not None
    assert [c.record_offset for c in tables.checkpoints] == [0, 3]
    note = tables.notes["mm2_checkpoints"]
    assert (note["records"], note["decoded"], note["corrupt"], note["unknown_version"]) == (4, 2, 1, {"3": 1})
    assert note["examples"][0].startswith("partition 0 offset 1:")


def test_mm2_tables_round_trip_through_a_snapshot(tmp_path: Path) -> None:
    rows = (Mm2CheckpointRecord("g", "orders", 0, 10, 4, None, 0, 7, 123),)
    manifest: dict[str, Any] = make_manifest(
        "destination", "c", "2026-11-22T00:00:00Z", "2026-11-22T00:00:01Z", {}, {}
    )
    write_snapshot(tmp_path / "dst", Snapshot(manifest, (), mm2_checkpoints=rows))
    assert read_records(tmp_path / "dst", "mm2_checkpoints", Mm2CheckpointRecord) == list(rows)
    assert read_records(tmp_path / "dst", "mm2_offset_syncs", Mm2CheckpointRecord) == []  # not collected


def test_config_rejects_equal_aliases() -> None:
    import pytest

    from audit.errors import ConfigError

    with pytest.raises(ConfigError, match="target_alias"):
        parse_config("mode: mm2\nmirror:\n  mm2:\n    source_alias: a\n    target_alias: a\n", env={})
    cfg = parse_config("mode: mm2\nmirror:\n  mm2:\n    replication_policy: identity\n", env={})
    assert cfg.mirror.mm2.remote_topic("x") == "x"


def _position(key: object, value: object, offset: int) -> RawRecord:
    return RawRecord(
        0,
        offset,
        3000 + offset,
        json.dumps(key).encode(),
        None if value is None else json.dumps(value).encode(),
    )


def test_mirror_makers_positions_are_read_from_connects_offsets_topic() -> None:
    """Kafka Connect's offsets topic as MirrorMaker 2's dedicated mode writes it (JSON key
    [connector, source partition], value {"offset": N}): this flow's MirrorSourceConnector
    positions kept in their order, a tombstone as an unknown position, the other connectors'
    and the other source clusters' records left out, a malformed one counted, never fatal."""
    here = {"cluster": "source", "partition": 0, "topic": "orders"}
    records = [
        _position(["MirrorSourceConnector", here], {"offset": 41}, 0),
        _position(["MirrorCheckpointConnector", {"cluster": "source"}], {"offset": 7}, 1),
        _position(["MirrorSourceConnector", {**here, "cluster": "other"}], {"offset": 3}, 2),
        _position(["MirrorSourceConnector", here], {"offset": 99}, 3),
        _position(["MirrorSourceConnector", {**here, "partition": 1}], None, 4),
        RawRecord(0, 5, 3005, b"not json", b"{}"),
    ]
    dst = _Admin("destination", {"mm2-offsets.source.internal": records})
    tables = collect_mm2(dst, "destination", Mm2Config())
    assert tables.positions is not None
    assert [(p.topic, p.partition, p.committed_offset, p.record_offset) for p in tables.positions] == [
        ("orders", 0, 41, 0),
        ("orders", 0, 99, 3),
        ("orders", 1, None, 4),
    ]
    note = tables.notes["mm2_positions"]
    assert (note["records"], note["corrupt"]) == (6, 1) and "not JSON" in note["examples"][0]
    assert (note["decoded"], note["other_flows"]) == (5, 2)  # read, and another flow's: left out
