"""The audit against the real sandbox brokers: read-only snapshots, clear errors, a real fault caught.

The jobs whose results are checked here run in this process on the suite's Spark session
(``run_in_process``: what a command computes, without a JVM started per call); what a user
sees of a process (the one-line error, the exit code of a fresh process) runs as one."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from audit.sandbox.cluster import start_node, stop_node
from audit.sandbox.state import SandboxState
from audit.sandbox.traffic import Record, commit_offsets, produce
from tests.cli import run_cli, run_in_process
from tests.run_files import assert_metrics_agree


def _config(tmp: Path, sandbox: SandboxState, extra: str = "") -> Path:
    path = tmp / "audit.yaml"
    path.write_text(
        f"source:\n  bootstrap_servers: {sandbox.cluster('source').bootstrap}\n  timeout_seconds: 20\n"
        f"destination:\n  bootstrap_servers: {sandbox.cluster('destination').bootstrap}\n"
        "  timeout_seconds: 20\n"
        f"spark:\n  master: local[2]\n  conf:\n    spark.sql.shuffle.partitions: '2'\n"
        f"output:\n  root: {tmp / 'reports'}\n{extra}"
    )
    return path


def _cluster_state(bootstrap: str) -> tuple[set[str], set[str], dict[str, object]]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = set(admin.list_topics(timeout=30).topics)
    groups = {g.group_id for g in admin.list_consumer_groups(request_timeout=30).result(timeout=30).valid}
    from confluent_kafka import ConsumerGroupTopicPartitions

    offsets: dict[str, object] = {}
    for gid in sorted(groups):
        res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(gid)])[gid].result(timeout=30)
        offsets[gid] = sorted((tp.topic, tp.partition, tp.offset) for tp in res.topic_partitions or [])
    return topics, groups, offsets


def _mirror_topic(sandbox: SandboxState, topic: str, records: int, assignment: list[list[int]]) -> None:
    """Same topic and records on both clusters: what an offset-preserving mirror produces."""
    for name in ("source", "destination"):
        bootstrap = sandbox.cluster(name).bootstrap
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment)])[
            topic
        ].result(timeout=60)
        produce(
            bootstrap,
            topic,
            [Record(f"k{i}".encode(), f"v{i}".encode()) for i in range(records)],
            partition=0,
        )


def _commit(bootstrap: str, group_id: str, topic: str, offset: int) -> None:
    commit_offsets(bootstrap, group_id, {(topic, 0): offset})


def _go_readiness(tmp: Path, sandbox: SandboxState, topic: str, group: str) -> dict[str, Any]:
    """A live readiness check scoped to one topic and one group, which must exit 0: its
    summary (``--output json``)."""
    scope = f"scope:\n  topics:\n    include: ['{topic}']\n  groups:\n    include: ['{group}']\n"
    cfg = _config(tmp, sandbox, scope)
    ready = run_in_process("readiness", "--config", str(cfg), "--out", str(tmp / "ready"), "--output", "json")
    assert ready.returncode == 0, ready.stdout + ready.stderr[-3000:]
    summary: dict[str, Any] = json.loads(ready.stdout)["summary"]
    return summary


def test_snapshot_is_read_only(sandbox: SandboxState, tmp_path: Path) -> None:
    topic = f"ro-{uuid.uuid4().hex[:8]}"
    _mirror_topic(sandbox, topic, 20, [[1, 2]])
    _commit(sandbox.cluster("source").bootstrap, f"g-{topic}", topic, 15)
    # An open transaction on the source makes the snapshot read the record at the LSO.
    p = Producer(
        {"bootstrap.servers": sandbox.cluster("source").bootstrap, "transactional.id": f"tx-{topic}"}
    )
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, b"open", partition=0)
    p.flush(30)
    before = {n: _cluster_state(sandbox.cluster(n).bootstrap) for n in ("source", "destination")}
    proc = run_cli("snapshot", "--config", str(_config(tmp_path, sandbox)), "--out", str(tmp_path / "snap"))
    p.abort_transaction(30)
    assert proc.returncode == 0, proc.stderr
    after = {n: _cluster_state(sandbox.cluster(n).bootstrap) for n in ("source", "destination")}
    assert after == before  # no topic, group or committed offset appeared or moved
    for role in ("source", "destination"):
        manifest = json.loads((tmp_path / "snap" / role / "manifest.json").read_text())
        assert manifest["role"] == role and manifest["format"] == "mirror-audit-snapshot/1"
    import pyarrow.parquet as pq

    rows = pq.read_table(tmp_path / "snap" / "source" / "partitions.parquet").to_pylist()
    row = next(r for r in rows if r["topic"] == topic)
    assert row["high_watermark"] == 21 and row["last_stable_offset"] == 20
    assert row["open_txn_first_timestamp_ms"] is not None


def test_unreachable_cluster_is_a_one_line_error(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(
        "source:\n  bootstrap_servers: 127.0.0.1:1\n  timeout_seconds: 3\n"
        "destination:\n  bootstrap_servers: 127.0.0.1:1\n  timeout_seconds: 3\n"
    )
    started = time.monotonic()
    proc = run_cli("snapshot", "--config", str(cfg), "--out", str(tmp_path / "snap"))
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "mirror-audit: error: destination cluster (127.0.0.1:1)"
    )  # destination is taken first
    assert "list_topics" in last
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "snap").exists()
    assert time.monotonic() - started < 120


def test_source_epoch_bump_is_caught_as_cm_epoch_1(sandbox: SandboxState, tmp_path: Path) -> None:
    """A real leader change on the source (broker stop) raises SLE above DLE: CM-EPOCH-1 fails."""
    topic = f"epoch-{uuid.uuid4().hex[:8]}"
    _mirror_topic(sandbox, topic, 10, [[2, 1]])  # node 2 leads; node 1 (the controller) stays up
    group = f"g-{topic}"
    for name in ("source", "destination"):
        _commit(sandbox.cluster(name).bootstrap, group, topic, 10)
    stop_node(sandbox, "source", 2)
    try:
        deadline = time.monotonic() + 60
        admin = AdminClient({"bootstrap.servers": sandbox.cluster("source").node(1).bootstrap})
        while time.monotonic() < deadline:
            md = admin.list_topics(topic, timeout=10).topics[topic].partitions[0]
            if md.leader == 1:
                break
            time.sleep(0.5)
    finally:
        start_node(sandbox, "source", 2)
    scope = f"scope:\n  topics:\n    include: ['{topic}']\n  groups:\n    include: ['{group}']\n"
    # The nightly job on the in-process engine: a leader epoch is metadata, judged alike by
    # both engines (tests/spark/test_engine_parity.py); this test's subject is the broker stop.
    proc = run_in_process(
        "nightly",
        "--config",
        str(_config(tmp_path, sandbox, scope)),
        "--out",
        str(tmp_path / "run"),
        "--engine",
        "local",
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["run"]["job"] == "nightly"
    inv = summary["invariants"]
    assert inv["CM-EPOCH-1"]["status"] == "fail"
    (example,) = inv["CM-EPOCH-1"]["examples"]
    assert (example["topic"], example["partition"], example["epoch_headroom"]) == (topic, 0, -1)
    assert example["src_leader_epoch"] == example["dst_leader_epoch"] + 1
    assert inv["CM-TOPIC-1"]["status"] == "pass"
    assert inv["CM-LAG-1"]["status"] == "pass"
    assert inv["CM-GROUP-1"]["status"] == "pass"
    assert "verdict: FAIL" in proc.stdout and "CM-EPOCH-1" in proc.stdout
    assert (tmp_path / "run" / "report" / "index.html").exists()
    assert (tmp_path / "run" / "validation" / "data_docs" / "index.html").exists()
    # The pre-failover check on the live clusters (its default, in-process engine): NO-GO.
    cfg = _config(tmp_path, sandbox, scope)
    ready = run_in_process("readiness", "--config", str(cfg), "--out", str(tmp_path / "ready"))
    assert ready.returncode == 1, ready.stdout + ready.stderr
    assert "readiness: NO-GO" in ready.stdout
    ready_summary = json.loads((tmp_path / "ready" / "summary.json").read_text())
    assert (ready_summary["readiness"], ready_summary["run"]["engine"]) == ("NO-GO", "local")
    assert ready_summary["invariants"]["CM-EPOCH-1"]["status"] == "fail"
    assert ready_summary["expected_loss_records"] == 0
    # Its Data Docs only where output.readiness_data_docs asks: the report says where to look.
    assert not (tmp_path / "ready" / "validation" / "data_docs").exists()
    assert ready_summary["run"]["data_docs"] is False
    assert (
        "No Great Expectations Data Docs for this run"
        in (tmp_path / "ready" / "report" / "index.html").read_text()
    )


def test_offset_lag_retention_epoch_group_and_scope_faults_caught(
    sandbox: SandboxState, tmp_path: Path
) -> None:
    """Faults produced on the real brokers, each caught by the invariant that owns it."""
    run = uuid.uuid4().hex[:6]
    src, dst = sandbox.cluster("source").bootstrap, sandbox.cluster("destination").bootstrap
    ahead, lagging, expired, app = (
        f"ahead-{run}",
        f"lagging-{run}",
        f"expired-{run}",
        f"app{run}-store-changelog",
    )
    for t in (ahead, lagging, expired, app):
        _mirror_topic(sandbox, t, 20, [[1, 2]])
    # CM-OFFSET-1: the destination holds records the source never had.
    produce(dst, ahead, [Record(None, b"extra")] * 5, partition=0)
    # CM-LAG-1: the source runs 12,000 records ahead (max_lag_records is 10,000).
    produce(src, lagging, [Record(None, b"x")] * 12_000, partition=0)
    # CM-OFFSET-2: the source's retention removed records the destination never got.
    produce(src, expired, [Record(None, b"y")] * 30, partition=0)
    admin = AdminClient({"bootstrap.servers": src})
    admin.delete_records([TopicPartition(expired, 0, 40)])[TopicPartition(expired, 0, 40)].result(timeout=60)
    # CM-EPOCH-3: a destination commit carrying a leader epoch above the partition's.
    c = Consumer({"bootstrap.servers": dst, "group.id": f"epoch-{run}", "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(ahead, 0, 10, leader_epoch=7)], asynchronous=False)
    c.close()
    _commit(src, f"epoch-{run}", ahead, 10)
    # CM-GROUP-3: an excluded group whose offsets were synced anyway.
    for bootstrap in (src, dst):
        _commit(bootstrap, f"private-{run}", lagging, 5)
    # CM-SCOPE-1: a Kafka Streams changelog topic and its application's group are mirrored.
    for bootstrap in (src, dst):
        _commit(bootstrap, f"app{run}", app, 5)
    scope = (
        f"scope:\n  topics:\n    include: ['.*-{run}', 'app{run}-.*']\n"
        f"  groups:\n    include: ['.*-{run}', 'app{run}']\n    exclude: ['private-{run}']\n"
    )
    proc = run_in_process(
        "nightly", "--config", str(_config(tmp_path, sandbox, scope)), "--out", str(tmp_path / "run")
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    inv = json.loads((tmp_path / "run" / "summary.json").read_text())["invariants"]

    def topics(invariant: str, key: str = "topic") -> set[str]:
        return {e[key] for e in inv[invariant]["examples"]}

    assert (inv["CM-OFFSET-1"]["status"], topics("CM-OFFSET-1")) == ("fail", {ahead})
    assert (inv["CM-LAG-1"]["status"], topics("CM-LAG-1")) == ("fail", {lagging})
    assert (inv["CM-OFFSET-2"]["status"], topics("CM-OFFSET-2")) == ("fail", {expired})
    assert (inv["CM-EPOCH-3"]["status"], topics("CM-EPOCH-3", "group_id")) == ("fail", {f"epoch-{run}"})
    assert (inv["CM-GROUP-3"]["status"], topics("CM-GROUP-3", "group_id")) == ("fail", {f"private-{run}"})
    assert inv["CM-SCOPE-1"]["status"] == "warn"
    assert {
        e.get("topic") or e.get("group_id") for c in inv["CM-SCOPE-1"]["checks"] for e in c["examples"]
    } == {app, f"app{run}"}
    assert inv["CM-EPOCH-1"]["status"] == "pass"
    # Readiness's in-process engine judges the same live snapshots exactly as Spark did.
    run_dir = tmp_path / "run"
    ready = run_in_process(
        "readiness",
        "--source",
        str(run_dir / "source"),
        "--destination",
        str(run_dir / "destination"),
        "--config",
        str(tmp_path / "audit.yaml"),
        "--out",
        str(tmp_path / "ready"),
    )
    assert ready.returncode == 1, ready.stdout + ready.stderr
    ready_inv = json.loads((tmp_path / "ready" / "summary.json").read_text())["invariants"]

    def counts(invariants: dict[str, Any]) -> dict[str, tuple[str, int, int]]:
        return {k: (v["status"], v["evaluated"], v["violations"]) for k, v in invariants.items()}

    assert counts(ready_inv) == counts(inv)

    # A second nightly of the same pair under the same output root: the lag caught up, a
    # new fault appeared; it says what changed since the run before it (the readiness
    # check above) and since when the faults still there have been failing.
    produce(dst, lagging, [Record(None, b"x")] * 12_000, partition=0)
    for bootstrap, committed in ((src, 10), (dst, 500)):  # CM-GROUP-2: past the destination's LEO
        _commit(bootstrap, f"range-{run}", ahead, committed)
    # On the in-process engine: the history's keys are the same whichever engine wrote them
    # (tests/spark/test_engine_parity.py), and the first nightly above ran on Spark.
    again = run_in_process(
        "nightly",
        "--config",
        str(tmp_path / "audit.yaml"),
        "--out",
        str(tmp_path / "run2"),
        "--engine",
        "local",
    )
    assert again.returncode == 1, again.stdout + again.stderr
    second = assert_metrics_agree(tmp_path / "run2")
    changes = second["changes"]
    assert changes["previous_run"]["dir"] == "ready"
    ids = {k: {e["id"] for e in v} for k, v in changes["invariants"].items()}
    assert "CM-LAG-1" in ids["resolved"]
    assert "CM-GROUP-2" in ids["newly_failing"]
    assert "CM-OFFSET-1" in ids["still_failing"]
    assert changes["rows"]["CM-GROUP-2"]["new_examples"] == [
        {"group_id": f"range-{run}", "topic": ahead, "partition": "0"}
    ]
    assert changes["rows"]["CM-LAG-1"]["resolved"] == 1
    (seen,) = second["invariants"]["CM-OFFSET-1"]["examples_seen"]
    assert (seen["first_run"], seen["runs"]) == ("run", 3)
    page = (tmp_path / "run2" / "report" / "index.html").read_text(encoding="utf-8")
    assert "What changed since the previous run" in page and "3 runs" in page


def test_batched_list_offsets_gives_what_a_future_per_partition_gives(sandbox: SandboxState) -> None:
    """One ListOffsets request per leader (kafka-python) against librdkafka's future per
    partition, on the same partitions: log start after a deletion, high watermark, last
    stable offset under an open transaction, newest timestamp, leader epochs, and an empty
    partition."""
    from audit.collect.metadata.kafka_admin import KafkaAdmin
    from audit.config import ClusterConfig

    topic = f"lo-{uuid.uuid4().hex[:8]}"
    _mirror_topic(sandbox, topic, 30, [[1, 2], [2, 1], [1, 2]])
    bootstrap = sandbox.cluster("source").bootstrap
    admin_client = AdminClient({"bootstrap.servers": bootstrap})
    admin_client.delete_records([TopicPartition(topic, 0, 7)])[TopicPartition(topic, 0, 7)].result(timeout=30)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{topic}"})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, b"open", partition=1)
    p.flush(30)
    try:
        admin = KafkaAdmin("source", ClusterConfig(bootstrap))
        tps = [(topic, 0), (topic, 1), (topic, 2)]
        asked = [("earliest", False), ("latest", False), ("latest", True), ("max_timestamp", False)]
        batched = {(spec, c): admin.list_offsets_batched(tps, spec, c) for spec, c in asked}
        one_by_one = {(spec, c): admin.list_offsets_per_partition(tps, spec, c) for spec, c in asked}
    finally:
        p.abort_transaction(30)
    assert batched == one_by_one
    assert batched[("earliest", False)][(topic, 0)].offset == 7
    assert batched[("latest", False)][(topic, 0)].offset == 30
    high, stable = batched[("latest", False)], batched[("latest", True)]
    assert (high[(topic, 1)].offset, stable[(topic, 1)].offset) == (1, 0)  # the open transaction
    assert batched[("max_timestamp", False)][(topic, 0)].timestamp_ms is not None
    assert batched[("max_timestamp", False)][(topic, 2)].offset == -1  # empty: no newest record
    assert all(info.leader_epoch is not None for info in batched[("latest", False)].values())


def test_batched_offset_fetch_gives_what_one_group_per_request_gives(sandbox: SandboxState) -> None:
    """KIP-709's many-groups OffsetFetch (kafka-python) against librdkafka's one group per
    request, on the same groups: offsets, leader epochs and metadata alike."""
    from audit.collect.metadata.kafka_admin import KafkaAdmin
    from audit.config import ClusterConfig

    run = uuid.uuid4().hex[:6]
    topic = f"fetch-{run}"
    _mirror_topic(sandbox, topic, 30, [[1, 2], [2, 1]])
    bootstrap = sandbox.cluster("destination").bootstrap
    groups = [f"fetch-{run}-{i}" for i in range(12)]
    for i, gid in enumerate(groups):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": gid, "enable.auto.commit": False})
        c.commit(
            offsets=[
                TopicPartition(topic, 0, i, leader_epoch=i % 3 or -1, metadata=f"m{i}" if i % 2 else ""),
                TopicPartition(topic, 1, 2 * i),
            ],
            asynchronous=False,
        )
        c.close()
    admin = KafkaAdmin("destination", ClusterConfig(bootstrap))
    batched = admin.committed_offsets_batched([*groups, f"never-{run}"])
    assert batched is not None, "the batched path was refused by a 4.x broker"
    one_by_one = admin.committed_offsets_per_group([*groups, f"never-{run}"])

    assert {
        g: sorted(rows, key=lambda c: (c.topic, c.partition)) for g, rows in one_by_one.items()
    } == batched
    assert batched[f"never-{run}"] == []
    first = {(c.partition, c.offset, c.leader_epoch, c.metadata) for c in batched[groups[1]]}
    assert first == {(0, 1, 1, "m1"), (1, 2, None, None)}


def test_a_readiness_and_a_nightly_started_together_under_one_root_each_keep_their_run(
    sandbox: SandboxState, tmp_path: Path
) -> None:
    """Started in the same second under one output root (no --out: each names its run by
    the time it started), they shared a run directory and the second's snapshots replaced
    the first's; each now reserves its own by an exclusive mkdir."""
    import subprocess
    import sys

    topic = f"together-{uuid.uuid4().hex[:8]}"
    _mirror_topic(sandbox, topic, 10, [[1, 2]])
    scope = f"scope:\n  topics:\n    include: ['{topic}']\n  groups:\n    include: []\n"
    cfg = _config(tmp_path, sandbox, scope)
    procs = [
        subprocess.Popen(
            # The in-process engine for both: what is tested is the run directory each reserves.
            [sys.executable, "-m", "audit.cli", job, "--config", str(cfg), "--engine", "local"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for job in ("nightly", "readiness")
    ]
    outputs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outputs]
    runs = sorted(d for d in (tmp_path / "reports").iterdir() if d.is_dir())
    jobs = sorted(json.loads((d / "summary.json").read_text())["run"]["job"] for d in runs)
    assert jobs == ["nightly", "readiness"], runs
    for d in runs:  # each audited its own snapshots
        assert (d / "source" / "manifest.json").is_file() and (d / "destination" / "manifest.json").is_file()


def test_the_documented_python_api_example_runs_against_the_sandbox(
    sandbox: SandboxState, tmp_path: Path, monkeypatch: Any, capsys: Any
) -> None:
    """docs/usage.md "The Python API": its example block, as it stands, on a mirrored topic
    of the sandbox (the config path and the run's output root are this test's)."""
    import re

    page = (Path(__file__).parents[2] / "docs" / "usage.md").read_text()
    section = page.split("\n## The Python API\n", 1)[1]
    (block,) = re.findall(r"```python\n(.*?)```", section.split("\n## ", 1)[0], re.S)[:1]
    topic = f"api-{uuid.uuid4().hex[:8]}"
    _mirror_topic(sandbox, topic, 10, [[1, 2]])
    scope = f"scope:\n  topics:\n    include: ['{topic}']\n  groups:\n    include: ['none-{topic}']\n"
    config = _config(tmp_path, sandbox, scope)
    assert '"conf/audit.yaml"' in block
    namespace: dict[str, Any] = {}
    exec(compile(block.replace('"conf/audit.yaml"', repr(str(config))), "docs/usage.md", "exec"), namespace)
    result = namespace["result"]
    assert (result.readiness, result.exit_code, result.figures["expected_loss_records"]) == ("GO", 0, 0)
    assert result.run_dir.parent == tmp_path / "reports" and result.report.is_file()
    assert json.loads(result.summary_path.read_text()) == result.summary
    out = capsys.readouterr().out
    assert f"0 records would be lost; report: {result.report}" in out


def test_readiness_counts_what_a_group_behind_the_destinations_log_start_never_sees(
    sandbox: SandboxState, tmp_path: Path
) -> None:
    """Real brokers: the destination deleted records 0-99 (DeleteRecords), the group is at
    40 on the source and synced to 100 (the clamp). CM-GROUP-1 passes, CM-GROUP-4 warns,
    and readiness counts exactly the 60 records its consumers would never see."""
    topic = f"unseen-{uuid.uuid4().hex[:8]}"
    _mirror_topic(sandbox, topic, 200, [[1, 2]])
    destination = sandbox.cluster("destination").bootstrap
    admin = AdminClient({"bootstrap.servers": destination})
    (deleted,) = admin.delete_records([TopicPartition(topic, 0, 100)]).values()
    assert deleted.result(timeout=30).low_watermark == 100  # the destination's new log start
    group = f"g-{topic}"
    _commit(sandbox.cluster("source").bootstrap, group, topic, 40)
    _commit(destination, group, topic, 100)
    summary = _go_readiness(tmp_path, sandbox, topic, group)
    assert summary["readiness"] == "GO", summary["readiness_reasons"]
    assert (summary["expected_unseen_records"], summary["expected_loss_records"]) == (60, 0)
    inv = summary["invariants"]
    assert inv["CM-GROUP-1"]["status"] == "pass" and inv["CM-GROUP-4"]["status"] == "warn"
    (example,) = inv["CM-GROUP-4"]["examples"]
    assert (example["group_id"], example["unseen_records"], example["dst_log_start_offset"]) == (
        group,
        60,
        100,
    )


def test_a_real_kafka_streams_group_is_collected_and_named_by_cm_scope_1_from_its_type(
    sandbox: SandboxState, tmp_path: Path
) -> None:
    """A Kafka Streams application (group.protocol=streams, KIP-1071) run on the source
    from Maven Central's kafka-streams: librdkafka's group listing leaves its group out; the
    snapshot has it (type streams, its state, its commits), and CM-SCOPE-1 names it by its
    type though none of its internal topics (repartition, changelog) is in scope."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    from audit.sandbox.streams_app import streams_application

    run = uuid.uuid4().hex[:8]
    topic, app = f"events-{run}", f"ledger{run}"
    _mirror_topic(sandbox, topic, 20, [[1, 2]])
    source, destination = sandbox.cluster("source").bootstrap, sandbox.cluster("destination").bootstrap
    admin = AdminClient({"bootstrap.servers": source})

    def committed() -> int | None:
        (future,) = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(app)]).values()
        found = {(tp.topic, tp.partition): tp.offset for tp in future.result(timeout=30).topic_partitions}
        return found.get((topic, 0))

    with streams_application(source, app, topic, tmp_path / "streams"):
        deadline = time.monotonic() + 60
        while committed() != 20 and time.monotonic() < deadline:
            time.sleep(0.5)
    assert committed() == 20
    assert app not in {g.group_id for g in admin.list_consumer_groups().result(timeout=30).valid}
    # Its commits carry metadata a Java client wrote (no terminating NUL): read alone, as a
    # snapshot of a cluster with one group reads it, it is the same text every time.
    from kafka.admin import KafkaAdminClient

    from audit.collect.metadata.kafka_admin import KafkaAdmin
    from audit.config import ClusterConfig

    oracle = KafkaAdminClient(bootstrap_servers=source)
    (written,) = {om.metadata for om in oracle.list_group_offsets([app])[app].values()}
    oracle.close()
    ours = KafkaAdmin("source", ClusterConfig(source))
    for _ in range(5):
        assert {c.metadata for c in ours.committed_offsets([app])[app]} == {written}
    _commit(destination, app, topic, 20)  # synced, as the mirror would
    summary = _go_readiness(tmp_path, sandbox, topic, app)
    inv = summary["invariants"]
    assert inv["CM-GROUP-1"]["status"] == "pass", inv["CM-GROUP-1"]
    assert inv["CM-SCOPE-1"]["status"] == "warn"
    examples = [e for c in inv["CM-SCOPE-1"]["checks"] for e in c["examples"]]
    assert [(e["group_id"], e["src_group_type"], e["src_state"]) for e in examples] == [
        (app, "streams", "EMPTY")
    ]
    assert summary["readiness"] == "GO"  # CM-SCOPE-1 warns; it does not gate


def test_the_mirror_emulator_syncs_a_commit_as_the_prototype_writes_it(sandbox: SandboxState) -> None:
    """The sandbox's syncer (audit/sandbox/mirror.py) as KIP-1279's prototype writes a synced
    commit: left alone by the clamp, the source commit's leader epoch and metadata; moved to
    the destination's log start or end, the destination's epoch there and no metadata."""
    from confluent_kafka import Consumer
    from confluent_kafka.admin import OffsetSpec
    from kafka.admin import KafkaAdminClient

    from audit.sandbox.mirror import ends_by_tp, sync_group_offsets

    topic = f"sync-{uuid.uuid4().hex[:8]}"
    _mirror_topic(sandbox, topic, 200, [[1, 2]])
    source, destination = sandbox.cluster("source").bootstrap, sandbox.cluster("destination").bootstrap
    dst_admin = AdminClient({"bootstrap.servers": destination})
    (deleted,) = dst_admin.delete_records([TopicPartition(topic, 0, 100)]).values()
    deleted.result(timeout=30)
    (src_end,) = ends_by_tp(
        AdminClient({"bootstrap.servers": source}), [TopicPartition(topic, 0)], OffsetSpec.latest()
    ).values()
    tp = [TopicPartition(topic, 0)]
    (low,) = ends_by_tp(dst_admin, tp, OffsetSpec.earliest()).values()
    (high,) = ends_by_tp(dst_admin, tp, OffsetSpec.latest()).values()
    assert low[0] == 100 and high[0] == 200 and low[1] is not None and high[1] is not None
    groups = {"kept": 150, "early": 40, "late": 250}  # inside, below the log start, past the end
    run = uuid.uuid4().hex[:6]
    for name, offset in groups.items():
        c = Consumer({"bootstrap.servers": source, "group.id": f"{name}-{run}", "enable.auto.commit": False})
        c.commit(
            offsets=[TopicPartition(topic, 0, offset, metadata=f"from-{name}", leader_epoch=src_end[1])],
            asynchronous=False,
        )
        c.close()
    assert sync_group_offsets(source, destination, [f"{name}-{run}" for name in groups]) == 3

    def commits(bootstrap: str, name: str) -> tuple[int, int | None, str | None]:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            ((_, om),) = admin.list_group_offsets([f"{name}-{run}"])[f"{name}-{run}"].items()
        finally:
            admin.close()
        return om.offset, om.leader_epoch, om.metadata

    assert commits(destination, "kept") == commits(source, "kept")
    assert commits(source, "kept")[1:] == (src_end[1], "from-kept\x00")  # librdkafka's NUL, kept as committed
    assert commits(destination, "early") == (100, low[1], "")
    assert commits(destination, "late") == (200, high[1], "")


def test_a_commit_the_emulator_clamped_to_the_log_start_carries_the_epoch_of_the_batch_there(
    sandbox: SandboxState, tmp_path: Path
) -> None:
    """CM-EPOCH-3 exactly, on real brokers: the destination deleted records 0-99 and moved
    its leader (a new epoch for the records after); the emulator syncs a group at 40 to
    100 with the destination's epoch there, as the prototype does; the destination's
    batches are fetched over the wire, and the clamped commit's epoch is the batch's at 100.
    A commit there with the newer epoch (still <= DLE) fails."""
    from confluent_kafka.admin import OffsetSpec

    from audit.sandbox.leaders import move_leaders
    from audit.sandbox.mirror import ends_by_tp, sync_group_offsets

    topic = f"clamped-{uuid.uuid4().hex[:8]}"
    _mirror_topic(sandbox, topic, 150, [[1, 2]])
    source, destination = sandbox.cluster("source").bootstrap, sandbox.cluster("destination").bootstrap
    dst_admin = AdminClient({"bootstrap.servers": destination})
    (deleted,) = dst_admin.delete_records([TopicPartition(topic, 0, 100)]).values()
    deleted.result(timeout=30)
    move_leaders(destination, [TopicPartition(topic, 0)], 1)
    produce(destination, topic, [Record(b"k", b"after")], partition=0)
    produce(source, topic, [Record(b"k", b"after")], partition=0)
    # A client from before the move would ask with the old leader epoch (fenced).
    dst_admin = AdminClient({"bootstrap.servers": destination})
    (low,) = ends_by_tp(dst_admin, [TopicPartition(topic, 0)], OffsetSpec.earliest()).values()
    (high,) = ends_by_tp(dst_admin, [TopicPartition(topic, 0)], OffsetSpec.latest()).values()
    assert low[0] == 100 and high[1] is not None and low[1] is not None and high[1] > low[1]
    run = uuid.uuid4().hex[:6]
    right, wrong = f"right-{run}", f"wrong-{run}"
    for group in (right, wrong):
        _commit(source, group, topic, 40)
    assert sync_group_offsets(source, destination, [right]) == 1
    c = Consumer({"bootstrap.servers": destination, "group.id": wrong, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(topic, 0, 100, leader_epoch=high[1])], asynchronous=False)
    c.close()
    scope = f"scope:\n  topics:\n    include: ['{topic}']\n  groups:\n    include: ['{right}', '{wrong}']\n"
    cfg = _config(tmp_path, sandbox, scope)
    snap = tmp_path / "snap"
    assert run_in_process("snapshot", "--config", str(cfg), "--out", str(snap)).returncode == 0
    fetched = run_in_process(
        "segments", "fetch", "--config", str(cfg), "--role", "destination", "--out", str(snap / "destination")
    )
    assert fetched.returncode == 0, fetched.stderr[-3000:]
    audited = run_in_process(
        "audit",
        "--config",
        str(cfg),
        "--source",
        str(snap / "source"),
        "--destination",
        str(snap / "destination"),
        "--out",
        str(tmp_path / "run"),
        "--output",
        "json",
    )
    summary: dict[str, Any] = json.loads(audited.stdout)["summary"]
    epoch_3 = summary["invariants"]["CM-EPOCH-3"]
    assert epoch_3["status"] == "fail", (epoch_3.get("unchecked_gaps"), epoch_3["checks"])
    examples = [e for c in epoch_3["checks"] for e in c["examples"]]
    assert [(e["group_id"], e["dst_committed_leader_epoch"], e["batch_leader_epoch"]) for e in examples] == [
        (wrong, high[1], low[1])
    ]
    rows = {
        r["group_id"]: r
        for r in pq.read_table(tmp_path / "run" / "compare" / "commit_epochs.parquet").to_pylist()
    }
    assert (
        rows[right]["epoch_at_offset_matches"] is True and rows[right]["dst_committed_leader_epoch"] == low[1]
    )
