"""The comparison tables' derived columns, on the in-process engine: each test reads the
Parquet files the engine wrote (with pyarrow), so it checks what the validate stage and other
tools read. Spark writes the same files for these pairs, cell by cell: the parity test's
"compare-*" scenarios (tests/spark/test_engine_parity.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from audit.compare.run import Compared
from audit.config import AuditConfig
from audit.config_file import parse_config
from audit.pipeline import compare_snapshots
from tests.snapshots import group, offset, part, write_pair

SCOPE_CFG = parse_config(
    "scope:\n  topics:\n    exclude: ['tmp.*']\n  groups:\n    exclude: ['private']\n", env={}
)


def _compare(src: Path, dst: Path, run: Path, cfg: AuditConfig) -> Compared:
    return compare_snapshots(src, dst, run, cfg, "local")


def _rows(path: Path, key: tuple[str, ...]) -> dict[Any, Any]:
    return {tuple(r[k] for k in key): r for r in pq.read_table(path).to_pylist()}


def _lagging_pair(root: Path) -> tuple[Path, Path]:
    return write_pair(
        root,
        [part(partition=0, high_watermark=120, leader_epoch=7), part(partition=1), part("missing")],
        [part(partition=0, high_watermark=100, leader_epoch=9, max_timestamp_ms=1000), part(partition=1)],
    )


def test_partition_comparison_derives_lag_and_headroom(tmp_path: Path) -> None:
    src, dst = _lagging_pair(tmp_path)
    paths = _compare(src, dst, tmp_path / "run", AuditConfig()).paths
    rows = _rows(paths["partitions"], ("topic", "partition"))
    p0 = rows[("orders", 0)]
    assert p0["lag_records"] == 20
    assert p0["epoch_headroom"] == 2
    assert p0["lag_seconds"] > 0
    assert rows[("missing", 0)]["dst_present"] is False
    topics = _rows(paths["topics"], ("topic",))
    assert topics[("orders",)]["topic_mirrored"] is True
    assert topics[("missing",)]["topic_mirrored"] is False


def _clamped_pair(root: Path) -> tuple[Path, Path]:
    # Destination retains [50, 100); source committed 30 (below log start), 80 (inside), 150 (past LEO).
    parts = [part(partition=i) for i in range(3)]
    dparts = [part(partition=i, log_start_offset=50, high_watermark=100) for i in range(3)]
    return write_pair(
        root,
        parts,
        dparts,
        src_groups=[group("g")],
        dst_groups=[group("g"), group("live", "STABLE", 2)],
        src_offsets=[
            offset("g", 30, partition=0),
            offset("g", 80, partition=1),
            offset("g", 150, partition=2),
            offset("live", 10),
        ],
        dst_offsets=[
            offset("g", 50, partition=0),
            offset("g", 80, partition=1),
            offset("g", 100, partition=2),
            offset("live", 99),
        ],
    )


def test_group_offsets_clamp_both_ends(tmp_path: Path) -> None:
    src, dst = _clamped_pair(tmp_path)
    paths = _compare(src, dst, tmp_path / "run", AuditConfig()).paths
    rows = _rows(paths["group_offsets"], ("group_id", "partition"))
    assert [rows[("g", i)]["expected_offset"] for i in range(3)] == [50, 80, 100]
    assert all(rows[("g", i)]["sync_delta"] == 0 for i in range(3))
    assert rows[("live", 0)]["dst_active"] is True
    assert rows[("live", 0)]["sync_candidate"] is False
    groups = _rows(paths["groups"], ("group_id",))
    assert groups[("live",)]["classification"] == "active-on-destination"
    assert groups[("g",)]["classification"] == "synced"


def _scoped_pair(root: Path) -> tuple[Path, Path]:
    return write_pair(
        root,
        [part("orders"), part("tmp-x"), part("__consumer_offsets")],
        [part("orders")],
        src_offsets=[offset("private", 5)],
        dst_offsets=[offset("private", 5)],
    )


def test_scope_applies(tmp_path: Path) -> None:
    src, dst = _scoped_pair(tmp_path)
    paths = _compare(src, dst, tmp_path / "run", SCOPE_CFG).paths
    rows = _rows(paths["partitions"], ("topic",))
    assert rows[("orders",)]["in_scope"] is True
    assert rows[("tmp-x",)]["in_scope"] is False
    assert rows[("__consumer_offsets",)]["in_scope"] is False
    groups = _rows(paths["groups"], ("group_id",))
    assert groups[("private",)]["classification"] == "excluded"
    assert groups[("private",)]["excluded_but_synced"] is True
