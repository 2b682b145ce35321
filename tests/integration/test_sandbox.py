"""The sandbox is real: independent Apache Kafka clusters that behave like Kafka."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from confluent_kafka import IsolationLevel, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from audit.errors import SandboxError
from audit.sandbox.processes import run_tool
from audit.sandbox.state import SandboxState, load_state, process_start_ticks
from audit.sandbox.traffic import Record, create_topic, produce, read_partition, require_fresh_demo
from tests.cli import run_cli


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _latest(bootstrap: str, topic: str, isolation: IsolationLevel) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    tp = TopicPartition(topic, 0)
    result = admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=isolation, request_timeout=30)
    return int(result[tp].result(timeout=30).offset)


@pytest.mark.parametrize("cluster", ["source", "destination"])
def test_produce_and_consume_on_each_cluster(sandbox: SandboxState, cluster: str) -> None:
    bootstrap = sandbox.cluster(cluster).bootstrap
    topic = _topic("roundtrip")
    create_topic(bootstrap, topic, partitions=2, replication=2)
    records = [
        Record(f"k{i}".encode(), f"value {i}".encode(), (("trace", str(i).encode()),)) for i in range(25)
    ]
    assert produce(bootstrap, topic, records, partition=1) == 25
    got = read_partition(bootstrap, topic, 1, 0, 25)
    assert [offset for offset, _ in got] == list(range(25))
    assert [r for _, r in got] == records
    assert _latest(bootstrap, topic, IsolationLevel.READ_UNCOMMITTED) == 0  # partition 0 untouched


def test_clusters_are_independent(sandbox: SandboxState) -> None:
    ids = {}
    for name in ("source", "destination"):
        admin = AdminClient({"bootstrap.servers": sandbox.cluster(name).bootstrap})
        described = admin.describe_cluster(request_timeout=30).result(timeout=30)
        ids[name] = described.cluster_id
        assert len(described.nodes) == 2
        assert described.cluster_id == sandbox.cluster(name).cluster_id
    assert ids["source"] != ids["destination"]
    # A topic created on one cluster does not exist on the other.
    topic = _topic("only-on-source")
    create_topic(sandbox.cluster("source").bootstrap, topic)
    dst_topics = (
        AdminClient({"bootstrap.servers": sandbox.cluster("destination").bootstrap})
        .list_topics(timeout=30)
        .topics
    )
    assert topic not in dst_topics


def test_open_transaction_holds_back_last_stable_offset(sandbox: SandboxState) -> None:
    bootstrap = sandbox.cluster("source").bootstrap
    topic = _topic("txn")
    create_topic(bootstrap, topic)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": _topic("tx")})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, f"committed {i}".encode(), partition=0)
    producer.commit_transaction(30)  # offsets 0-2, COMMIT marker at 3
    producer.begin_transaction()
    for i in range(2):
        producer.produce(topic, f"open {i}".encode(), partition=0)
    producer.flush(30)  # offsets 4-5, transaction left open

    assert _latest(bootstrap, topic, IsolationLevel.READ_UNCOMMITTED) == 6
    assert (
        _latest(bootstrap, topic, IsolationLevel.READ_COMMITTED) == 4
    )  # the open transaction's first offset

    # read_committed stops at the LSO; read_uncommitted sees the open records.
    assert len(read_partition(bootstrap, topic, 0, 0, 6, isolation="read_uncommitted")) == 5
    producer.abort_transaction(30)  # ABORT marker at 6
    assert _latest(bootstrap, topic, IsolationLevel.READ_UNCOMMITTED) == 7
    assert _latest(bootstrap, topic, IsolationLevel.READ_COMMITTED) == 7
    committed = read_partition(bootstrap, topic, 0, 0, 7, isolation="read_committed")
    assert [r.value for _, r in committed] == [f"committed {i}".encode() for i in range(3)]


def test_a_demo_refuses_a_sandbox_that_already_has_its_topics(sandbox: SandboxState) -> None:
    bootstrap = sandbox.cluster("source").bootstrap
    taken, free = _topic("demo-taken"), _topic("demo-free")
    create_topic(bootstrap, taken)
    require_fresh_demo(bootstrap, [free], Path(sandbox.workdir))
    with pytest.raises(SandboxError, match=r"already has demo topics: run 'mirror-audit sandbox down'"):
        require_fresh_demo(bootstrap, [free, taken], Path(sandbox.workdir))


def test_kafka_own_tools_run_from_the_sandbox_jars(sandbox: SandboxState) -> None:
    bootstrap = sandbox.cluster("destination").bootstrap
    topic = _topic("tools")
    create_topic(bootstrap, topic)
    produce(bootstrap, topic, [Record(None, b"x")] * 7)
    proc = run_tool(
        sandbox, "org.apache.kafka.tools.GetOffsetShell", ["--bootstrap-server", bootstrap, "--topic", topic]
    )
    assert proc.returncode == 0, proc.stderr
    assert f"{topic}:0:7" in proc.stdout.split()


def _port_bindable(port: int) -> bool:
    import socket

    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_cli_up_status_down_leaves_nothing_behind(tmp_path: Path) -> None:
    env = {**os.environ, "MIRROR_AUDIT_SANDBOX_DIR": str(tmp_path / "sb")}
    up = run_cli("sandbox", "up", env=env)
    assert up.returncode == 0, up.stderr
    state = load_state(tmp_path / "sb")
    assert state is not None
    try:
        nodes = [n for c in state.clusters for n in c.nodes]
        assert all(process_start_ticks(n.pid) == n.start_ticks for n in nodes)

        again = run_cli("sandbox", "up", env=env)  # harmless while running
        assert again.returncode == 0, again.stderr
        assert load_state(tmp_path / "sb") == state

        status = run_cli("sandbox", "status", env=env)
        assert status.returncode == 0
        for c in state.clusters:
            line = next(ln for ln in status.stdout.splitlines() if ln.startswith(c.name))
            assert c.bootstrap in line and c.cluster_id in line and "running" in line
            assert all(str(n.pid) in line for n in c.nodes)
            assert c.bootstrap.startswith("127.0.0.1:")
    finally:
        down = run_cli("sandbox", "down", env=env)
    assert down.returncode == 0, down.stderr
    for n in nodes:
        assert process_start_ticks(n.pid) is None, f"broker pid {n.pid} still running"
        assert _port_bindable(n.port)
        if n.controller_port:
            assert _port_bindable(n.controller_port)
        assert not (Path(n.node_dir) / "data").exists()
    assert load_state(tmp_path / "sb") is None
    assert "not running" in run_cli("sandbox", "status", env=env).stdout


def test_taken_port_is_a_clear_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        env = {**os.environ, "MIRROR_AUDIT_SANDBOX_DIR": str(tmp_path / "sb")}
        proc = run_cli("sandbox", "up", "--source-port", str(port), env=env)
    assert proc.returncode == 2
    assert f"port 127.0.0.1:{port} for the source cluster is taken" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert load_state(tmp_path / "sb") is None
