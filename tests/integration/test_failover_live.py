"""The failover lifecycle on real brokers with the commands a runbook uses: the sandbox's
mirror stopped as KIP-1279 stops, the loss readiness predicted against the loss the stop
realized, each an exact record count the sandbox itself produced. The failover demo (the
whole lifecycle, failback included) is tests/integration/test_demo.py's."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from audit.sandbox.state import SandboxState
from audit.sandbox.traffic import Record, commit_offsets, produce
from tests.cli import run_cli


def _summary(run: Path) -> dict[str, Any]:
    data = json.loads((run / "summary.json").read_text())
    assert isinstance(data, dict)
    return data


def _statuses(summary: dict[str, Any]) -> dict[str, str]:
    return {k: v["status"] for k, v in summary["invariants"].items()}


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
    assert "failover verify: GO" in verify.stdout and "readiness:" not in verify.stdout
    summary = _summary(tmp_path / "v")
    assert _statuses(summary) == {"CM-FAILOVER-1": "pass", "CM-FAILOVER-2": "pass", "CM-FAILOVER-3": "pass"}
    assert summary["failover"]["realized_loss_records"] == 0
