"""A real MirrorMaker 2 on the sandbox clusters, and the mm2 collectors reading what it wrote.

MM2's own console formatters (connect-mirror's CheckpointFormatter and OffsetSyncFormatter,
run through Kafka's ConsoleConsumer) are the oracle for the decoded values. The auditor's
commands run in this process on the suite's Spark session (what they compute is tested
here; how a fresh process behaves, in the CLI tests).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from audit.errors import SandboxError
from audit.sandbox import mm2
from audit.sandbox.jars import ensure_mm2_jars
from audit.sandbox.processes import run_tool
from audit.sandbox.state import SandboxState
from audit.sandbox.traffic import Record, client_conf, commit_offsets, create_topic, produce
from audit.snapshot import (
    Mm2CheckpointRecord,
    Mm2OffsetSyncRecord,
    PartitionRecord,
    PartitionTraitRecord,
    read_records,
)
from tests.cli import run_in_process
from tests.kcat import kcat_records

CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
FORMATTERS = "org.apache.kafka.connect.mirror.formatters."


def _snapshot(sandbox: SandboxState, tmp: Path, name: str) -> tuple[Path, Path]:
    cfg = tmp / f"{name}.yaml"
    cfg.write_text(
        "mode: mm2\n"
        f"source:\n  bootstrap_servers: {sandbox.cluster('source').bootstrap}\n  timeout_seconds: 30\n"
        f"destination:\n  bootstrap_servers: {sandbox.cluster('destination').bootstrap}\n"
        "  timeout_seconds: 30\n"
    )
    out = tmp / name
    proc = run_in_process("snapshot", "--config", str(cfg), "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out / "source", out / "destination"


def _checkpoints(dst: Path, group: str) -> list[Mm2CheckpointRecord]:
    return [c for c in read_records(dst, "mm2_checkpoints", Mm2CheckpointRecord) if c.group_id == group]


def _wait_for_checkpoint(
    sandbox: SandboxState,
    tmp: Path,
    group: str,
    topic: str,
    upstream: dict[int, int],
    timeout: float = 180.0,
) -> tuple[Path, Path]:
    """Snapshot until MM2 has checkpointed ``group`` at ``upstream[p]`` on each partition p
    of the replica of ``topic`` (a checkpoint names the target's topic). The first wait of
    the module includes MM2's own start (Connect workers, task assignment), which took more
    than 90 s once on two busy cores; a quick MM2 returns at the first checkpoint."""
    remote = mm2.remote_topic(topic, mm2.Mm2Options())
    deadline = time.monotonic() + timeout
    attempt = 0
    while True:
        attempt += 1
        # Named by a hash: a group id may be longer than a file name may be.
        label = hashlib.sha256(group.encode()).hexdigest()[:12]
        src, dst = _snapshot(sandbox, tmp, f"snap-{label}-{attempt}")
        done = {(c.partition, c.upstream_offset) for c in _checkpoints(dst, group) if c.topic == remote}
        missing = {p: u for p, u in upstream.items() if (p, u) not in done}
        if not missing:
            return src, dst
        assert time.monotonic() < deadline, (
            f"no checkpoint of {group} on {remote} at {missing} (partition: upstream offset) "
            f"within {timeout}s; first offset syncs {_first_syncs(src, topic)} (MM2 translates "
            f"nothing below them); {_mm2_log_tail(sandbox)}"
        )
        time.sleep(2)


def _first_syncs(src: Path, topic: str) -> dict[int, int]:
    """partition -> the lowest upstream offset among ``topic``'s offset syncs in a snapshot."""
    first: dict[int, int] = {}
    for s in read_records(src, "mm2_offset_syncs", Mm2OffsetSyncRecord):
        if s.topic == topic:
            first[s.partition] = min(first.get(s.partition, s.upstream_offset), s.upstream_offset)
    return dict(sorted(first.items()))


def _mm2_log_tail(sandbox: SandboxState, lines: int = 30) -> str:
    """The last warnings and errors of MirrorMaker 2's log, for a wait that ran out, with
    its tasks' offset commits (how many records and checkpoints each task wrote)."""
    proc = mm2.load(sandbox)
    if proc is None:
        return "MirrorMaker 2 is not running"
    logged = Path(proc.log_path).read_text(encoding="utf-8", errors="replace").splitlines()
    marks = (" WARN ", " ERROR ", "Committing offsets for")
    worth = [ln for ln in logged if any(m in ln for m in marks)][-lines:]
    return f"last warnings, errors and task commits of {proc.log_path}:\n" + "\n".join(worth)


def _oracle(
    sandbox: SandboxState, cluster: str, topic: str, formatter: str, count: int
) -> list[dict[str, str]]:
    """What MirrorMaker 2's own formatter prints for the first ``count`` records (assign, no group).
    The formatters are connect-mirror's, which the brokers' jars do not hold: the running
    MirrorMaker 2's connect-mirror jars go on the console consumer's class path."""
    _, mm2_jars = ensure_mm2_jars(sandbox.kafka_version)
    proc = run_tool(
        sandbox,
        CONSOLE_CONSUMER,
        [
            "--bootstrap-server",
            sandbox.cluster(cluster).bootstrap,
            "--topic",
            topic,
            "--partition",
            "0",
            "--offset",
            "earliest",
            "--max-messages",
            str(count),
            "--timeout-ms",
            "20000",
            "--formatter",
            FORMATTERS + formatter,
        ],
        timeout=120,
        extra_jars=sorted(str(j) for j in mm2_jars.glob("connect-mirror*.jar")),
    )
    # Tool logging shares stdout: keep only the formatter's lines.
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(("Checkpoint{", "OffsetSync{"))]
    return [dict(re.findall(r"(\w+)=([^,}]*)", ln)) for ln in lines]


# Every topic (name: partitions) and mirrored group (name: its topic) of this module.
TOPICS = {"orders": 2, "restart": 1, "burst": 4, "audit": 1, "cut": 1, "lost": 1, "txlost": 1, "recreated": 1}
# "long-...": a group id of 215 characters, 90 of them non-ASCII (305 bytes), whose failover
# plan file must still be written (its name cut and hashed).
LONG = "long-" + "\u00e9" * 90 + "g" * 120
GROUPS = {"app": "orders", "restart": "restart", "burst": "burst", "ok": "audit", "cut": "cut", LONG: "audit"}


@pytest.fixture(scope="module")
def mirror_maker(sandbox: SandboxState) -> Iterator[str]:
    """MirrorMaker 2 for the module, started once its topics and groups exist: a topic or
    group that appears while MM2 runs makes it reconfigure and restart its tasks, and each
    restart copies a backlog in one burst (see the burst test for what a burst did to
    offset syncs). The tests then only produce and commit, which MM2 follows without a
    restart, and stop or restart MM2 themselves where that is what they test."""
    run = uuid.uuid4().hex[:6]
    src_bootstrap = sandbox.cluster("source").bootstrap
    for name, partitions in TOPICS.items():
        create_topic(src_bootstrap, f"mm2-{run}-{name}", partitions=partitions)
    for name, topic in GROUPS.items():
        start = {(f"mm2-{run}-{topic}", p): 0 for p in range(TOPICS[topic])}
        commit_offsets(src_bootstrap, f"mm2g-{run}-{name}", start)
    with mm2.running(sandbox, mm2.Mm2Options(topics=f"mm2-{run}.*", groups=f"mm2g-{run}.*")):
        yield run


def test_checkpoints_and_offset_syncs_decode_as_mirror_maker_prints_them(
    sandbox: SandboxState, mirror_maker: str, tmp_path: Path
) -> None:
    run = mirror_maker
    src_bootstrap = sandbox.cluster("source").bootstrap
    topic, group = f"mm2-{run}-orders", f"mm2g-{run}-app"
    for p in (0, 1):
        produce(src_bootstrap, topic, [Record(f"k{i}".encode(), b"v") for i in range(40)], partition=p)
    commit_offsets(src_bootstrap, group, {(topic, 0): 30, (topic, 1): 12})
    src, dst = _wait_for_checkpoint(sandbox, tmp_path, group, topic, {0: 30, 1: 12})

    mine = [c for c in _checkpoints(dst, group) if c.topic == f"source.{topic}"]
    latest = {c.partition: c for c in sorted(mine, key=lambda c: c.record_offset)}
    assert latest[0].upstream_offset == 30 and latest[1].upstream_offset == 12
    # The replica of a fresh topic has the same offsets, so no translation may exceed the
    # upstream offset; MM2 translates conservatively (from its sparse offset syncs), often
    # to well below it, which is what the mm2 invariants will measure.
    assert all(0 <= c.downstream_offset <= c.upstream_offset for c in mine)
    syncs = [s for s in read_records(src, "mm2_offset_syncs", Mm2OffsetSyncRecord) if s.topic == topic]
    assert {s.partition for s in syncs} == {0, 1}
    assert all(s.downstream_offset <= s.upstream_offset for s in syncs)

    # Oracle: MirrorMaker 2's own formatters read the same records the same way.
    ckpt_topic, syncs_topic = "source.checkpoints.internal", "mm2-offset-syncs.target.internal"
    all_ckpts = read_records(dst, "mm2_checkpoints", Mm2CheckpointRecord)
    on_p0 = sorted((c for c in all_ckpts if c.record_partition == 0), key=lambda c: c.record_offset)
    printed = _oracle(sandbox, "destination", ckpt_topic, "CheckpointFormatter", len(on_p0))
    assert len(printed) == len(on_p0) > 0
    for ours, theirs in zip(on_p0, printed, strict=True):
        assert theirs["consumerGroupId"] == ours.group_id
        assert theirs["topicPartition"] == f"{ours.topic}-{ours.partition}"
        assert (int(theirs["upstreamOffset"]), int(theirs["downstreamOffset"])) == (
            ours.upstream_offset,
            ours.downstream_offset,
        )
    all_syncs = read_records(src, "mm2_offset_syncs", Mm2OffsetSyncRecord)
    sync_p0 = sorted((s for s in all_syncs if s.record_partition == 0), key=lambda s: s.record_offset)
    printed = _oracle(sandbox, "source", syncs_topic, "OffsetSyncFormatter", len(sync_p0))
    assert [
        (
            p["topicPartition"],
            int(p["upstreamOffset"]),
            int(p["offset"] if "offset" in p else p["downstreamOffset"]),
        )
        for p in printed
    ] == [(f"{s.topic}-{s.partition}", s.upstream_offset, s.downstream_offset) for s in sync_p0]


def test_restart_keeps_history_monotonic_and_a_stopped_mirror_goes_stale(
    sandbox: SandboxState, mirror_maker: str, tmp_path: Path
) -> None:
    run = mirror_maker
    src_bootstrap, dst_bootstrap = (
        sandbox.cluster("source").bootstrap,
        sandbox.cluster("destination").bootstrap,
    )
    topic, group = f"mm2-{run}-restart", f"mm2g-{run}-restart"
    produce(src_bootstrap, topic, [Record(None, b"x")] * 20, partition=0)
    commit_offsets(src_bootstrap, group, {(topic, 0): 10})
    _wait_for_checkpoint(sandbox, tmp_path, group, topic, {0: 10})
    mm2.restart(sandbox)
    produce(src_bootstrap, topic, [Record(None, b"y")] * 20, partition=0)
    commit_offsets(src_bootstrap, group, {(topic, 0): 35})
    # Garbage in the checkpoints topic (the sandbox writing, as a broken producer would).
    produce(dst_bootstrap, "source.checkpoints.internal", [Record(b"\x00", b"\x01")], partition=0)
    src, dst = _wait_for_checkpoint(sandbox, tmp_path, group, topic, {0: 35})

    history = sorted(_checkpoints(dst, group), key=lambda c: c.record_offset)
    assert {c.upstream_offset for c in history} >= {10, 35}  # before and after the restart, both kept
    manifest = json.loads((dst / "manifest.json").read_text())
    note = manifest["notes"]["mm2_checkpoints"]
    assert note["corrupt"] >= 1
    assert note["decoded"] + note["corrupt"] + sum(note["unknown_version"].values()) == note["records"]

    cfg = tmp_path / "scope.yaml"
    cfg.write_text(
        "mode: mm2\nspark:\n  master: local[2]\n  conf:\n    spark.sql.shuffle.partitions: '2'\n"
        f"scope:\n  topics:\n    include: ['{topic}']\n  groups:\n    include: ['{group}']\n"
    )

    def audit(src: Path, dst: Path, out: str) -> dict[str, Any]:
        proc = run_in_process(
            *("audit", "--source", str(src), "--destination", str(dst), "--config", str(cfg), "--out", out),
            *("--engine", "local"),  # mode mm2's metadata: alike on both (test_engine_parity.py)
        )
        assert proc.returncode in (0, 1), proc.stdout + proc.stderr
        invariants: dict[str, Any] = json.loads((Path(out) / "summary.json").read_text())["invariants"]
        return invariants

    # Across the restart, the offset syncs and checkpoints only moved forward.
    inv = audit(src, dst, str(tmp_path / "after-restart"))
    assert (inv["MM2-SYNC-1"]["status"], inv["MM2-CKPT-1"]["status"]) == ("pass", "pass"), inv
    assert inv["MM2-CKPT-4"]["status"] == "pass"

    # The group moves on while MirrorMaker 2 is down: its checkpoint goes stale (a warning).
    options = mm2.load(sandbox)
    assert options is not None
    mm2.stop(sandbox)
    try:
        commit_offsets(src_bootstrap, group, {(topic, 0): 38})
        src, dst = _snapshot(sandbox, tmp_path, "while-stopped")
        inv = audit(src, dst, str(tmp_path / "stale"))
        assert inv["MM2-CKPT-4"]["status"] == "warn", inv["MM2-CKPT-4"]
        (stale,) = next(c for c in inv["MM2-CKPT-4"]["checks"] if c["severity"] == "warn")["examples"]
        assert (stale["group_id"], stale["staleness_records"]) == (group, 3)
    finally:
        mm2.start(sandbox, options.options)


def test_a_burst_found_at_start_is_translated_from_its_first_record(
    sandbox: SandboxState, mirror_maker: str, tmp_path: Path
) -> None:
    """Records that pile up while MirrorMaker 2 is down are copied in one burst when it
    starts, and a group at the burst's first record must still get its checkpoint. MM2
    translates no offset below a partition's first offset sync; with offset.lag.max 0 it
    kept an arbitrary sync of such a burst as the first (a CI run waited 180 s for a
    checkpoint that could never come), which is why the sandbox uses MM2's default, 100."""
    run = mirror_maker
    src_bootstrap = sandbox.cluster("source").bootstrap
    topic, group = f"mm2-{run}-burst", f"mm2g-{run}-burst"
    partitions = range(TOPICS["burst"])
    running = mm2.load(sandbox)
    assert running is not None
    mm2.stop(sandbox)
    try:
        for p in partitions:
            produce(src_bootstrap, topic, [Record(None, b"b")] * 50, partition=p)
        commit_offsets(src_bootstrap, group, {(topic, p): 1 for p in partitions})
    finally:
        mm2.start(sandbox, running.options)
    _wait_for_checkpoint(sandbox, tmp_path, group, topic, {p: 1 for p in partitions})


def test_audit_of_the_real_mirror_maker_catches_its_faults(
    sandbox: SandboxState, mirror_maker: str, tmp_path: Path
) -> None:
    """mode mm2 end to end on the real MirrorMaker 2: a healthy group passes; records deleted
    on the target below a checkpoint fail MM2-CKPT-2; a group MM2 does not checkpoint (outside
    its groups filter) fails MM2-CKPT-4; a group id longer than a file name gets its plan
    file, which Kafka's own tool reads."""
    run = mirror_maker
    src_bootstrap, dst_bootstrap = (
        sandbox.cluster("source").bootstrap,
        sandbox.cluster("destination").bootstrap,
    )
    ok_topic, cut_topic = f"mm2-{run}-audit", f"mm2-{run}-cut"
    ok_group, cut_group, unsynced = f"mm2g-{run}-ok", f"mm2g-{run}-cut", f"other-{run}"
    for topic in (ok_topic, cut_topic):
        produce(src_bootstrap, topic, [Record(None, b"z")] * 50, partition=0)
    commit_offsets(src_bootstrap, ok_group, {(ok_topic, 0): 30})
    commit_offsets(src_bootstrap, cut_group, {(cut_topic, 0): 20})
    commit_offsets(src_bootstrap, unsynced, {(ok_topic, 0): 10})
    long_group = f"mm2g-{run}-{LONG}"
    commit_offsets(src_bootstrap, long_group, {(ok_topic, 0): 30})
    _wait_for_checkpoint(sandbox, tmp_path, ok_group, ok_topic, {0: 30})
    _wait_for_checkpoint(sandbox, tmp_path, long_group, ok_topic, {0: 30})
    _, dst = _wait_for_checkpoint(sandbox, tmp_path, cut_group, cut_topic, {0: 20})
    (cut_ckpt,) = [c for c in _checkpoints(dst, cut_group) if c.upstream_offset == 20][-1:]
    # Retention on the target removes records the checkpoint still points into.
    remote = mm2.remote_topic(cut_topic, mm2.Mm2Options())
    admin = AdminClient({"bootstrap.servers": dst_bootstrap})
    cut = TopicPartition(remote, 0, cut_ckpt.downstream_offset + 5)
    admin.delete_records([cut])[cut].result(timeout=60)

    cfg = tmp_path / "audit.yaml"
    cfg.write_text(
        "mode: mm2\n"
        f"source:\n  bootstrap_servers: {src_bootstrap}\n  timeout_seconds: 30\n"
        f"destination:\n  bootstrap_servers: {dst_bootstrap}\n  timeout_seconds: 30\n"
        "spark:\n  master: local[2]\n  conf:\n    spark.sql.shuffle.partitions: '2'\n"
        f"scope:\n  topics:\n    include: ['mm2-{run}-(audit|cut)']\n"
        f"  groups:\n    include: ['mm2g-{run}-(ok|cut|long-.*)', 'other-{run}']\n"
    )
    # Mode mm2's metadata on the in-process engine, judged alike by both (test_engine_parity.py).
    proc = run_in_process(
        "nightly", "--config", str(cfg), "--out", str(tmp_path / "run"), "--engine", "local"
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    inv = json.loads((tmp_path / "run" / "summary.json").read_text())["invariants"]
    statuses = {k: v["status"] for k, v in inv.items()}
    assert statuses["MM2-CKPT-2"] == "fail", inv["MM2-CKPT-2"]
    assert {e["group_id"] for e in inv["MM2-CKPT-2"]["examples"]} == {cut_group}
    assert statuses["MM2-CKPT-4"] == "fail"
    missing = next(c for c in inv["MM2-CKPT-4"]["checks"] if c["severity"] == "fail")
    assert {e["group_id"] for e in missing["examples"]} == {unsynced}
    for healthy in ("MM2-SYNC-1", "MM2-CKPT-1", "MM2-CKPT-3"):
        assert statuses[healthy] == "pass", inv[healthy]
    assert statuses["MM2-GROUP-1"] == "skipped"  # group offset sync is off in this MirrorMaker 2
    assert (tmp_path / "run" / "report" / "index.html").exists()

    # Readiness on the same live clusters: NO-GO, and a failover plan Kafka's own tool reads.
    ready = subprocess.run(
        [
            sys.executable,
            "-m",
            "audit.cli",
            "readiness",
            "--config",
            str(cfg),
            "--out",
            str(tmp_path / "ready"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert ready.returncode == 1, ready.stdout + ready.stderr
    assert "readiness: NO-GO" in ready.stdout and "failover plan (not applied)" in ready.stdout
    plan_dir = tmp_path / "ready" / "failover-plan"
    ok_csv = plan_dir / "groups" / f"{ok_group}.csv"
    (line,) = ok_csv.read_text().splitlines()
    remote_ok = mm2.remote_topic(ok_topic, mm2.Mm2Options())
    ok_ckpt = [c for c in _checkpoints(tmp_path / "ready" / "destination", ok_group) if c.topic == remote_ok]
    assert line == f"{remote_ok},0,{max(ok_ckpt, key=lambda c: c.record_offset).downstream_offset}"
    dry_run = run_tool(
        sandbox,
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        [
            "--bootstrap-server",
            dst_bootstrap,
            "--group",
            ok_group,
            "--reset-offsets",
            "--from-file",
            str(ok_csv),
            "--dry-run",
        ],
        timeout=120,
    )
    assert dry_run.returncode == 0, dry_run.stdout + dry_run.stderr
    new_offset = line.rsplit(",", 1)[1]
    assert re.search(
        rf"{re.escape(ok_group)}\s+{re.escape(remote_ok)}\s+0\s+{new_offset}\b", dry_run.stdout
    ), dry_run.stdout

    # The long group's plan: its file named by a cut id and a hash, the command naming it.
    (command,) = [c for c in (plan_dir / "commands.txt").read_text().splitlines() if long_group in c]
    long_csv = plan_dir / re.search(r"--from-file '([^']+)'", command).group(1)  # type: ignore[union-attr]
    assert len(long_csv.name.encode()) <= 255 and long_csv.read_text().startswith(f"{remote_ok},0,")
    long_dry_run = run_tool(
        sandbox,
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        [
            "--bootstrap-server",
            dst_bootstrap,
            "--group",
            long_group,
            "--reset-offsets",
            "--from-file",
            str(long_csv),
            "--dry-run",
        ],
        timeout=120,
    )
    assert long_dry_run.returncode == 0, long_dry_run.stdout + long_dry_run.stderr
    assert remote_ok in long_dry_run.stdout, long_dry_run.stdout


def _replica_end(bootstrap: str, topic: str, want: int, timeout: float = 120.0) -> int:
    """The replica partition's end once it reaches ``want`` (MirrorMaker 2 copying)."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "never-joined", "enable.auto.commit": False}
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                _, end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
            except Exception:  # the replica not created yet
                end = -1
            if end >= want or time.monotonic() > deadline:
                return int(end)
            time.sleep(1)
    finally:
        consumer.close()


def _transactions(bootstrap: str, topic: str, count: int, size: int, name: str) -> None:
    """``count`` committed transactions of ``size`` records each on partition 0, by one
    transactional producer: each takes ``size`` offsets and one more for its marker. The
    values are ``name``-t-i."""
    txn = Producer(client_conf(bootstrap, **{"transactional.id": f"{topic}-writer"}))
    txn.init_transactions(30)
    for t in range(count):
        txn.begin_transaction()
        for i in range(size):
            txn.produce(topic, value=f"{name}-{t}-{i}".encode(), partition=0)
        txn.commit_transaction(30)


def test_records_retention_deleted_before_the_mirror_copied_them_are_counted_lost_and_markers_are_not(
    sandbox: SandboxState, mirror_maker: str, tmp_path: Path
) -> None:
    """Issue 55 on the real MirrorMaker 2, stopped while records arrive on two topics: a
    plain one (30 records) and one a transactional producer writes (3 transactions of 5).
    A nightly reads both while the source holds them; then each source's log start moves
    past MirrorMaker 2's position as retention would (DeleteRecords): its position in
    Connect's offsets topic is below the log start (MM2-POS-1: loss in progress). Started
    again, its consumer resets to the earliest offset and goes on. The records kcat read
    before the deletion and finds on neither side after it are gone, and nothing in
    MirrorMaker 2 says so: readiness counts exactly them lost (MM2-SKIP-1, the gap between
    offset syncs): all 25 skipped offsets of the plain topic; on the transactional one, 10
    of its 13, the other 3 being the markers the nightly's scan read there."""
    run = mirror_maker
    src_bootstrap, dst_bootstrap = (
        sandbox.cluster("source").bootstrap,
        sandbox.cluster("destination").bootstrap,
    )
    plain, txn = f"mm2-{run}-lost", f"mm2-{run}-txlost"
    remote = {t: mm2.remote_topic(t, mm2.Mm2Options()) for t in (plain, txn)}
    produce(src_bootstrap, plain, [Record(None, f"a{i}".encode()) for i in range(10)], partition=0)
    _transactions(src_bootstrap, txn, 1, 5, "a")  # 0-4, its marker at 5
    assert _replica_end(dst_bootstrap, remote[plain], 10) == 10, _mm2_log_tail(sandbox)
    assert _replica_end(dst_bootstrap, remote[txn], 5) == 5, _mm2_log_tail(sandbox)
    running = mm2.load(sandbox)
    assert running is not None
    cfg = tmp_path / "lost.yaml"
    cfg.write_text(
        "mode: mm2\n"
        f"source:\n  bootstrap_servers: {src_bootstrap}\n  timeout_seconds: 30\n"
        f"destination:\n  bootstrap_servers: {dst_bootstrap}\n  timeout_seconds: 30\n"
        "records:\n  enabled: true\n"
        "spark:\n  master: local[2]\n  conf:\n    spark.sql.shuffle.partitions: '2'\n"
        f"scope:\n  topics:\n    include: ['{plain}', '{txn}']\n  groups:\n    include: ['none-{run}']\n"
    )
    mm2.stop(sandbox)
    try:
        # 10-39 on the plain topic
        produce(src_bootstrap, plain, [Record(None, f"b{i}".encode()) for i in range(30)], partition=0)
        _transactions(src_bootstrap, txn, 3, 5, "b")  # 6-10, 12-16, 18-22; markers at 11, 17, 23
        before = {t: kcat_records(src_bootstrap, t) for t in (plain, txn)}
        # The nightly reads what the source holds now; each run after it keeps what it read.
        scanned = run_in_process("nightly", "--config", str(cfg), "--out", str(tmp_path / "scanned"))
        assert scanned.returncode in (0, 1), scanned.stdout + scanned.stderr
        cuts = [TopicPartition(plain, 0, 35), TopicPartition(txn, 0, 18)]
        admin = AdminClient({"bootstrap.servers": src_bootstrap})  # held: a collected client never answers
        for future in admin.delete_records(cuts).values():
            future.result(timeout=60)
        # While it is stopped, its position (Connect's offsets topic) is below the source's
        # log start: loss in progress, before any offset sync shows it.
        stopped = run_in_process("readiness", "--config", str(cfg), "--out", str(tmp_path / "stopped"))
        assert stopped.returncode == 1, stopped.stdout + stopped.stderr
        pos = json.loads((tmp_path / "stopped" / "summary.json").read_text())["invariants"]["MM2-POS-1"]
        assert pos["status"] == "fail", pos
        behind = {
            e["topic"]: (e["next_offset"], e["src_log_start_offset"])
            for c in pos["checks"]
            if c["severity"] == "fail"
            for e in c["examples"]
        }
        assert behind == {plain: (10, 35), txn: (5, 18)}
    finally:
        mm2.start(sandbox, running.options)
    produce(src_bootstrap, plain, [Record(None, f"c{i}".encode()) for i in range(5)], partition=0)  # 40-44
    # The replicas: the first 10, then 35-44 (10 more): 10-34 copied nowhere; 0-4 then 18-22.
    assert _replica_end(dst_bootstrap, remote[plain], 20) == 20, _mm2_log_tail(sandbox)
    assert _replica_end(dst_bootstrap, remote[txn], 10) == 10, _mm2_log_tail(sandbox)

    proc = run_in_process("readiness", "--config", str(cfg), "--out", str(tmp_path / "ready"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "ready" / "summary.json").read_text())
    traits = read_records(tmp_path / "ready" / "source", "partition_traits", PartitionTraitRecord)
    assert sorted((t.topic, t.compacted, t.transactional_producers) for t in traits) == [
        (plain, False, 0),
        (txn, False, 1),
    ]
    # kcat's reading: what the source held before the deletion and neither side holds now.
    lost = {
        t: {v for _, v in before[t]}
        - {v for _, v in kcat_records(src_bootstrap, t)}
        - {v for _, v in kcat_records(dst_bootstrap, remote[t])}
        for t in (plain, txn)
    }
    assert {t: len(v) for t, v in lost.items()} == {plain: 25, txn: 10}, lost
    assert summary["readiness"] == "NO-GO"
    gaps = {
        e["topic"]: (e["skipped_from_offset"], e["upstream_offset"], e["lost_records"], e["gap_scanned"])
        for e in summary["invariants"]["MM2-SKIP-1"]["examples"]
    }
    assert gaps == {plain: (10, 35, 25, True), txn: (5, 18, 10, True)}, gaps
    assert summary["lost_records"] == 35
    assert "known lost:" in proc.stdout and "35 records" in proc.stdout


def test_a_source_topic_deleted_and_recreated_under_the_running_mirror_fails_naming_both_ids(
    sandbox: SandboxState, mirror_maker: str, tmp_path: Path
) -> None:
    """Issue 55, 3 on the real MirrorMaker 2, running: the source topic it copies is deleted
    and created again under the same name, and written to. The replica, the offset syncs
    and MirrorMaker 2's position still describe the old topic. Readiness compares the
    topic's id with the one the run before it saw (under the same output root) and fails
    MM2-SKIP-2 naming both, and the syncs name offsets past the new topic's end."""
    run = mirror_maker
    src_bootstrap, dst_bootstrap = (
        sandbox.cluster("source").bootstrap,
        sandbox.cluster("destination").bootstrap,
    )
    topic = f"mm2-{run}-recreated"
    produce(src_bootstrap, topic, [Record(None, f"old{i}".encode()) for i in range(20)], partition=0)
    assert _replica_end(dst_bootstrap, mm2.remote_topic(topic, mm2.Mm2Options()), 20) == 20, _mm2_log_tail(
        sandbox
    )
    cfg = tmp_path / "recreated.yaml"
    cfg.write_text(
        "mode: mm2\n"
        f"source:\n  bootstrap_servers: {src_bootstrap}\n  timeout_seconds: 30\n"
        f"destination:\n  bootstrap_servers: {dst_bootstrap}\n  timeout_seconds: 30\n"
        f"scope:\n  topics:\n    include: ['{topic}']\n  groups:\n    include: ['none-{run}']\n"
    )
    runs = tmp_path / "runs"
    first = run_in_process("readiness", "--config", str(cfg), "--out", str(runs / "first"))
    assert first.returncode in (0, 1), first.stdout + first.stderr
    (old,) = {p.topic_id for p in read_records(runs / "first" / "source", "partitions", PartitionRecord)}

    admin = AdminClient({"bootstrap.servers": src_bootstrap})  # held: a collected client never answers
    admin.delete_topics([topic], operation_timeout=30)[topic].result(timeout=60)
    try:
        create_topic(src_bootstrap, topic)
    except SandboxError as exc:
        # MirrorMaker 2's consumer asks for the topic's metadata at once, and the brokers
        # create a topic asked for (auto.create.topics.enable, on by default): recreated
        # under the mirror either way, as the ids compared below show.
        assert "TOPIC_ALREADY_EXISTS" in str(exc), exc
    produce(src_bootstrap, topic, [Record(None, f"new{i}".encode()) for i in range(5)], partition=0)

    proc = run_in_process("readiness", "--config", str(cfg), "--out", str(runs / "after"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (new,) = {p.topic_id for p in read_records(runs / "after" / "source", "partitions", PartitionRecord)}
    assert old and new and old != new
    summary = json.loads((runs / "after" / "summary.json").read_text())
    assert summary["readiness"] == "NO-GO"
    skip = summary["invariants"]["MM2-SKIP-2"]
    assert skip["status"] == "fail", skip
    examples = [e for c in skip["checks"] if c["severity"] == "fail" for e in c["examples"]]
    assert {
        (e["topic"], e["src_topic_id"], e["previous_src_topic_id"]) for e in examples if "src_topic_id" in e
    } == {(topic, new, old)}, examples
