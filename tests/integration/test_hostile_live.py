"""Hostile names and records committed through the real sandbox brokers, then audited by
one nightly run (snapshot, record scan, audit): what a client may legally send must come
out of the report, summary.json and the terminal as inert text, and summary.json and the
snapshot must keep it exactly.

Kafka restricts topic names, not group ids, commit metadata, record keys, values or header
keys and values: those reach the auditor as the clients wrote them. The test's own setup
commits and produces (as a consumer and a producer of the audited clusters would); the
auditor only reads. One scenario per module: the file's time is that one nightly run's.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pyarrow.parquet as pq
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from audit.display import visible
from audit.sandbox.state import SandboxState
from audit.sandbox.traffic import Record, client_conf, create_topic, retry_group_call
from tests.cli import run_in_process

ESCAPES = "\x1b[2J\x1b]0;pwned\x07\r\n\t\x7f\x9b\u202e"  # clear, retitle, BEL, CR LF TAB, DEL, C1 CSI, bidi
RAW_CONTROLS = ("\x1b", "\x07", "\r", "\t", "\x7f", "\x9b", "\u202e", "\x00")
# Commit metadata is bounded by the broker (offset.metadata.max.bytes, 4096 by default: a
# 10 KB one is refused at commit time), so it stops short of that; group ids are not bounded.
METADATA = f"meta<script>alert(1)</script>{ESCAPES}" + "m" * 3900
RECORDS = 10
T0 = int(time.time() * 1000) - 3_600_000  # recent: older records would fall to retention
DIVERGENT = 5
# The source's record at DIVERGENT: a key that is not UTF-8, a value that is markup and
# escape sequences (as UTF-8 and as a raw C1 byte), a header with both in key and value.
SRC_RECORD = Record(
    b"\xff\xfe\x80<k>",
    b"<script>alert(1)</script>\x1b[2J\x07\r\n\x7f\xc2\x9b\x9b",
    (("h\x1b]0;pwned\x07<i>", b'"><img src=x onerror=1>\xff'),),
)
DST_RECORD = Record(SRC_RECORD.key, b"<script>alert(2)</script>", SRC_RECORD.headers)


def _produce(bootstrap: str, topic: str, records: list[Record]) -> None:
    """Records with the same create times on both clusters, as a mirror copies them (the
    sandbox's helper stamps the time of sending, which would differ at every offset)."""
    p = Producer(client_conf(bootstrap, **{"enable.idempotence": True, "linger.ms": 5}))
    for i, r in enumerate(records):
        p.produce(topic, r.value, r.key, partition=0, timestamp=T0 + i, headers=list(r.headers) or None)
    assert p.flush(60) == 0


def _commit(bootstrap: str, group: str, topic: str, offset: int, metadata: str) -> None:
    """As the group's consumer would commit, with metadata (the sandbox's helper has none)."""

    def commit() -> None:
        c = Consumer(client_conf(bootstrap, **{"group.id": group, "enable.auto.commit": False}))
        try:
            c.commit(offsets=[TopicPartition(topic, 0, offset, metadata)], asynchronous=False)
        finally:
            c.close()

    retry_group_call(f"committing offsets of a hostile group on {bootstrap}", commit)


def _commit_nul(bootstrap: str, group: str, topic: str, offset: int) -> None:
    """A commit under a group id holding a NUL, which Kafka accepts: kafka-python sends the
    id's bytes as they are (librdkafka, behind confluent-kafka, cannot: C strings)."""
    from kafka import KafkaConsumer, OffsetAndMetadata
    from kafka import TopicPartition as KafkaPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        c.commit({KafkaPartition(topic, 0): OffsetAndMetadata(offset, "m\x00eta", -1)})
    finally:
        c.close()


def _offsets(bootstrap: str, groups: list[str]) -> dict[str, list[tuple[str, int, int]]]:
    from confluent_kafka import ConsumerGroupTopicPartitions

    admin = AdminClient(client_conf(bootstrap))
    out = {}
    for gid in groups:
        res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(gid)])[gid].result(timeout=30)
        out[gid] = sorted((tp.topic, tp.partition, tp.offset) for tp in res.topic_partitions or [])
    return out


@pytest.fixture(scope="module")
def audited(sandbox: SandboxState, spark: object, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    src, dst = sandbox.cluster("source").bootstrap, sandbox.cluster("destination").bootstrap
    sfx = uuid.uuid4().hex[:8]
    topic = f"hostile-{sfx}"
    groups = [
        f"{sfx}-<script>alert(1)</script>",
        f'{sfx}-"><img src=x onerror=alert(1)>',
        f"{sfx}-esc{ESCAPES}",
        f"{sfx}-long-" + "<b>\x1b" * 2500,  # 10 KB
    ]
    plain = [Record(f"k{i}".encode(), f"v{i}".encode()) for i in range(RECORDS)]
    for bootstrap, odd in ((src, SRC_RECORD), (dst, DST_RECORD)):
        create_topic(bootstrap, topic)
        _produce(bootstrap, topic, [*plain[:DIVERGENT], odd, *plain[DIVERGENT + 1 :]])
    for gid in groups:
        _commit(src, gid, topic, 3, METADATA)
        _commit(dst, gid, topic, 8, METADATA)  # ahead of the source's 3: CM-GROUP-1 fails
    nul_group = f"{sfx}-nul\x00tail"
    _commit_nul(src, nul_group, topic, 3)
    _commit_nul(dst, nul_group, topic, 8)
    root = tmp_path_factory.mktemp("hostile")
    cfg = root / "audit.yaml"
    cfg.write_text(
        f"source:\n  bootstrap_servers: {src}\n  timeout_seconds: 20\n"
        f"destination:\n  bootstrap_servers: {dst}\n  timeout_seconds: 20\n"
        f"scope:\n  topics:\n    include: ['{topic}']\n  groups:\n    include: ['{sfx}-.*']\n"
        "records:\n  enabled: true\n  chunk_records: 50\n"
        "spark:\n  master: local[2]\n  conf:\n    spark.sql.shuffle.partitions: '2'\n"
        f"output:\n  root: {root / 'reports'}\n"
    )
    before = {b: _offsets(b, groups) for b in (src, dst)}
    run = root / "reports" / "r1"
    proc = run_in_process("nightly", "--config", str(cfg), "--out", str(run))
    after = {b: _offsets(b, groups) for b in (src, dst)}
    return {
        "groups": groups,
        "nul_group": nul_group,
        "topic": topic,
        "proc": proc,
        "run": run,
        "before": before,
        "after": after,
    }


def test_the_audit_of_hostile_names_runs_and_commits_nothing(audited: dict[str, Any]) -> None:
    """Works already, kept as the scenario's ground: hostile names are no reason to fail
    (exit 1 is CM-GROUP-1 and CM-DATA-1, not an error), and the auditor commits nothing."""
    proc = audited["proc"]
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert audited["after"] == audited["before"]


def test_the_report_shows_hostile_names_and_records_as_inert_text(audited: dict[str, Any]) -> None:
    """Bug found: group ids' control characters (ESC sequences, BEL, CR, C1 CSI, a bidi
    override) reached index.html raw; markup was escaped already. And before RE2's '.' matched
    a newline, the group whose id holds one was out of scope: never audited, never shown."""
    page = (audited["run"] / "report" / "index.html").read_text(encoding="utf-8")
    assert "<script" not in page.lower() and "<img" not in page.lower()
    for ch in RAW_CONTROLS:
        assert ch not in page, f"{ch!r} reached the report raw"
    for gid in audited["groups"][:3]:  # each named in the examples table and the group chart
        assert visible(gid).replace("<", "&lt;").replace(">", "&gt;").replace('"', "&#34;") in page
    # The divergent record: the key's bytes that are not UTF-8 shown as \xNN, both values.
    assert r"key=\xff\xfe\x80&lt;k&gt; (6 bytes)" in page
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page


def test_summary_json_keeps_every_name_exactly_and_escapes_the_rest(audited: dict[str, Any]) -> None:
    """summary.json is valid JSON with no raw control character, and every group id comes
    back exactly as committed; record bytes that are not UTF-8 are represented as \\xNN.
    Bug found: the group whose id holds a newline was missing (RE2's '.' stopped at it, so
    the scope pattern left the group out and its offsets were never audited)."""
    text = (audited["run"] / "summary.json").read_text(encoding="utf-8")
    for ch in RAW_CONTROLS:
        assert ch not in text
    inv = json.loads(text)["invariants"]
    assert inv["CM-GROUP-1"]["status"] == "fail"
    assert {e["group_id"] for e in inv["CM-GROUP-1"]["examples"]} == set(audited["groups"])
    (first,) = inv["CM-DATA-1"]["first_divergence"]
    assert (first["topic"], first["offset"], first["kind"]) == (
        audited["topic"],
        DIVERGENT,
        "payload_differs",
    )
    # 0xc2 0x9b (U+009B, C1's CSI as UTF-8) and a lone 0x9b byte: both shown escaped, and
    # told apart (the character as \u009b, the byte that is not UTF-8 as \x9b).
    assert first["source_record"].startswith(
        r"key=\xff\xfe\x80<k> (6 bytes) value=<script>alert(1)</script>\x1b[2J\x07\r\n\x7f\u009b\x9b"
        " (36 bytes) ts="
    ), first["source_record"]
    assert first["source_record"].endswith(
        r'headers=[h\x1b]0;pwned\x07<i>="><img src=x onerror=1>\xff (24 bytes)]'
    )
    assert first["destination_record"].startswith(
        r"key=\xff\xfe\x80<k> (6 bytes) value=<script>alert(2)</script> "
    )


def test_the_snapshot_keeps_commit_metadata_exactly(audited: dict[str, Any]) -> None:
    """Works already, kept for coverage: metadata with markup and control characters,
    near the broker's 4 KB bound, is collected as committed (never shown, never shortened)."""
    rows = pq.read_table(audited["run"] / "destination" / "group_offsets.parquet").to_pylist()
    ours = {r["group_id"]: r for r in rows if r["topic"] == audited["topic"]}
    assert set(ours) == set(audited["groups"])
    assert {r["metadata"] for r in ours.values()} == {METADATA}


@pytest.mark.xfail(
    strict=True,
    reason="bug, in audit/collect/metadata/kafka_admin.py: the group listing (librdkafka, behind "
    "confluent-kafka) ends a group id at its first NUL, so such a group is snapshotted under "
    "a truncated id, without its committed offsets, and never audited",
)
def test_a_group_id_holding_a_nul_is_collected_exactly(audited: dict[str, Any]) -> None:
    """Kafka accepts a NUL in a group id (its strings are length-prefixed); the snapshot
    must hold that group under its exact id, with its offsets, like any other."""
    rows = pq.read_table(audited["run"] / "source" / "group_offsets.parquet").to_pylist()
    assert (audited["nul_group"], audited["topic"], 3) in {
        (r["group_id"], r["topic"], r["committed_offset"]) for r in rows
    }


def test_the_terminal_output_carries_no_escape_sequence(audited: dict[str, Any]) -> None:
    """What the nightly run printed (the outcome table and every log line) holds no control
    character from a group id or a record: nothing in it acts on the operator's terminal.
    Held already end to end (no cluster-mirroring output names a group); kept for coverage.
    The bugs were in the mm2 plan preview and in log lines (tests/unit/test_hostile_text.py)."""
    proc = audited["proc"]
    for ch in RAW_CONTROLS:
        assert ch not in proc.stdout and ch not in proc.stderr, f"{ch!r} reached the terminal"
    assert "verdict: FAIL" in proc.stdout and "CM-GROUP-1" in proc.stdout
