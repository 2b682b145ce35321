"""A run against the runs before it: since when each example row has been failing, and
what changed since the previous run of the same cluster pair (the violation keys each run
keeps are checked against both engines in test_engine_parity)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from audit.config import AuditConfig
from audit.config_file import parse_config
from audit.pipeline import audit_offline
from audit.validate.invariants import ALL, CLUSTER_MIRRORING
from tests.run_files import assert_metrics_agree
from tests.snapshots import faulty_pair, group, offset, part, write_pair

FAULTY_CFG = parse_config("scope:\n  groups:\n    exclude: ['private']\n", env={})


def _pair(root: Path, fixed: bool) -> tuple[Path, Path]:
    """Before: orders-0 has DLE < SLE (CM-EPOCH-1) and group g1 sits past the destination's
    LEO (CM-GROUP-2). After (``fixed``): orders-0 bumped, g1 reset, but orders-1's epoch
    now lags and the destination of 'extra' holds records the source never had (CM-OFFSET-1)."""
    src = [part("orders", 0, leader_epoch=9), part("orders", 1, leader_epoch=5), part("extra")]
    dst = [
        part("orders", 0, leader_epoch=10 if fixed else 8),
        part("orders", 1, leader_epoch=4 if fixed else 8),
        part("extra", leader_epoch=8, high_watermark=130 if fixed else 100),
    ]
    return write_pair(
        root,
        src,
        dst,
        src_groups=[group("g1")],
        dst_groups=[group("g1")],
        src_offsets=[offset("g1", 100, partition=1)],
        dst_offsets=[offset("g1", 100 if fixed else 150, partition=1)],
    )


def _audit(src: Path, dst: Path, root: Path, name: str, cfg: AuditConfig = FAULTY_CFG) -> dict[str, Any]:
    outcome = audit_offline(src, dst, cfg, out=root / name, engine="local")
    return outcome.summary


def test_two_audits_of_one_pair_say_since_when_and_what_changed(tmp_path: Path) -> None:
    before = _pair(tmp_path / "before", fixed=False)
    root = tmp_path / "runs"
    first = _audit(*before, root, "first")
    assert first["changes"]["previous_run"] is None
    assert "nothing to compare with" in first["changes"]["note"]
    assert first["invariants"]["CM-EPOCH-1"]["examples_seen"] == [
        {"first_run": None, "first_seen_at": first["run"]["started_at"], "runs": 1}
    ]

    second = _audit(*before, root, "second")
    changes = second["changes"]
    assert changes["previous_run"]["dir"] == "first"
    still = ["CM-EPOCH-1", "CM-EPOCH-2", "CM-GROUP-1", "CM-GROUP-2"]  # EPOCH-2 and GROUP-1 go along
    assert [e["id"] for e in changes["invariants"]["still_failing"]] == still
    assert changes["invariants"]["newly_failing"] == changes["invariants"]["resolved"] == []
    assert changes["rows"]["CM-EPOCH-1"] == {"new": 0, "resolved": 0, "still": 1, "new_examples": []}
    (seen,) = second["invariants"]["CM-EPOCH-1"]["examples_seen"]
    assert (seen["first_run"], seen["first_seen_at"], seen["runs"]) == (
        "first",
        first["run"]["started_at"],
        2,
    )
    page = (root / "second" / "report" / "index.html").read_text(encoding="utf-8")
    assert "What changed since the previous run" in page
    assert f"since {first['run']['started_at'][:10]}, 2 runs" in page

    after = _pair(tmp_path / "after", fixed=True)
    third = _audit(*after, root, "third")
    groups = {k: [e["id"] for e in v] for k, v in third["changes"]["invariants"].items()}
    assert groups["newly_failing"] == ["CM-OFFSET-1"]
    assert groups["still_failing"] == ["CM-EPOCH-1", "CM-EPOCH-2"]
    assert groups["resolved"] == ["CM-GROUP-1", "CM-GROUP-2"]
    rows = third["changes"]["rows"]
    assert rows["CM-EPOCH-1"] == {
        "new": 1,
        "resolved": 1,
        "still": 0,
        "new_examples": [{"topic": "orders", "partition": "1"}],
    }
    assert (rows["CM-GROUP-2"]["resolved"], rows["CM-OFFSET-1"]["new"]) == (1, 1)
    # orders-1 is a new row of a still failing invariant: its streak starts now.
    (seen,) = third["invariants"]["CM-EPOCH-1"]["examples_seen"]
    assert (seen["first_run"], seen["runs"]) == (None, 1)
    assert "new in this run" in (root / "third" / "report" / "index.html").read_text(encoding="utf-8")
    assert_metrics_agree(root / "third")


def test_another_cluster_pair_under_the_same_root_is_not_history(tmp_path: Path) -> None:
    src, dst = _pair(tmp_path / "a", fixed=False)
    root = tmp_path / "runs"
    _audit(src, dst, root, "first")
    other = _pair(tmp_path / "b", fixed=False)
    manifest = other[1] / "manifest.json"
    data = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**data, "cluster_id": "another-destination"}))
    summary = _audit(*other, root, "other")
    assert summary["changes"]["previous_run"] is None
    assert summary["invariants"]["CM-EPOCH-1"]["examples_seen"][0]["runs"] == 1


def test_history_runs_bounds_how_far_back_a_streak_is_counted(tmp_path: Path) -> None:
    src, dst = _pair(tmp_path / "a", fixed=False)
    root = tmp_path / "runs"
    for name in ("r1", "r2", "r3"):
        _audit(src, dst, root, name)
    short = parse_config("output:\n  history_runs: 1\n", env={})
    summary = _audit(src, dst, root, "r4", short)
    assert summary["invariants"]["CM-EPOCH-1"]["examples_seen"][0]["runs"] == 2
    assert summary["invariants"]["CM-EPOCH-1"]["examples_seen"][0]["first_run"] == "r3"
    full = _audit(src, dst, root, "r5")
    assert full["invariants"]["CM-EPOCH-1"]["examples_seen"][0] | {"first_seen_at": None} == {
        "first_run": "r1",
        "first_seen_at": None,
        "runs": 5,
    }


def test_failing_invariants_carry_their_remediation(tmp_path: Path) -> None:
    assert all(inv.remediation for inv in CLUSTER_MIRRORING)
    src, dst = faulty_pair(tmp_path / "snaps")
    summary = _audit(src, dst, tmp_path / "runs", "run")
    page = (tmp_path / "runs" / "run" / "report" / "index.html").read_text(encoding="utf-8")
    for inv_id, inv in summary["invariants"].items():
        if inv["status"] in ("fail", "warn"):
            assert inv["remediation"] == ALL[inv_id].remediation
        else:
            assert "remediation" not in inv
    advice = summary["invariants"]["CM-EPOCH-1"]["remediation"]
    assert "kafka-leader-election --election-type PREFERRED" in advice
    assert "<code>kafka-leader-election --election-type PREFERRED --topic T --partition P</code>" in page
    assert_metrics_agree(tmp_path / "runs" / "run")
