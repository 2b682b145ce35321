"""The scale benchmark's smoke test (bench/scale.py runs the large sizes): its workload of
2,000 partitions and 400 groups per cluster, created in chunks as at 50,000 (here 500
partitions per request, so the chunking is exercised), and a readiness check over it."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from confluent_kafka.admin import AdminClient

from audit.sandbox.state import SandboxState
from audit.sandbox.workload import make_workload
from tests.cli import run_cli


def test_readiness_over_the_scale_workload(sandbox: SandboxState, tmp_path: Path) -> None:
    prefix = f"scale{uuid.uuid4().hex[:6]}"
    work = make_workload(sandbox, 2_000, prefix, max_partitions_per_request=500)
    try:
        assert (work.partitions, len(work.groups), work.create_requests) == (2_000, 400, 4)
        cfg = tmp_path / "audit.yaml"
        cfg.write_text(
            f"source:\n  bootstrap_servers: {sandbox.cluster('source').bootstrap}\n"
            f"destination:\n  bootstrap_servers: {sandbox.cluster('destination').bootstrap}\n"
            f"scope:\n  topics:\n    include: ['{prefix}-.*']\n  groups:\n    include: ['{prefix}-.*']\n"
        )
        proc = run_cli("readiness", "--config", str(cfg), "--out", str(tmp_path / "ready"))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        summary = json.loads((tmp_path / "ready" / "summary.json").read_text())
        assert summary["readiness"] == "GO"
        inv = summary["invariants"]
        assert inv["CM-TOPIC-1"]["evaluated"] == 20
        assert inv["CM-EPOCH-1"]["evaluated"] == 2_000
        assert inv["CM-GROUP-2"]["evaluated"] == 2_000  # 400 groups x 5 partitions
        assert summary["run"]["stage_seconds"]["snapshot"] > 0
    finally:  # the shared sandbox goes on to other tests: leave it as it was
        for cluster in sandbox.clusters:
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
            for f in admin.delete_consumer_groups(list(work.groups), request_timeout=60).values():
                f.result(timeout=120)
            for f in admin.delete_topics(list(work.topics), operation_timeout=120).values():
                f.result(timeout=180)
