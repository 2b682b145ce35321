"""The demo end to end on its own real sandbox: healthy passes, faulty fails on exactly its faults."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from audit.validate.catalogue import CM_IN_MM2, MM2
from tests.cli import run_cli

INJECTED_FAILURES = {"CM-TOPIC-1", "CM-EPOCH-1", "CM-GROUP-1", "CM-GROUP-2", "CM-DATA-1"}
# CM-EPOCH-2 warns as a consequence of the epoch fault (DLE below SLE is also short of headroom).
INJECTED_WARNINGS = {"CM-TXN-1", "CM-EPOCH-2"}


def _demo(tmp_path: Path, *flags: str) -> tuple[int, dict[str, Any], str]:
    proc = run_cli(
        "demo",
        *flags,
        "--out",
        str(tmp_path / "run"),
        "--workdir",
        str(tmp_path / "sandbox"),
        timeout=900,
        cwd=tmp_path,
    )
    summary = (
        json.loads((tmp_path / "run" / "summary.json").read_text())
        if (tmp_path / "run" / "summary.json").exists()
        else {}
    )
    return proc.returncode, summary, proc.stdout + proc.stderr


def _by_status(summary: dict[str, Any], status: str) -> set[str]:
    invariants = summary["invariants"]
    assert isinstance(invariants, dict)
    return {k for k, v in invariants.items() if v["status"] == status}


@pytest.mark.parametrize("healthy", [True, False], ids=["healthy", "faulty"])
def test_demo(tmp_path: Path, healthy: bool) -> None:
    code, summary, output = _demo(tmp_path, *(["--healthy"] if healthy else []))
    assert summary, output[-3000:]
    assert not (tmp_path / "sandbox" / "state.json").exists()  # torn down
    if healthy:
        assert code == 0, output[-3000:]
        assert summary["verdict"] == "PASS", {k: v["status"] for k, v in summary["invariants"].items()}
        assert _by_status(summary, "fail") == set() and _by_status(summary, "warn") == set()
        assert {
            "CM-TOPIC-1",
            "CM-EPOCH-1",
            "CM-EPOCH-2",
            "CM-LAG-1",
            "CM-GROUP-1",
            "CM-GROUP-2",
            # Record level: the emulator keeps offsets, timestamps, keys, values, headers and
            # the transaction markers' offsets, so every chunk and every gap matches.
            "CM-DATA-1",
            "CM-TXN-2",
            "CM-EPOCH-4",
        } <= _by_status(summary, "pass")
        coverage = summary["invariants"]["CM-DATA-1"]["coverage"]["totals"]
        assert coverage["mismatched"] == 0 and coverage["not_verified"] == 0 and coverage["verified"] > 0
        return
    assert code == 1, output[-3000:]
    assert summary["verdict"] == "FAIL"
    assert _by_status(summary, "fail") == INJECTED_FAILURES
    assert _by_status(summary, "warn") == INJECTED_WARNINGS
    inv = summary["invariants"]
    assert inv["CM-TOPIC-1"]["examples"][0]["topic"] == "audit-log"
    assert inv["CM-EPOCH-1"]["examples"][0]["topic"] == "payments"
    assert {e["group_id"] for e in inv["CM-GROUP-2"]["examples"]} == {"billing"}
    warn = next(c for c in inv["CM-GROUP-1"]["checks"] if c["severity"] == "warn")
    assert {e["group_id"] for e in warn["examples"]} == {"analytics"}
    txns = inv["CM-TXN-1"]["open_transactions"]
    assert {(t["side"], t["transactional_id"]) for t in txns} >= {("coordinator", "demo-left-open")}
    assert any(t["side"] == "partition" and t["topic"] == "orders" and t["partition"] == 1 for t in txns)
    # The corrupted record: its chunk differs and narrowing names its offset and kind.
    (first,) = inv["CM-DATA-1"]["first_divergence"]
    assert (first["topic"], first["partition"], first["offset"], first["kind"]) == (
        "orders",
        2,
        42,
        "payload_differs",
    )
    assert "9999" in first["destination_record"] and "9999" not in first["source_record"]
    assert inv["CM-TXN-2"]["status"] == "pass"  # the gaps (markers) still line up
    report = (tmp_path / "run" / "report" / "index.html").read_text()
    assert "demo-left-open" in report
    assert "First divergence per partition" in report and "payload_differs" in report


@pytest.mark.parametrize("healthy", [True, False], ids=["healthy", "faulty"])
def test_mm2_demo(tmp_path: Path, healthy: bool) -> None:
    """The same flow with a real MirrorMaker 2: healthy passes every mm2 invariant; the faulty
    run fails exactly MM2-CKPT-2 and CM-GROUP-2 (records deleted on the target past the
    analytics checkpoint, which MirrorMaker 2 had already synced into the target group) and
    MM2-READY-1 (a group live on the target)."""
    code, summary, output = _demo(tmp_path, "--mode", "mm2", *(["--healthy"] if healthy else []))
    assert summary, output[-3000:]
    assert summary["mode"] == "mm2"
    assert not (tmp_path / "sandbox" / "state.json").exists()  # torn down, MirrorMaker 2 too
    statuses = {k: v["status"] for k, v in summary["invariants"].items()}
    if healthy:
        assert code == 0, output[-3000:]
        # Every mm2 invariant and the CM ones that apply under translation; MM2-GROUP-1
        # included, group offset sync is on.
        expected = {i.id for i in MM2} | set(CM_IN_MM2)
        assert {k for k, s in statuses.items() if s == "pass"} == expected, statuses
        assert set(statuses.values()) == {"pass", "skipped"}, statuses
        return
    assert code == 1, output[-3000:]
    assert _by_status(summary, "fail") == {"MM2-CKPT-2", "MM2-READY-1", "CM-GROUP-2"}, statuses
    inv = summary["invariants"]
    assert {e["group_id"] for e in inv["MM2-CKPT-2"]["examples"]} == {"analytics"}
    # The synced target offset (the checkpoint's downstream, 40) now lies below the replica's
    # log start (45): consumers failing over would hit OffsetOutOfRange.
    assert {(e["group_id"], e["topic"]) for e in inv["CM-GROUP-2"]["examples"]} == {("analytics", "payments")}
    assert "billing" in {e.get("group_id") for e in inv["MM2-READY-1"]["examples"]}
