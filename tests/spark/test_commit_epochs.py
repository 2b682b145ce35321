"""CM-EPOCH-3 exactly where the destination's batches were read: a commit the sync moved up
to the destination's log start carries the epoch of the batch holding that offset, as
KIP-1279's prototype writes it (tests/integration/test_audit_live.py holds the emulator
writing such commits on real brokers). Without batches CM-EPOCH-3 keeps its <= DLE check.

The destination's batches come from hand-made segment files through the real scanner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from audit.collect.batches.collect import write_batch_scan
from audit.collect.batches.segments import ScanOptions, scan_segments
from audit.config import AuditConfig
from audit.pipeline import audit_snapshots
from tests.batches import batch
from tests.snapshots import offset, part, write_pair
from tests.spark.test_batch_audit import _write_partition


def _records(n: int) -> list[tuple[bytes | None, bytes | None]]:
    return [(b"k", f"v{i}".encode()) for i in range(n)]


def _pair(spark: Any, root: Path) -> tuple[Path, Path]:
    """orders-0: the destination's log starts at 100 (records 0-99 deleted), its batches
    100-149 at epoch 3 and 150-199 at epoch 4, DLE 5. orders-1: log start 50, but only
    batches from 60 were read. Groups at 40 on the source are synced to 100 (the clamp):
    ``right`` with epoch 3, ``wrong`` with 4 (<= DLE: the old check alone passes it);
    ``kept`` at 160 was not moved by the clamp; ``unread`` sits where no batch was read."""
    src_parts = [part("orders", 0, high_watermark=200), part("orders", 1, high_watermark=80)]
    dst_parts = [
        part("orders", 0, log_start_offset=100, high_watermark=200, last_stable_offset=200),
        part("orders", 1, log_start_offset=50, high_watermark=80, last_stable_offset=80),
    ]
    src, dst = write_pair(
        root / "snap",
        src_parts,
        dst_parts,
        src_offsets=[
            offset("right", 40),
            offset("wrong", 40),
            offset("kept", 160),
            offset("unread", 10, partition=1),
        ],
        dst_offsets=[
            offset("right", 100, epoch=3),
            offset("wrong", 100, epoch=4),
            offset("kept", 160, epoch=4),
            offset("unread", 50, partition=1, epoch=2),
        ],
    )
    tree = root / "dst-logs"
    orders_0 = [batch(100, _records(50), epoch=3), batch(150, _records(50), epoch=4)]
    _write_partition(tree, "orders-0", {100: orders_0})
    _write_partition(tree, "orders-1", {60: [batch(60, _records(20), epoch=2)]})
    scanned = scan_segments(spark, [str(tree)], ScanOptions())
    write_batch_scan(spark, scanned, dst, "destination", {"read": "files"})
    return src, dst


def test_a_clamped_commit_must_carry_the_epoch_of_the_batch_at_its_offset(spark: Any, tmp_path: Path) -> None:
    src, dst = _pair(spark, tmp_path)
    outcome = audit_snapshots(src, dst, tmp_path / "run", AuditConfig(), engine="spark")
    table = pq.read_table(outcome.run_dir / "compare" / "commit_epochs.parquet")
    rows = {r["group_id"]: r for r in table.to_pylist()}
    assert set(rows) == {"right", "wrong", "unread"}  # kept was not moved by the clamp
    assert (rows["right"]["batch_leader_epoch"], rows["right"]["epoch_at_offset_matches"]) == (3, True)
    assert (rows["wrong"]["batch_leader_epoch"], rows["wrong"]["epoch_at_offset_matches"]) == (3, False)
    assert rows["unread"]["batch_leader_epoch"] is None and rows["unread"]["epoch_at_offset_matches"] is None
    epoch_3 = outcome.summary["invariants"]["CM-EPOCH-3"]
    assert epoch_3["status"] == "fail", epoch_3
    examples = [e for c in epoch_3["checks"] for e in c["examples"]]
    assert [(e["group_id"], e["dst_committed_leader_epoch"], e["batch_leader_epoch"]) for e in examples] == [
        ("wrong", 4, 3)
    ]
    (gap,) = epoch_3["unchecked_gaps"]
    assert gap["missing"].startswith("the destination batch holding the committed offset")
    assert gap["rows"] == 1


@pytest.mark.unit  # in process: the fast tier's (the Spark one above is make test's)
def test_without_the_destinations_batches_cm_epoch_3_checks_only_the_dle(tmp_path: Path) -> None:
    """The same commits on the in-process engine (readiness): no batch is read, so the
    wrong epoch (4 <= DLE 5) passes the one check there is; nothing is claimed of it."""
    src, dst = write_pair(
        tmp_path / "snap",
        [part("orders", 0, high_watermark=200)],
        [part("orders", 0, log_start_offset=100, high_watermark=200, last_stable_offset=200)],
        src_offsets=[offset("wrong", 40)],
        dst_offsets=[offset("wrong", 100, epoch=4)],
    )
    outcome = audit_snapshots(src, dst, tmp_path / "run", AuditConfig(), engine="local")
    assert outcome.summary["invariants"]["CM-EPOCH-3"]["status"] == "pass"
    assert not (outcome.run_dir / "compare" / "commit_epochs.parquet").exists()
