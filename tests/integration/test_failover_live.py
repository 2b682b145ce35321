"""The failover lifecycle on real brokers: the sandbox's mirror stopped as KIP-1279 stops,
the loss readiness predicted against the loss the stop realized, and what a failback would
truncate, each an exact record count the sandbox itself produced."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from audit.sandbox import demo_failover
from audit.sandbox.state import SandboxState
from audit.sandbox.traffic import Record, commit_offsets, produce
from tests.cli import run_cli


def _summary(run: Path) -> dict[str, Any]:
    data = json.loads((run / "summary.json").read_text())
    assert isinstance(data, dict)
    return data


def _statuses(summary: dict[str, Any]) -> dict[str, str]:
    return {k: v["status"] for k, v in summary["invariants"].items()}


@pytest.mark.parametrize("healthy", [False, True], ids=["faulty", "healthy"])
def test_failover_demo_counts_exactly_what_the_sandbox_did(tmp_path: Path, healthy: bool) -> None:
    proc = run_cli(
        "demo",
        "--failover",
        *(["--healthy"] if healthy else []),
        "--out",
        str(tmp_path / "run"),
        "--workdir",
        str(tmp_path / "sandbox"),
        timeout=900,
        cwd=tmp_path,
    )
    output = proc.stdout + proc.stderr
    assert (tmp_path / "run" / "failback" / "summary.json").is_file(), output[-3000:]
    assert not (tmp_path / "sandbox" / "state.json").exists()  # torn down, the mirror too
    ready, verify, back = (_summary(tmp_path / "run" / step) for step in ("readiness", "verify", "failback"))
    # CM-FAILOVER-1 is judged in both (never skipped): the stop recorded its positions, the
    # stop's ABORT marker is counted as a control record, the leader epochs were raised.
    assert _statuses(verify)["CM-FAILOVER-1"] == "pass", verify["invariants"]["CM-FAILOVER-1"]
    if healthy:
        assert proc.returncode == 0, output[-3000:]
        assert ready["readiness"] == "GO" and ready["run"]["drained"]["polls"] >= 2
        assert ready["expected_loss_records"] == 0
        assert verify["verdict"] == "PASS" and set(_statuses(verify).values()) == {"pass"}
        assert verify["failover"]["realized_loss_records"] == 0
        assert back["readiness"] == "GO" and back["failback_truncation_records"] == 0
        return
    assert proc.returncode == 1, output[-3000:]
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


def _config(tmp: Path, sandbox: SandboxState, topic: str, group: str, state_file: Path | None = None) -> Path:
    path = tmp / ("after.yaml" if state_file else "audit.yaml")
    mirror = f"mirror:\n  state_file: {state_file}\n" if state_file else ""
    path.write_text(
        f"source:\n  bootstrap_servers: {sandbox.cluster('source').bootstrap}\n  timeout_seconds: 20\n"
        f"destination:\n  bootstrap_servers: {sandbox.cluster('destination').bootstrap}\n"
        "  timeout_seconds: 20\n"
        f"scope:\n  topics:\n    include: ['{topic}']\n  groups:\n    include: ['{group}']\n"
        f"output:\n  root: {tmp / 'reports'}\n{mirror}"
    )
    return path


def test_drain_stop_and_verify_with_the_commands_a_runbook_uses(
    sandbox: SandboxState, tmp_path: Path
) -> None:
    """``readiness --wait-drained`` times out (exit 1, the lagging partition named) while
    nothing mirrors, then passes once the sandbox's mirror has copied everything; the
    mirror is stopped with ``sandbox failover``, its state exported with ``sandbox
    mirror-state`` and ``failover verify`` finds nothing lost."""
    run = uuid.uuid4().hex[:8]
    topic, group = f"drain-{run}", f"drain-app-{run}"
    for name in ("source", "destination"):
        admin = AdminClient({"bootstrap.servers": sandbox.cluster(name).bootstrap})
        admin.create_topics([NewTopic(topic, num_partitions=2, replica_assignment=[[1, 2], [2, 1]])])[
            topic
        ].result(timeout=60)
    src = sandbox.cluster("source").bootstrap
    for p in (0, 1):
        produce(src, topic, [Record(f"k{i}".encode(), b"v") for i in range(20 + p)], partition=p)
    commit_offsets(src, group, {(topic, 0): 15, (topic, 1): 21})
    cfg = _config(tmp_path, sandbox, topic, group)
    workdir = ["--workdir", sandbox.workdir]

    stuck = run_cli(
        "readiness", "--config", str(cfg), "--wait-drained", "--timeout", "3", "--out", str(tmp_path / "r0")
    )
    assert stuck.returncode == 1, stuck.stdout + stuck.stderr
    assert "not drained after" in stuck.stdout
    assert f"{topic}-1: 21 records" in stuck.stdout and f"{topic}-0: 20 records" in stuck.stdout
    assert not (tmp_path / "r0" / "summary.json").exists()

    started = run_cli("sandbox", "mirror-start", "--topics", topic, "--groups", group, *workdir)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        ready = run_cli(
            "readiness",
            "--config",
            str(cfg),
            "--wait-drained",
            "--timeout",
            "120",
            "--out",
            str(tmp_path / "r1"),
        )
        assert ready.returncode == 0, ready.stdout + ready.stderr
        assert "drained: 2 partitions" in ready.stdout and "readiness: GO" in ready.stdout
        assert "drain:" in ready.stderr  # the progress line
        assert _summary(tmp_path / "r1")["expected_loss_records"] == 0
    finally:
        stopped = run_cli("sandbox", "failover", *workdir)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    state = tmp_path / "mirror-state.json"
    exported = run_cli("sandbox", "mirror-state", "--out", str(state), *workdir)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    partitions = [
        p
        for m in json.loads(state.read_text())["Mirrors"]
        for t in m["Topics"]
        for p in t["Partitions"]
        if t["TopicName"] == topic
    ]
    assert sorted((p["PartitionIndex"], p["StateValue"], p["LastMirrorOffset"]) for p in partitions) == [
        (0, "STOPPED", 20),
        (1, "STOPPED", 21),
    ]
    after = _config(tmp_path, sandbox, topic, group, state_file=state)
    verify = run_cli(
        "failover",
        "verify",
        "--before",
        str(tmp_path / "r1"),
        "--config",
        str(after),
        "--out",
        str(tmp_path / "v"),
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
    summary = _summary(tmp_path / "v")
    assert _statuses(summary) == {"CM-FAILOVER-1": "pass", "CM-FAILOVER-2": "pass", "CM-FAILOVER-3": "pass"}
    assert summary["failover"]["realized_loss_records"] == 0
