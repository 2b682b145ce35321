"""Every demo end to end on real brokers: healthy passes, faulty fails on exactly its faults.

The demos share one sandbox, started as a user starts one (``mirror-audit sandbox up
--brokers 2``): each runs on it, leaves it running and removes the topics and groups it made,
so the next finds it as it was (``audit/sandbox/demo_sandbox.py``; every test here checks
that it did). ``make demo`` and ``mirror-audit demo --healthy`` run verbatim in a fresh copy
of the tree, the sandbox's work dir named by the environment variable docs/sandbox.md
documents. A demo on a sandbox of its own starts and stops it:
tests/integration/test_versions_live.py runs the demos that way, and the image's test too
(tests/packaging/test_image.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from audit.sandbox import demo_failover
from audit.sandbox.demo_sandbox import Footprint, footprint
from audit.sandbox.state import load_state
from audit.validate.invariants import CM_IN_MM2, MM2, MM2_DATA
from tests.cli import run_cli

INJECTED_FAILURES = {"CM-TOPIC-1", "CM-EPOCH-1", "CM-GROUP-1", "CM-GROUP-2", "CM-DATA-1"}
# CM-EPOCH-2 warns as a consequence of the epoch fault (DLE below SLE is also short of headroom),
# CM-OFFSET-1 and -2 as one of the partition missing from the destination (unchecked there).
INJECTED_WARNINGS = {"CM-TXN-1", "CM-EPOCH-2", "CM-OFFSET-1", "CM-OFFSET-2"}


@pytest.fixture(scope="module")
def shared_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Footprint]]:
    """The demos' sandbox (its work dir) and what it held before any demo ran."""
    workdir = tmp_path_factory.mktemp("demo-sandbox")
    env = {**os.environ, "MIRROR_AUDIT_SANDBOX_DIR": str(workdir)}
    up = run_cli("sandbox", "up", "--brokers", "2", env=env, timeout=300)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        state = load_state(workdir)
        assert state is not None
        yield workdir, footprint(state)
    finally:
        run_cli("sandbox", "down", env=env, timeout=300)


def _left_as_found(sandbox: tuple[Path, Footprint]) -> None:
    """The demo left the sandbox running, without a topic or group it made."""
    workdir, before = sandbox
    state = load_state(workdir)
    assert state is not None, "the demo stopped a sandbox it had not started"
    assert footprint(state) == before


def _demo(tmp_path: Path, workdir: Path, *flags: str) -> tuple[int, dict[str, Any], str]:
    proc = run_cli(
        "demo",
        *flags,
        "--out",
        str(tmp_path / "run"),
        "--workdir",
        str(workdir),
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
    for stamp in (".created", ".installed", ".native-installed"):
        assert (venv / stamp).exists(), f"run the suite through make (no {venv / stamp})"
    (tree / ".venv").symlink_to(venv)
    assert not any((tree / "reports").glob("*/")), "a fresh tree has no runs"
    return tree


def _readme_command(
    tree: Path, sandbox: tuple[Path, Footprint], argv: list[str]
) -> tuple[int, dict[str, Any], str, Path]:
    """Run a documented command (README, docs/sandbox.md) verbatim in the tree's root; the
    sandbox's work dir is named by the documented environment variable, not a flag."""
    env = {**os.environ, "MIRROR_AUDIT_SANDBOX_DIR": str(sandbox[0])}
    proc = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, timeout=900, check=False)
    output = proc.stdout + proc.stderr
    reports = [ln.removeprefix("report: ") for ln in proc.stdout.splitlines() if ln.startswith("report: ")]
    assert reports, output[-3000:]
    report = Path(reports[-1])
    summary_path = report.parent.parent / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    _left_as_found(sandbox)
    return proc.returncode, summary, output, report


def test_make_demo_from_a_fresh_tree_catches_exactly_its_faults_and_exits_0(
    fresh_tree: Path, shared_sandbox: tuple[Path, Footprint]
) -> None:
    code, summary, output, report = _readme_command(fresh_tree, shared_sandbox, ["make", "demo"])
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
    # The value, not the line: the record's timestamp (ms) can hold "9999" too (it did once).
    assert '"amount": 9999' in first["destination_record"]
    assert '"amount": 9999' not in first["source_record"]
    assert inv["CM-TXN-2"]["status"] == "pass"  # the gaps (markers) still line up
    html = report.read_text()
    assert "demo-left-open" in html
    assert "First divergence per partition" in html and "payload_differs" in html
    assert (report.parent.parent / "validation" / "data_docs" / "index.html").is_file()


def test_the_healthy_demo_from_a_fresh_tree_passes_with_exit_0(
    fresh_tree: Path, shared_sandbox: tuple[Path, Footprint]
) -> None:
    code, summary, output, report = _readme_command(
        fresh_tree, shared_sandbox, [str(fresh_tree / ".venv" / "bin" / "mirror-audit"), "demo", "--healthy"]
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


def test_mm2_demo_passes_every_mm2_invariant_on_a_healthy_mirror(
    tmp_path: Path, shared_sandbox: tuple[Path, Footprint]
) -> None:
    """The same flow with a real MirrorMaker 2, healthy: every mm2 invariant passes, exit 0.
    The faulty MirrorMaker 2 demo runs on the oldest supported line, where its faults are
    held to exactly what it injected (tests/mm2_demo_faults.py)."""
    code, summary, output = _demo(tmp_path, shared_sandbox[0], "--mode", "mm2", "--healthy")
    assert summary, output[-3000:]
    assert summary["mode"] == "mm2"
    _left_as_found(shared_sandbox)  # MirrorMaker 2's own topics and groups included
    assert not (shared_sandbox[0] / "mm2" / "mm2.json").exists()  # MirrorMaker 2 stopped
    statuses = {k: v["status"] for k, v in summary["invariants"].items()}
    assert code == 0, output[-3000:]
    # Every mm2 invariant and the CM ones that apply under translation; MM2-GROUP-1
    # included, group offset sync is on; the record-level ones evaluated over the
    # records the demo's nightly job read on both sides.
    expected = {i.id for i in (*MM2, *MM2_DATA)} | set(CM_IN_MM2)
    assert {k for k, s in statuses.items() if s == "pass"} == expected, statuses
    assert set(statuses.values()) == {"pass", "skipped"}, statuses


def _summary(run: Path) -> dict[str, Any]:
    data = json.loads((run / "summary.json").read_text())
    assert isinstance(data, dict)
    return data


def _statuses(summary: dict[str, Any]) -> dict[str, str]:
    return {k: v["status"] for k, v in summary["invariants"].items()}


@pytest.mark.parametrize("healthy", [False, True], ids=["faulty", "healthy"])
def test_failover_demo_counts_exactly_what_the_sandbox_did(
    tmp_path: Path, shared_sandbox: tuple[Path, Footprint], healthy: bool
) -> None:
    code, _, output = _demo(tmp_path, shared_sandbox[0], "--failover", *(["--healthy"] if healthy else []))
    assert (tmp_path / "run" / "failback" / "summary.json").is_file(), output[-3000:]
    _left_as_found(shared_sandbox)
    assert not (shared_sandbox[0] / "mirror" / "mirror.json").exists()  # the mirror stopped
    ready, verify, back = (_summary(tmp_path / "run" / step) for step in ("readiness", "verify", "failback"))
    # CM-FAILOVER-1 is judged in both (never skipped): the stop recorded its positions, the
    # stop's ABORT marker is counted as a control record, the leader epochs were raised.
    assert _statuses(verify)["CM-FAILOVER-1"] == "pass", verify["invariants"]["CM-FAILOVER-1"]
    if healthy:
        assert code == 0, output[-3000:]
        assert ready["readiness"] == "GO" and ready["run"]["drained"]["polls"] >= 2
        assert ready["expected_loss_records"] == 0
        assert verify["verdict"] == "PASS" and set(_statuses(verify).values()) == {"pass"}
        assert verify["failover"]["realized_loss_records"] == 0
        assert back["readiness"] == "GO" and back["failback_truncation_records"] == 0
        return
    assert code == 1, output[-3000:]
    assert ready["expected_loss_records"] == demo_failover.PREDICTED_LOSS
    failover = verify["failover"]
    assert (failover["predicted_loss_records"], failover["realized_loss_records"]) == (
        demo_failover.PREDICTED_LOSS,
        demo_failover.REALIZED_LOSS,
    )
    assert {k for k, s in _statuses(verify).items() if s != "pass"} == {"CM-FAILOVER-2"}
    (example,) = verify["invariants"]["CM-FAILOVER-2"]["examples"]
    assert (example["topic"], example["partition"], example["realized_loss_records"]) == (
        "payments",
        0,
        demo_failover.REALIZED_LOSS,
    )
    assert verify["run"]["source_offsets_read_from"] == "the live source"
    # The transaction in flight at the stop: copied open, aborted with one real marker.
    states = pq.read_table(tmp_path / "run" / "verify" / "compare" / "mirror_states.parquet").to_pylist()
    control = {(r["topic"], r["partition"]): r["stop_control_records"] for r in states}
    topic, partition, _ = demo_failover.OPEN_AT_STOP
    assert control == {(t, p): int((t, p) == (topic, partition)) for t, p in control}
    assert len(control) == 4
    assert back["readiness"] == "NO-GO" and back["failback_truncation_records"] == sum(
        demo_failover.TRUNCATED.values()
    )
    assert {k for k, s in _statuses(back).items() if s == "fail"} == {"CM-FAILBACK-1", "CM-FAILBACK-3"}
    truncated = {
        f"{e['topic']}-{e['partition']}": e["truncate_records"]
        for e in back["invariants"]["CM-FAILBACK-1"]["examples"]
    }
    assert truncated == demo_failover.TRUNCATED
    report = (tmp_path / "run" / "verify" / "report" / "index.html").read_text()
    assert "Failover: predicted and realized" in report
