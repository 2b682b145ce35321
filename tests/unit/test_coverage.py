"""Coverage: what an invariant could not check is never a pass, and a GO / NO-GO job answers
GO only over what its gating invariants checked (docs/invariants.md, "Coverage"). One test
per rule, on the in-process engine, plus the two reproductions that said PASS and GO having
checked nothing. Spark's tables and summary for each of these snapshot pairs are held equal
to the in-process engine's by tests/spark/test_engine_parity.py (its "coverage-*" scenarios)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from audit.config_file import parse_config
from audit.failover_jobs import failback_readiness, failover_verify
from audit.jobs import READINESS
from audit.pipeline import audit_snapshots
from tests.cli import run_cli
from tests.run_files import unchecked_keys
from tests.snapshots import (
    after_stop_without_last_mirrored_offset,
    before_stop_pair,
    group,
    mirror,
    offset,
    part,
    write_pair,
)

CFG = parse_config("", env={})
ACCEPTING_CFG = parse_config("readiness:\n  accept_unchecked: [CM-EPOCH-1, CM-EPOCH-2]\n", env={})


def _readiness(src: Path, dst: Path, run: Path, cfg: Any) -> Any:
    return audit_snapshots(src, dst, run, cfg, job=READINESS, engine="local")


def _healthy_partitions() -> tuple[list[Any], list[Any]]:
    src = [part("orders", 0), part("orders", 1)]
    dst = [part("orders", 0, leader_epoch=9), part("orders", 1, leader_epoch=9)]
    return src, dst


def _healthy_pair(root: Path) -> tuple[Path, Path]:
    """Two healthy partitions, no group collected: what nothing in scope and not collected
    are checked on."""
    return write_pair(root, *_healthy_partitions())


def test_nothing_in_scope_is_skipped_with_that_reason_and_does_not_block_go(tmp_path: Path) -> None:
    """Groups collected, none committed: the group invariants have nothing in scope."""
    src, dst = _healthy_pair(tmp_path / "snap")
    summary = _readiness(src, dst, tmp_path / "run", CFG).summary
    for inv_id in ("CM-GROUP-1", "CM-GROUP-2", "CM-EPOCH-3"):
        inv = summary["invariants"][inv_id]
        assert inv["status"] == "skipped", inv
        assert inv["reason"].startswith("nothing in scope"), inv
    assert summary["readiness"] == "GO", summary["readiness_reasons"]
    assert summary["coverage"]["complete"] is True


def test_not_collected_is_skipped_with_that_reason_and_does_not_block_readiness(tmp_path: Path) -> None:
    """No mirror state imported: CM-FAILOVER-1 is not collected; readiness does not need it."""
    src, dst = _healthy_pair(tmp_path / "snap")
    summary = _readiness(src, dst, tmp_path / "run", CFG).summary
    inv = summary["invariants"]["CM-FAILOVER-1"]
    assert inv["status"] == "skipped" and inv["reason"].startswith("not collected"), inv
    assert summary["readiness"] == "GO", summary["readiness_reasons"]


def _one_epoch_missing(root: Path) -> tuple[Path, Path]:
    """orders-1's source reports no leader epoch (no leader at the snapshot): CM-EPOCH-1
    checks orders-0 and cannot check orders-1."""
    src = [part("orders", 0), part("orders", 1, leader_epoch=None)]
    return write_pair(root, src, _healthy_partitions()[1])


def test_partial_coverage_warns_names_the_input_and_readiness_cannot_verify(tmp_path: Path) -> None:
    src, dst = _one_epoch_missing(tmp_path / "snap")
    outcome = _readiness(src, dst, tmp_path / "run", CFG)
    summary = outcome.summary
    inv = summary["invariants"]["CM-EPOCH-1"]
    assert inv["status"] == "warn", inv  # one row checked and fine, one not checked: never pass
    assert (inv["evaluated"], inv["violations"], inv["unchecked"]) == (1, 0, 1)
    (gap,) = inv["unchecked_gaps"]
    assert gap["missing"].startswith("source leader epoch") and gap["rows"] == 1
    assert gap["first"] == [{"topic": "orders", "partition": "1"}]
    assert summary["verdict"] == "WARN"
    assert summary["readiness"] == "NO-GO" and outcome.exit_code == 1
    assert any(
        r.startswith("cannot verify: CM-EPOCH-1: source leader epoch")
        and "missing for 1 partition (first: orders-1)" in r
        for r in summary["readiness_reasons"]
    ), summary["readiness_reasons"]
    assert {"CM-EPOCH-1", "CM-EPOCH-2"} <= set(unchecked_keys(outcome.run_dir))
    assert summary["coverage"]["complete"] is False
    assert "What was not checked" in outcome.report.read_text()


def test_an_accepted_gap_gives_go_and_is_said_on_the_run(tmp_path: Path) -> None:
    src, dst = _one_epoch_missing(tmp_path / "snap")
    summary = _readiness(src, dst, tmp_path / "run", ACCEPTING_CFG).summary
    assert summary["readiness"] == "GO", summary["readiness_reasons"]
    assert summary["invariants"]["CM-EPOCH-1"]["status"] == "warn"  # accepted is not checked
    assert summary["invariants"]["CM-EPOCH-1"]["unchecked_accepted"] is True
    assert any(a.startswith("CM-EPOCH-1: source leader epoch") for a in summary["accepted_unchecked"])


def _readiness_before(root: Path) -> Path:
    src, dst = before_stop_pair(root / "before")
    run = root / "readiness"
    _readiness(src, dst, run, CFG)
    return run


def test_verify_without_the_last_mirrored_offset_cannot_verify_and_its_loss_is_unknown(
    tmp_path: Path,
) -> None:
    """The issue's reproduction: it said PASS, CM-FAILOVER-2 pass and 0 records lost."""
    before = _readiness_before(tmp_path)
    dst = after_stop_without_last_mirrored_offset(tmp_path / "after")
    outcome = failover_verify(CFG, before, tmp_path / "verify", destination=dst, engine="local")
    summary = outcome.summary
    assert summary["invariants"]["CM-FAILOVER-2"]["status"] != "pass"
    assert summary["invariants"]["CM-FAILOVER-2"]["unchecked"] == 1
    assert summary["readiness"] == "NO-GO" and outcome.exit_code == 1
    assert any(
        r.startswith("cannot verify: CM-FAILOVER-2: mirror state field LastMirrorOffset missing for 1 ")
        and "orders-0" in r
        for r in summary["readiness_reasons"]
    ), summary["readiness_reasons"]
    failover = summary["failover"]
    assert failover["realized_loss_records"] is None
    assert "LastMirrorOffset" in failover["unknown_figures"]["realized_loss_records"]["reason"]
    assert failover["unknown_figures"]["realized_loss_records"]["rows_unknown"] == 1
    assert failover["predicted_loss_records"] == 10  # what could be computed still is
    written = json.loads((outcome.run_dir / "summary.json").read_text())
    assert written["failover"]["realized_loss_records"] is None


def _failback_without_the_last_mirrored_offset(root: Path) -> tuple[Path, Path]:
    return write_pair(
        root,
        [part("orders", 0, high_watermark=104)],
        [part("orders", 0, high_watermark=91, leader_epoch=9)],
        src_groups=[group("g1")],
        src_offsets=[offset("g1", 100)],
        dst_mirror=[mirror("orders", 0, last_offset=None)],
    )


def test_failback_without_the_last_mirrored_offset_cannot_verify(tmp_path: Path) -> None:
    src, dst = _failback_without_the_last_mirrored_offset(tmp_path / "snap")
    outcome = failback_readiness(CFG, tmp_path / "run", src, dst, engine="local")
    summary = outcome.summary
    assert summary["readiness"] == "NO-GO" and outcome.exit_code == 1
    assert summary["failback_truncation_records"] is None
    for inv_id in ("CM-FAILBACK-1", "CM-FAILBACK-2"):
        assert summary["invariants"][inv_id]["status"] == "warn", summary["invariants"][inv_id]
        assert any(r.startswith(f"cannot verify: {inv_id}:") for r in summary["readiness_reasons"])


def test_an_offline_readiness_over_an_empty_scope_is_exit_2_naming_the_scope(tmp_path: Path) -> None:
    """The issue's other reproduction: it said PASS and GO with every invariant skipped."""
    src, dst = _healthy_pair(tmp_path / "snap")
    config = tmp_path / "audit.yaml"
    config.write_text("scope:\n  topics:\n    include: ['nothing-matches-this']\n")
    result = run_cli(
        "readiness",
        "--source",
        str(src),
        "--destination",
        str(dst),
        "--out",
        str(tmp_path / "run"),
        "--config",
        str(config),
    )
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "no in-scope source partition" in line and "nothing-matches-this" in line
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "run" / "summary.json").exists()


def test_an_unknown_invariant_in_accept_unchecked_is_a_config_error() -> None:
    from audit.errors import ConfigError

    with pytest.raises(ConfigError, match=r"readiness.accept_unchecked\[0\].*CM-EPOCH-9"):
        parse_config("readiness:\n  accept_unchecked: [CM-EPOCH-9]\n", env={})


def _mirrored_partition_absent_from_both(root: Path) -> tuple[Path, Path]:
    return write_pair(
        root,
        *_healthy_partitions(),
        dst_mirror=[
            mirror("orders", 0, state="MIRRORING"),
            mirror("orders", 1, state="MIRRORING"),
            mirror("gone", 0),
        ],
    )


def test_a_mirrored_partition_absent_from_both_snapshots_is_unchecked_not_dropped(tmp_path: Path) -> None:
    """A mirror-state row with no partition row was out of scope by default
    (coalesce(p.in_scope, FALSE)) and so never judged; its topic's name decides now."""
    src, dst = _mirrored_partition_absent_from_both(tmp_path / "snap")
    summary = _readiness(src, dst, tmp_path / "run", CFG).summary
    inv = summary["invariants"]["CM-FAILOVER-1"]
    assert inv["status"] == "warn", inv
    (gap,) = inv["unchecked_gaps"]
    assert gap["missing"].startswith("the destination partition") and gap["first"] == [
        {"topic": "gone", "partition": "0"}
    ]
    assert summary["readiness"] == "NO-GO"


def _mirror_state_omitting_a_partition(root: Path) -> tuple[Path, Path]:
    return write_pair(root, *_healthy_partitions(), dst_mirror=[mirror("orders", 0)])


def test_an_in_scope_partition_the_mirror_state_omits_is_unchecked_not_passed(tmp_path: Path) -> None:
    """The mirror's state names orders 0 only: orders 1's stop was never verified, so
    CM-FAILOVER-1 cannot pass on orders 0 alone."""
    src, dst = _mirror_state_omitting_a_partition(tmp_path / "snap")
    summary = _readiness(src, dst, tmp_path / "run", CFG).summary
    inv = summary["invariants"]["CM-FAILOVER-1"]
    assert inv["status"] == "warn", inv
    (gap,) = inv["unchecked_gaps"]
    assert gap["missing"].startswith("the mirror state of the partition") and gap["first"] == [
        {"topic": "orders", "partition": "1"}
    ]
    assert summary["readiness"] == "NO-GO"
