"""A broker killed (``kill -9``) while the auditor reads it, and leaders moving mid-read.

Every kill lands at a pause point (``audit.faultpoints``): the run pauses after its first
read (the log start offsets of a cluster, a records wave, a fetched range), the test kills
the broker, and only then lets the run go on, so the kill provably fell inside the read.
A run then ends one of two ways, never a third: it completes with the unreadable
partitions named and a verdict that is not PASS, or it exits 2 naming the broker and what
was being read, leaving nothing marked complete. A leader moved by a preferred election
mid-read must never show as a divergence.

The sandbox here is this module's own (two brokers per cluster, node 1 the controller), so
the session's shared sandbox is never disturbed. Topics have one replica, half on each
broker: killing node 2 leaves its partitions without a leader.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from audit.collect.records.history import HISTORY_FILE
from audit.faultpoints import ENV
from audit.sandbox.cluster import SandboxOptions, running, start_node
from audit.sandbox.leaders import move_leaders
from audit.sandbox.mirror import mirror_once
from audit.sandbox.state import SandboxState, is_running
from tests.cli import run_in_process

pytestmark = pytest.mark.integration

ONE_REPLICA = "dead-broker"  # 4 partitions, one replica: 0 and 2 on node 1, 1 and 3 on node 2
TWO_REPLICAS = "moving"  # 2 partitions, two replicas: leaders move mid-read
RECORDS = 400


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    workdir = tmp_path_factory.mktemp("fault-sandbox")
    with running(SandboxOptions(workdir=workdir, brokers_per_cluster=2, heap_mb=384)) as state:
        for cluster in ("source", "destination"):
            admin = AdminClient({"bootstrap.servers": state.cluster(cluster).bootstrap})
            futures = admin.create_topics(
                [
                    NewTopic(ONE_REPLICA, num_partitions=4, replica_assignment=[[1], [2], [1], [2]]),
                    NewTopic(TWO_REPLICAS, num_partitions=2, replica_assignment=[[1, 2], [2, 1]]),
                ]
            )
            for f in futures.values():
                f.result(timeout=60)
        src = state.cluster("source").bootstrap
        p = Producer({"bootstrap.servers": src, "linger.ms": 5})
        for topic, parts in ((ONE_REPLICA, 4), (TWO_REPLICAS, 2)):
            for part in range(parts):
                for i in range(RECORDS):
                    p.produce(topic, f"{topic}-{part}-{i}".encode(), b"k", partition=part)
        assert p.flush(30) == 0
        mirror_once(src, state.cluster("destination").bootstrap, [ONE_REPLICA, TWO_REPLICAS])
        yield {"state": state, "workdir": workdir}


def _config(tmp: Path, state: SandboxState, topics: list[str], records: bool = False) -> Path:
    path = tmp / "audit.yaml"
    text = (
        f"source:\n  bootstrap_servers: {state.cluster('source').bootstrap}\n  timeout_seconds: 6\n"
        f"destination:\n  bootstrap_servers: {state.cluster('destination').bootstrap}\n"
        "  timeout_seconds: 6\n"
        f"scope:\n  topics:\n    include: {json.dumps(topics)}\n"
        "spark:\n  master: local[2]\n  conf:\n    spark.sql.shuffle.partitions: '2'\n"
        # Ranges of 100 offsets: each partition is read in waves, so a kill after the
        # first leaves reads to come.
        "records:\n  chunk_records: 50\n  split_records: 100\n  timeout_seconds: 3\n"
        f"  enabled: {'true' if records else 'false'}\n"
        f"output:\n  root: {tmp / 'reports'}\n"
    )
    path.write_text(text)
    return path


class _Paused:
    """``$MIRROR_AUDIT_PAUSE_AT`` held at ``point`` for the run, in this process and in the
    Spark session's executors; ``fault()`` runs once a reader reached the point, then the
    readers go on."""

    def __init__(self, spark: Any, tmp: Path, point: str, fault: Callable[[], None]) -> None:
        self.dir = tmp / f"pause-{point}"
        self.dir.mkdir()
        self.spark, self.spec, self.fault = spark, f"{point}={self.dir}", fault
        self.fired = False
        self.error: BaseException | None = None

    def _watch(self) -> None:
        try:
            deadline = time.monotonic() + 240
            while not (self.dir / "reached").exists():
                if time.monotonic() > deadline or (self.dir / "go").exists():
                    return  # the run ended without reaching the point: fired stays False
                time.sleep(0.05)
            self.fault()
            self.fired = True
        except BaseException as exc:  # reported by the test, never lost in the thread
            self.error = exc
        finally:
            (self.dir / "go").touch()

    def __enter__(self) -> _Paused:
        import os

        os.environ[ENV] = self.spec
        self.spark.sparkContext.environment[ENV] = self.spec
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        import os

        (self.dir / "go").touch()
        self.thread.join(timeout=300)
        os.environ.pop(ENV, None)
        self.spark.sparkContext.environment.pop(ENV, None)
        if self.error is not None:
            raise self.error


@pytest.fixture
def killer(faulty: dict[str, Any]) -> Iterator[Callable[[str], Callable[[], None]]]:
    """``killer(cluster)``: a fault that ``kill -9``s that cluster's node 2; the node is
    started again (same data) after the test."""
    killed: list[str] = []

    def make(cluster: str) -> Callable[[], None]:
        def kill() -> None:
            import os
            import signal

            node = faulty["state"].cluster(cluster).node(2)
            os.kill(node.pid, signal.SIGKILL)
            while is_running(node):
                time.sleep(0.05)
            killed.append(cluster)

        return kill

    yield make
    for cluster in killed:
        faulty["state"] = start_node(faulty["state"], cluster, 2)
        _wait_leaders(faulty["state"], cluster)


def _wait_leaders(state: SandboxState, cluster: str) -> None:
    admin = AdminClient({"bootstrap.servers": state.cluster(cluster).bootstrap})
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        topics = admin.list_topics(timeout=10).topics
        parts = [p for t in (ONE_REPLICA, TWO_REPLICAS) for p in topics[t].partitions.values()]
        if all(p.leader >= 0 and p.error is None for p in parts):
            return
        time.sleep(0.5)
    raise AssertionError(f"{cluster}: partitions still without a leader after the node restarted")


def _no_complete_output(run: Path) -> None:
    assert not (run / "summary.json").exists()
    for side in ("source", "destination"):
        assert not (run / side / "manifest.json").exists(), f"{side} snapshot left as complete"


def _node2(state: SandboxState, cluster: str) -> str:
    return state.cluster(cluster).node(2).bootstrap


def test_a_broker_killed_during_the_snapshot_is_exit_2_naming_it(
    faulty: dict[str, Any], killer: Any, spark: Any, tmp_path: Path
) -> None:
    """The destination is read first: its node 2 dies after its log start offsets were read
    and before its ends were."""
    state = faulty["state"]
    config = _config(tmp_path, state, [ONE_REPLICA])
    run = tmp_path / "run"
    with _Paused(spark, tmp_path, "snapshot.offsets", killer("destination")) as paused:
        proc = run_in_process("snapshot", "--config", str(config), "--out", str(run))
    assert paused.fired
    assert proc.returncode == 2, proc.stdout + proc.stderr
    message = proc.stderr.strip().splitlines()[-1]
    assert "destination cluster" in message
    assert f"{ONE_REPLICA}-1" in message or f"{ONE_REPLICA}-3" in message
    assert f"broker 2 ({_node2(state, 'destination')})" in message
    assert "Traceback" not in proc.stderr
    _no_complete_output(run)


def _snapshot(config: Path, run: Path) -> None:
    proc = run_in_process("snapshot", "--config", str(config), "--out", str(run))
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_a_broker_killed_during_a_records_scan_names_what_it_could_not_read(
    faulty: dict[str, Any], killer: Any, spark: Any, tmp_path: Path
) -> None:
    state = faulty["state"]
    config = _config(tmp_path, state, [ONE_REPLICA], records=True)
    run = tmp_path / "reports" / "run"
    _snapshot(config, run)
    with _Paused(spark, tmp_path, "records.wave", killer("source")) as paused:
        proc = run_in_process("records", "scan", "--config", str(config), "--out", str(run))
    assert paused.fired
    assert proc.returncode == 0, proc.stderr[-3000:]
    unread = {line for line in proc.stdout.splitlines() if "could not read" in line}
    assert unread and all(f"{ONE_REPLICA}-1 " in u or f"{ONE_REPLICA}-3 " in u for u in unread), proc.stdout
    # Only what was read is remembered as verified: the dead broker's partitions are not.
    history = json.loads((tmp_path / "reports" / HISTORY_FILE).read_text())
    through = {k: v["verified_through"] for k, v in history["partitions"].items()}
    for part in (1, 3):
        assert through.get(f"{ONE_REPLICA}/{part}", 0) < RECORDS, through
    assert through[f"{ONE_REPLICA}/0"] == through[f"{ONE_REPLICA}/2"] == RECORDS, through
    # The audit of such a scan is not PASS: the nightly test below runs it.


def test_a_broker_killed_during_a_wire_fetch_names_the_unread_ranges(
    faulty: dict[str, Any], killer: Any, spark: Any, tmp_path: Path
) -> None:
    state = faulty["state"]
    config = _config(tmp_path, state, [ONE_REPLICA])
    run = tmp_path / "run"
    _snapshot(config, run)
    text = config.read_text() + "segments:\n  split_offsets: 100\n"
    config.write_text(text)
    with _Paused(spark, tmp_path, "fetch.range", killer("source")) as paused:
        proc = run_in_process(
            "segments", "fetch", "--config", str(config), "--role", "source", "--out", str(run / "source")
        )
    assert paused.fired
    out = proc.stdout + proc.stderr
    if proc.returncode == 2:
        assert "broker 2" in out and "Traceback" not in out
        return
    assert proc.returncode == 0, out[-3000:]
    issues = pq.read_table(run / "source" / "batch_scan_issues.parquet").to_pylist()
    failed = {(i["topic"], i["partition"]) for i in issues if i["kind"] == "fetch_error"}
    assert failed and failed <= {(ONE_REPLICA, 1), (ONE_REPLICA, 3)}, [
        (i["partition"], i["position"], i["detail"]) for i in issues
    ]


def test_a_broker_killed_during_the_nightly_job_leaves_a_verdict_that_is_not_pass(
    faulty: dict[str, Any], killer: Any, spark: Any, tmp_path: Path
) -> None:
    state = faulty["state"]
    config = _config(tmp_path, state, [ONE_REPLICA], records=True)
    with _Paused(spark, tmp_path, "records.wave", killer("source")) as paused:
        proc = run_in_process("nightly", "--config", str(config), "--out", str(tmp_path / "reports" / "n"))
    assert paused.fired
    summary = json.loads((tmp_path / "reports" / "n" / "summary.json").read_text())
    # Not PASS, not an internal error: the ranges the dead broker held are unchecked (a read
    # that failed is no evidence either way, so not "missing on the source" any more).
    assert summary["verdict"] in ("WARN", "FAIL"), summary["verdict"]
    assert proc.returncode == (1 if summary["verdict"] == "FAIL" else 0), proc.stderr[-3000:]
    data1 = summary["invariants"]["CM-DATA-1"]
    assert data1["status"] != "pass" and data1["unchecked"] > 0, data1
    unread = {(r["topic"], r["partition"]) for g in data1["unchecked_gaps"] for r in g["first"]}
    assert unread and unread <= {(ONE_REPLICA, "1"), (ONE_REPLICA, "3")}, data1["unchecked_gaps"]


@pytest.mark.parametrize(("command", "point"), [("records", "records.wave"), ("fetch", "fetch.range")])
def test_a_leader_moving_mid_read_is_never_a_divergence(
    faulty: dict[str, Any], spark: Any, tmp_path: Path, command: str, point: str
) -> None:
    state = faulty["state"]
    config = _config(tmp_path, state, [TWO_REPLICAS], records=True)
    run = tmp_path / "reports" / "run"
    _snapshot(config, run)
    src = state.cluster("source").bootstrap
    moved = [TopicPartition(TWO_REPLICAS, p) for p in range(2)]
    before = {
        p["partition"]: p["leader"] for p in pq.read_table(run / "source" / "partitions.parquet").to_pylist()
    }

    def move() -> None:
        move_leaders(src, moved)

    with _Paused(spark, tmp_path, point, move) as paused:
        if command == "records":
            proc = run_in_process("records", "scan", "--config", str(config), "--out", str(run))
        else:
            config.write_text(config.read_text() + "segments:\n  split_offsets: 100\n")
            proc = run_in_process(
                "segments", "fetch", "--config", str(config), "--role", "source", "--out", str(run / "source")
            )
    assert paused.fired
    assert proc.returncode == 0, proc.stderr[-3000:]
    after = AdminClient({"bootstrap.servers": src}).list_topics(timeout=10).topics[TWO_REPLICAS].partitions
    assert {p: after[p].leader for p in after} != before  # the leaders really moved
    if command == "records":
        assert "could not read" not in proc.stdout
        proc = run_in_process(
            "audit", "--config", str(config), "--source", str(run / "source"),
            "--destination", str(run / "destination"), "--out", str(tmp_path / "reports" / "audit"),
        )  # fmt: skip
        summary = json.loads((tmp_path / "reports" / "audit" / "summary.json").read_text())
        assert summary["invariants"]["CM-DATA-1"]["status"] == "pass", summary["invariants"]["CM-DATA-1"]
        assert (
            not (run / "source" / "record_divergences.parquet").exists()
            or not pq.read_table(run / "source" / "record_divergences.parquet").num_rows
        )
    else:
        issues = pq.read_table(run / "source" / "batch_scan_issues.parquet").to_pylist()
        assert not [i for i in issues if i["kind"] == "fetch_error"], issues
        batches = pq.read_table(run / "source" / "batches.parquet").to_pylist()
        for part in range(2):
            offsets = sorted((b["base_offset"], b["last_offset"]) for b in batches if b["partition"] == part)
            covered = sum(last - base + 1 for base, last in offsets)
            assert covered == RECORDS and offsets[0][0] == 0, (part, offsets)
