"""The demo end to end on its own real sandbox: healthy passes, faulty fails on exactly its faults."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from audit.validate.invariants import CM_IN_MM2, MM2, MM2_DATA
from tests.cli import run_cli

INJECTED_FAILURES = {"CM-TOPIC-1", "CM-EPOCH-1", "CM-GROUP-1", "CM-GROUP-2", "CM-DATA-1"}
# CM-EPOCH-2 warns as a consequence of the epoch fault (DLE below SLE is also short of headroom),
# CM-OFFSET-1 and -2 as one of the partition missing from the destination (unchecked there).
INJECTED_WARNINGS = {"CM-TXN-1", "CM-EPOCH-2", "CM-OFFSET-1", "CM-OFFSET-2"}


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


REPO = Path(__file__).resolve().parents[2]
OLD = 946_684_800  # 2000-01-01: older than any build stamp


@pytest.fixture(scope="module")
def fresh_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkout as a fresh clone has it (tracked and new files; no reports, no build
    output), its ``.venv`` this test run's own environment, built: every file older than
    the environment's build stamps, as after a first ``make``, so ``make demo`` goes
    straight to the demo and runs the Makefile's own command, in the tree's root."""
    tree = tmp_path_factory.mktemp("clone") / "kafka-mirror-audit"
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        src, dst = REPO / name, tree / name
        if not src.exists() and not src.is_symlink():
            continue  # deleted in the working tree
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            dst.symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, dst)
            os.utime(dst, (OLD, OLD))
    venv = Path(sys.prefix)
    for stamp in (".installed", ".native-installed"):
        assert (venv / stamp).exists(), f"run the suite through make (no {venv / stamp})"
    (tree / ".venv").symlink_to(venv)
    assert not any((tree / "reports").glob("*/")), "a fresh tree has no runs"
    return tree


def _readme_command(tree: Path, tmp_path: Path, argv: list[str]) -> tuple[int, dict[str, Any], str, Path]:
    """Run a README command verbatim in the tree's root; the sandbox's work dir goes to a
    temporary directory through the README's environment variable, not a flag."""
    env = {**os.environ, "MIRROR_AUDIT_SANDBOX_DIR": str(tmp_path / "sandbox")}
    proc = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, timeout=900, check=False)
    output = proc.stdout + proc.stderr
    reports = [ln.removeprefix("report: ") for ln in proc.stdout.splitlines() if ln.startswith("report: ")]
    assert reports, output[-3000:]
    report = Path(reports[-1])
    summary_path = report.parent.parent / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    assert not (tmp_path / "sandbox" / "state.json").exists()  # torn down
    return proc.returncode, summary, output, report


def test_make_demo_from_a_fresh_tree_catches_exactly_its_faults_and_exits_0(
    fresh_tree: Path, tmp_path: Path
) -> None:
    code, summary, output, report = _readme_command(fresh_tree, tmp_path, ["make", "demo"])
    assert code == 0, output[-3000:]
    assert "Error" not in output.replace("ERROR", "")  # make printed no error
    # The default relative output root, under the tree the command ran in.
    assert report.is_relative_to(fresh_tree / "reports") and report.is_file()
    assert "verdict: FAIL" in output and "the injected faults were caught" in output
    assert summary["verdict"] == "FAIL"
    assert _by_status(summary, "fail") == INJECTED_FAILURES
    assert _by_status(summary, "warn") == INJECTED_WARNINGS
    inv = summary["invariants"]
    assert inv["CM-TOPIC-1"]["examples"][0]["topic"] == "audit-log"
    for unchecked in ("CM-OFFSET-1", "CM-OFFSET-2"):  # the missing partition: never passed
        (gap,) = inv[unchecked]["unchecked_gaps"]
        assert gap["missing"].startswith("the destination partition"), gap
        assert gap["first"] == [{"topic": "audit-log", "partition": "2"}], gap
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
    html = report.read_text()
    assert "demo-left-open" in html
    assert "First divergence per partition" in html and "payload_differs" in html
    assert (report.parent.parent / "validation" / "data_docs" / "index.html").is_file()


def test_the_healthy_demo_from_a_fresh_tree_passes_with_exit_0(fresh_tree: Path, tmp_path: Path) -> None:
    code, summary, output, report = _readme_command(
        fresh_tree, tmp_path, [str(fresh_tree / ".venv" / "bin" / "mirror-audit"), "demo", "--healthy"]
    )
    assert code == 0, output[-3000:]
    assert report.is_relative_to(fresh_tree / "reports") and report.is_file()
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


@pytest.mark.parametrize("healthy", [True, False], ids=["healthy", "faulty"])
def test_mm2_demo(tmp_path: Path, healthy: bool) -> None:
    """The same flow with a real MirrorMaker 2: healthy passes every mm2 invariant; the faulty
    run fails exactly MM2-CKPT-2 and CM-GROUP-2 (records deleted on the target past the
    analytics checkpoint, which MirrorMaker 2 had already synced into the target group),
    MM2-READY-1 (a group live on the target) and MM2-DATA-1 (10 records MirrorMaker 2 was
    made to skip)."""
    code, summary, output = _demo(tmp_path, "--mode", "mm2", *(["--healthy"] if healthy else []))
    assert summary, output[-3000:]
    assert summary["mode"] == "mm2"
    assert not (tmp_path / "sandbox" / "state.json").exists()  # torn down, MirrorMaker 2 too
    statuses = {k: v["status"] for k, v in summary["invariants"].items()}
    if healthy:
        assert code == 0, output[-3000:]
        # Every mm2 invariant and the CM ones that apply under translation; MM2-GROUP-1
        # included, group offset sync is on; the record-level ones evaluated over the
        # records the demo's nightly job read on both sides.
        expected = {i.id for i in (*MM2, *MM2_DATA)} | set(CM_IN_MM2)
        assert {k for k, s in statuses.items() if s == "pass"} == expected, statuses
        assert set(statuses.values()) == {"pass", "skipped"}, statuses
        return
    assert code == 1, output[-3000:]
    assert _by_status(summary, "fail") == {"MM2-CKPT-2", "MM2-READY-1", "CM-GROUP-2", "MM2-DATA-1"}, statuses
    inv = summary["invariants"]
    (skip,) = inv["MM2-DATA-1"]["examples"]
    assert (skip["topic"], skip["partition"], skip["missing_records"], skip["first_missing_offset"]) == (
        "orders",
        2,
        10,
        200,
    )
    assert {e["group_id"] for e in inv["MM2-CKPT-2"]["examples"]} == {"analytics"}
    # The synced target offset (the checkpoint's downstream, 40) now lies below the replica's
    # log start (45): consumers failing over would hit OffsetOutOfRange.
    assert {(e["group_id"], e["topic"]) for e in inv["CM-GROUP-2"]["examples"]} == {("analytics", "payments")}
    assert "billing" in {e.get("group_id") for e in inv["MM2-READY-1"]["examples"]}
