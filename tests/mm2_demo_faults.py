"""What the faulty MirrorMaker 2 demo (``mirror-audit demo --mode mm2``) must find, exactly:
the invariants it fails and the rows that name each fault. Asserted where that demo runs in
the suite: on the oldest supported line, with its own connect-mirror
(tests/integration/test_versions_live.py). The healthy demo runs on the default release
(tests/integration/test_demo.py); the faults on the default release's MirrorMaker 2 are each
also caught by a test of their own (tests/integration/test_mm2_sandbox.py,
tests/integration/test_mm2_records_live.py)."""

from __future__ import annotations

from typing import Any

from audit.sandbox import demo_mm2


def assert_caught_exactly(summary: dict[str, Any]) -> None:
    """MM2-CKPT-2 and CM-GROUP-2 (records deleted on the target past the analytics
    checkpoint, which MirrorMaker 2 had already synced into the target group), MM2-READY-1
    (a group live on the target), MM2-DATA-1 and MM2-SKIP-1 (10 records MirrorMaker 2 was
    made to skip) fail, and nothing else does."""
    assert summary["mode"] == "mm2"
    inv = summary["invariants"]
    assert demo_mm2.INJECTED.problems(summary) == [], {k: v["status"] for k, v in inv.items()}
    # The same 10 records, from MirrorMaker 2's own offset syncs (what readiness sees too).
    (gap,) = inv["MM2-SKIP-1"]["examples"]
    assert (gap["topic"], gap["partition"], gap["skipped_from_offset"], gap["lost_records"]) == (
        "orders",
        demo_mm2.SKIP_PARTITION,
        200,
        demo_mm2.SKIPPED,
    )
    assert summary["run"]["lost_records"] == demo_mm2.SKIPPED
    (skip,) = inv["MM2-DATA-1"]["examples"]
    assert (skip["topic"], skip["partition"], skip["missing_records"], skip["first_missing_offset"]) == (
        "orders",
        demo_mm2.SKIP_PARTITION,
        demo_mm2.SKIPPED,
        200,
    )
    assert {e["group_id"] for e in inv["MM2-CKPT-2"]["examples"]} == {"analytics"}
    # The synced target offset (the checkpoint's downstream, 40) now lies below the replica's
    # log start (45): consumers failing over would hit OffsetOutOfRange.
    assert {(e["group_id"], e["topic"]) for e in inv["CM-GROUP-2"]["examples"]} == {("analytics", "payments")}
    assert "billing" in {e.get("group_id") for e in inv["MM2-READY-1"]["examples"]}
