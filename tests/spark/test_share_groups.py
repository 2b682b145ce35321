"""Share groups (KIP-932) through the group checks: their start offsets
are judged by the clamp as committed offsets are (ahead fails, active on the destination
is classified and left alone), and where a side could not read them (no Kafka Java
client) they are unchecked, never passed, and readiness cannot say GO.

The live counterpart, real share consumers and Kafka's own tool as the oracle, is
tests/integration/test_share_groups_live.py."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from audit.config import AuditConfig
from audit.jobs import READINESS
from audit.pipeline import audit_snapshots
from audit.snapshot import GroupRecord
from tests.snapshots import offset, part, share, write_pair


def _pair(root: Path, read: bool = True) -> tuple[Path, Path]:
    """orders-0 mirrored (log start 0, LEO 100 on both sides). Share group s-ok is synced
    to its clamp, s-ahead 7 past it, s-live runs on the destination (its own offset, not
    a sync's); classic group c1 is synced. ``read=False``: the source's share start
    offsets were not read."""
    parts = [part("orders", 0, high_watermark=100)]
    return write_pair(
        root,
        parts,
        parts,
        src_groups=[
            GroupRecord("c1", "classic", "EMPTY", 0),
            GroupRecord("s-ok", "share", "STABLE", 2),
            GroupRecord("s-ahead", "share", "EMPTY", 0),
            GroupRecord("s-live", "share", "EMPTY", 0),
        ],
        dst_groups=[
            GroupRecord("c1", "classic", "EMPTY", 0),
            GroupRecord("s-ok", "share", "EMPTY", 0),
            GroupRecord("s-ahead", "share", "EMPTY", 0),
            GroupRecord("s-live", "share", "STABLE", 1),
        ],
        src_offsets=[offset("c1", 40)],
        dst_offsets=[offset("c1", 40)],
        src_share=[share("s-ok", 30), share("s-ahead", 30), share("s-live", 30)] if read else None,
        dst_share=[share("s-ok", 30), share("s-ahead", 37), share("s-live", 90)],
    )


def test_a_share_group_synced_ahead_of_the_clamp_fails_and_one_active_on_the_destination_is_left_alone(
    tmp_path: Path,
) -> None:
    """On the in-process engine; Spark writes the same tables from the same SQL
    (tests/spark/test_engine_parity.py's edge pair holds a share group synced ahead)."""
    src, dst = _pair(tmp_path / "snap")
    outcome = audit_snapshots(src, dst, tmp_path / "run", AuditConfig(), engine="local")
    group_1 = outcome.summary["invariants"]["CM-GROUP-1"]
    assert group_1["status"] == "fail" and group_1["unchecked"] == 0, group_1
    failing = {(e["group_id"], e.get("sync_delta")) for c in group_1["checks"] for e in c["examples"]}
    assert failing == {("s-ahead", 7)}
    compared = outcome.run_dir / "compare"
    groups = {r["group_id"]: r for r in pq.read_table(compared / "groups.parquet").to_pylist()}
    assert groups["s-live"]["classification"] == "active-on-destination"
    assert groups["s-ok"]["classification"] == "synced" and groups["s-ok"]["src_group_type"] == "share"
    assert all(g["offsets_compared"] for g in groups.values())
    offsets = pq.read_table(compared / "group_offsets.parquet").to_pylist()
    share_rows = [r for r in offsets if r["group_id"].startswith("s-")]
    # The share partition's leader epoch is not a consumer's fencing epoch: never judged.
    assert share_rows and all(r["commit_epoch_headroom"] is None for r in share_rows)


def test_share_groups_whose_start_offsets_were_not_read_are_unchecked_and_readiness_cannot_say_go(
    tmp_path: Path,
) -> None:
    """Readiness's engine (the in-process one); the SQL is the one both engines run."""
    src, dst = _pair(tmp_path / "snap", read=False)
    outcome = audit_snapshots(src, dst, tmp_path / "run", AuditConfig(), job=READINESS, engine="local")
    summary = outcome.summary
    group_1 = summary["invariants"]["CM-GROUP-1"]
    assert group_1["status"] != "pass" and group_1["violations"] == 0, group_1
    (gap,) = group_1["unchecked_gaps"]
    assert gap["missing"].startswith("the share group start offsets (not read")
    # s-live is active on the destination (not a sync candidate); the other two are unknown.
    assert gap["rows"] == 2 and {r["group_id"] for r in gap["first"]} == {"s-ok", "s-ahead"}
    assert summary["readiness"] == "NO-GO" and outcome.exit_code == 1
    reasons = summary["readiness_reasons"]
    assert any(r.startswith("cannot verify: CM-GROUP-1: the share group") for r in reasons), reasons
