"""Every CM invariant on hand-made snapshots: one fault per partition or group, each caught
by exactly the invariant that owns it; a healthy pair passes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from audit.config import parse_config
from audit.pipeline import audit_snapshots
from tests.snapshots import T0_MS, group, offset, part, write_pair

CFG = parse_config("scope:\n  groups:\n    exclude: ['private']\n", env={})


def _faulty(root: Path) -> tuple[Path, Path]:
    src = [
        part("orders", leader_epoch=5, high_watermark=100),
        part("lagging", high_watermark=50_000),
        part("epoch", leader_epoch=9),
        part("headroom", leader_epoch=5),
        part("ahead", high_watermark=100),
        part("expired", log_start_offset=500, high_watermark=1000),
        part("missing"),
        part("txn", last_stable_offset=90, open_txn_first_timestamp_ms=T0_MS - 2_000_000),
        part("txn-recent", last_stable_offset=95, open_txn_first_timestamp_ms=T0_MS - 10_000),
        part("app-store-changelog"),
    ]
    dst = [
        part("orders", leader_epoch=8, high_watermark=100),
        part("lagging", high_watermark=100, leader_epoch=8),
        part("epoch", leader_epoch=8),
        part("headroom", leader_epoch=6),
        part("ahead", high_watermark=120, leader_epoch=8),
        part("expired", log_start_offset=0, high_watermark=400, leader_epoch=8),
        part("txn", leader_epoch=8, high_watermark=100),
        part("txn-recent", leader_epoch=8),
        part("app-store-changelog", leader_epoch=8),
    ]
    groups = [group(g) for g in ("g1", "g-ahead", "g-stale", "g-clamp", "g-epoch", "private", "app")]
    return write_pair(
        root,
        src,
        dst,
        src_groups=groups,
        dst_groups=[*groups, group("g-live", "STABLE", 1)],
        src_offsets=[
            offset("g1", 80),
            offset("g-ahead", 50),
            offset("g-stale", 90),
            offset("g-clamp", 150),
            offset("g-epoch", 70),
            offset("private", 10),
            offset("app", 10, topic="app-store-changelog"),
            offset("g-live", 5),
        ],
        dst_offsets=[
            offset("g1", 80, epoch=8),
            offset("g-ahead", 70),
            offset("g-stale", 60),
            offset("g-clamp", 100),
            offset("g-epoch", 70, epoch=9),
            offset("private", 10),
            offset("app", 10, topic="app-store-changelog"),
            offset("g-live", 130),
        ],
    )


@pytest.fixture(scope="module")
def faulty(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("faulty")
    src, dst = _faulty(root)
    outcome = audit_snapshots(src, dst, root / "run", CFG, readiness=True)
    summary = json.loads((root / "run" / "summary.json").read_text())
    assert summary == json.loads(json.dumps(outcome.summary))
    return summary


def _keys(inv: dict[str, Any], *cols: str) -> set[tuple[Any, ...]]:
    return {tuple(e[c] for c in cols) for e in inv["examples"]}


@pytest.mark.parametrize(
    ("invariant", "status", "keys", "cols"),
    [
        ("CM-TOPIC-1", "fail", {("missing",)}, ("topic",)),
        ("CM-OFFSET-1", "fail", {("ahead", 0)}, ("topic", "partition")),
        ("CM-OFFSET-2", "fail", {("expired", 0)}, ("topic", "partition")),
        ("CM-LAG-1", "fail", {("lagging", 0)}, ("topic", "partition")),
        ("CM-EPOCH-1", "fail", {("epoch", 0)}, ("topic", "partition")),
        # "epoch" (DLE below SLE) is also short of headroom: it warns here as well as failing CM-EPOCH-1.
        ("CM-EPOCH-2", "warn", {("headroom", 0), ("epoch", 0)}, ("topic", "partition")),
        ("CM-EPOCH-3", "fail", {("g-epoch", "orders", 0)}, ("group_id", "topic", "partition")),
        ("CM-GROUP-1", "fail", {("g-ahead", "orders", 0)}, ("group_id", "topic", "partition")),
        ("CM-GROUP-2", "fail", {("g-live", "orders", 0)}, ("group_id", "topic", "partition")),
        ("CM-GROUP-3", "fail", {("private",)}, ("group_id",)),
        ("CM-TXN-1", "fail", {("txn", 0)}, ("topic", "partition")),
    ],
)
def test_each_fault_caught_by_its_invariant(
    faulty: dict[str, Any], invariant: str, status: str, keys: set[tuple[Any, ...]], cols: tuple[str, ...]
) -> None:
    inv = faulty["invariants"][invariant]
    assert inv["status"] == status, inv
    assert inv["violations"] == len(keys)
    assert _keys(inv, *cols) == keys
    assert inv["evaluated"] > inv["violations"]


def test_stale_group_warns_but_never_fails(faulty: dict[str, Any]) -> None:
    checks = faulty["invariants"]["CM-GROUP-1"]["checks"]
    warn = next(c for c in checks if c["severity"] == "warn")
    assert not warn["success"]
    assert {(e["group_id"]) for e in warn["examples"]} == {"g-stale"}  # g-clamp sits at the clamp: fine


def test_scope_warns_for_streams_topics_and_groups(faulty: dict[str, Any]) -> None:
    inv = faulty["invariants"]["CM-SCOPE-1"]
    assert inv["status"] == "warn"
    found = {e.get("topic") or e.get("group_id") for c in inv["checks"] for e in c["examples"]}
    assert found == {"app-store-changelog", "app"}


def test_summary_contract(faulty: dict[str, Any]) -> None:
    assert faulty["verdict"] == "FAIL"
    assert faulty["readiness"] == "NO-GO"
    for data_inv in ("CM-DATA-1", "CM-DATA-2", "CM-TXN-2", "CM-FAILOVER-1"):
        assert faulty["invariants"][data_inv]["status"] == "skipped"
    # Loss: lagging 49900 + expired 600 + missing (all 100 retained); ahead is negative -> 0.
    assert faulty["expected_loss_records"] == 49_900 + 600 + 100
    # Reprocess: g-stale is 30 behind its clamp; g1 and g-clamp are exact, g-ahead is ahead.
    assert faulty["expected_reprocess_records"] == 30


def test_healthy_pair_passes(spark: Any, tmp_path: Path) -> None:
    parts = [part("orders", partition=p, leader_epoch=5) for p in range(3)]
    dparts = [part("orders", partition=p, leader_epoch=8) for p in range(3)]
    src, dst = write_pair(
        tmp_path,
        parts,
        dparts,
        src_groups=[group("g")],
        dst_groups=[group("g")],
        src_offsets=[offset("g", 40, partition=p) for p in range(3)],
        dst_offsets=[offset("g", 40, partition=p, epoch=8) for p in range(3)],
    )
    outcome = audit_snapshots(src, dst, tmp_path / "run", CFG, readiness=True)
    statuses = {k: v["status"] for k, v in outcome.summary["invariants"].items()}
    assert outcome.summary["verdict"] == "PASS", statuses
    assert outcome.exit_code == 0
    assert outcome.summary["readiness"] == "GO"
    assert outcome.summary["expected_loss_records"] == 0
    assert statuses["CM-GROUP-3"] == "pass"
    assert statuses["CM-DATA-1"] == "skipped"


def test_report_is_self_contained_and_escapes_names(spark: Any, tmp_path: Path) -> None:
    evil = "<script>alert(1)</script>"
    src, dst = write_pair(tmp_path, [part(evil), part("ok")], [part("ok", leader_epoch=8)])
    outcome = audit_snapshots(src, dst, tmp_path / "run", CFG)
    text = outcome.report.read_text()
    assert evil not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<script" not in text.lower()
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in text
    assert outcome.summary["invariants"]["CM-TOPIC-1"]["status"] == "fail"
