"""Record-level verification against the real sandbox brokers.

Each topic is written to both clusters the way a mirror would (same records, same
offsets), then one fault is made on the destination's copy of some of them. One snapshot,
one `mirror-audit records scan` and one offline audit must then localize each fault to its
offset and kind, and tolerate what the mirror's semantics allow: a prefix deleted by
retention on one side, a topic compacted differently on each side. The commands run in
this process on the suite's Spark session, as in the fault tests (what they compute is
tested here); a fresh process is run where the comparison is with one.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from audit.collect.metadata.log_dirs import partition_sizes
from audit.collect.records.native import ReaderName
from audit.config import ClusterConfig
from audit.errors import ClusterError
from audit.sandbox.mirror import wait_transactions_settled
from audit.sandbox.state import SandboxState
from tests.cleaner import cleaner_lines, prompt_cleaner
from tests.cli import run_in_process, submit_cli

T0 = int(time.time() * 1000) - 3_600_000  # recent: older records would fall to retention
# key, value, headers, timestamp: a mirror keeps each record's own create time. The headers
# typed as Producer.produce takes them (a list is invariant, so list[tuple[str, bytes]] is not one).
Headers = list[tuple[str, str | bytes | None]] | None
Rec = tuple[bytes | None, bytes | None, Headers, int]


def _records(n: int, tag: str, ts: int = T0) -> list[Rec]:
    out: list[Rec] = []
    for i in range(n):
        value = None if i % 17 == 5 else f"{tag}-{i}".encode()  # a tombstone now and then
        headers: Headers = [("trace", f"{i}".encode())] if i % 3 == 0 else None
        out.append((f"k{i % 11}".encode(), value, headers, ts + i))
    return out


def _create(bootstrap: str, topic: str, **config: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1, config=config)])[
        topic
    ].result(timeout=60)


def _produce(bootstrap: str, topic: str, records: list[Rec]) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    for key, value, headers, ts in records:
        p.produce(topic, value, key, partition=0, timestamp=ts, headers=headers)
    assert p.flush(60) == 0


def _produce_with_abort(bootstrap: str, topic: str, records: list[Rec], aborted: bool, txn_id: str) -> None:
    """Records, then (``aborted``) a transaction of 5 records that is aborted, then more."""
    _produce(bootstrap, topic, records[:20])
    if aborted:
        t = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
        t.init_transactions(30)
        t.begin_transaction()
        for i in range(5):
            t.produce(topic, f"aborted-{i}".encode(), b"t", partition=0, timestamp=T0 + 1000 + i)
        t.flush(30)
        t.abort_transaction(30)
        wait_transactions_settled(bootstrap, [topic])
    _produce(bootstrap, topic, records[20:])


def _count(bootstrap: str, topic: str) -> int:
    c = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "test-reader-unused", "enable.partition.eof": True}
    )
    c.assign([TopicPartition(topic, 0, 0)])
    n = 0
    try:
        while True:
            m = c.poll(5)
            if m is None or (m.error() is not None):
                return n
            n += 1
    finally:
        c.close()


def _groups(bootstrap: str) -> set[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return {g.group_id for g in admin.list_consumer_groups(request_timeout=30).result(timeout=30).valid}


@pytest.fixture(scope="module")
def audited(sandbox: SandboxState, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    src, dst = sandbox.cluster("source").bootstrap, sandbox.cluster("destination").bootstrap
    sfx = uuid.uuid4().hex[:6]
    t = {
        name: f"rec-{name}-{sfx}"
        for name in (
            "same",
            "payload",
            "dropped",
            "dup",
            "headers",
            "tombstone",
            "retention",
            "aborted",
            "txnlost",
            "compacted",
        )
    }
    base = _records(120, "r")
    for name, topic in t.items():
        if name == "compacted":
            continue
        for b in (src, dst):
            _create(b, topic)
    variants: dict[str, list[Rec]] = {
        "payload": [*base[:60], (base[60][0], b"changed", base[60][2], base[60][3]), *base[61:]],
        "dropped": base[:70] + base[71:],
        "dup": [*base[:80], base[79], *base[80:]],
        "headers": [*base[:90], (base[90][0], base[90][1], [("trace", b"other")], base[90][3]), *base[91:]],
        # A tombstone (null value) the mirror wrote as an empty value.
        "tombstone": [*base[:39], (base[39][0], b"", base[39][2], base[39][3]), *base[40:]],
    }
    assert base[39][1] is None
    for name in ("same", "payload", "dropped", "dup", "headers", "tombstone", "retention"):
        _produce(src, t[name], base)
        _produce(dst, t[name], variants.get(name, base))
    # Retention on the destination: its first 30 records are gone (common range from 30).
    admin = AdminClient({"bootstrap.servers": dst})
    cut = TopicPartition(t["retention"], 0, 30)
    admin.delete_records([cut])[cut].result(timeout=60)
    # An aborted transaction mirrored (markers and aborted records at the same offsets) and
    # one a mirror lost (the destination holds only the committed records: shifted).
    _produce_with_abort(src, t["aborted"], base, True, f"a-src-{sfx}")
    _produce_with_abort(dst, t["aborted"], base, True, f"a-dst-{sfx}")
    _produce_with_abort(src, t["txnlost"], base, True, f"l-src-{sfx}")
    _produce_with_abort(dst, t["txnlost"], base, False, f"l-dst-{sfx}")
    # Compacted on both; only the destination's cleaner runs (small segments, no lag), made
    # to look every half second while the test waits on it.
    _create(src, t["compacted"], **{"cleanup.policy": "compact"})
    _create(
        dst,
        t["compacted"],
        **{
            "cleanup.policy": "compact",
            "segment.ms": "500",
            "min.cleanable.dirty.ratio": "0.001",
            "min.compaction.lag.ms": "0",
        },
    )
    # A second apart: a segment rolls on segment.ms measured in record timestamps.
    compact: list[Rec] = [(f"c{i % 5}".encode(), f"v{i}".encode(), None, T0 + i * 1000) for i in range(60)]
    with prompt_cleaner(sandbox.cluster("destination")):
        for b in (src, dst):
            _produce(b, t["compacted"], compact[:50])
        time.sleep(1.0)
        for b in (src, dst):
            _produce(b, t["compacted"], compact[50:])  # rolls the destination's segment
        deadline = time.monotonic() + 180
        while _count(dst, t["compacted"]) >= 60 and time.monotonic() < deadline:
            time.sleep(1)
    compacted_away = 60 - _count(dst, t["compacted"])
    cleaner = "" if compacted_away else cleaner_lines(sandbox.cluster("destination"))

    root = tmp_path_factory.mktemp("records")
    cfg = root / "audit.yaml"
    topics = "|".join(t.values())
    cfg.write_text(
        f"source:\n  bootstrap_servers: {src}\n  timeout_seconds: 20\n"
        f"destination:\n  bootstrap_servers: {dst}\n  timeout_seconds: 20\n"
        f"scope:\n  topics:\n    include: ['{topics}']\n"
        "records:\n  chunk_records: 50\n  split_records: 100\n  resample_chunks: 1\n"
        "spark:\n  master: local[2]\n  conf:\n    spark.sql.shuffle.partitions: '2'\n"
        f"output:\n  root: {root / 'reports'}\n"
    )
    run = root / "reports" / "r1"
    assert run_in_process("snapshot", "--config", str(cfg), "--out", str(run)).returncode == 0
    groups_before = {b: _groups(b) for b in (src, dst)}
    scan = run_in_process("records", "scan", "--config", str(cfg), "--run", str(run))
    groups_after = {b: _groups(b) for b in (src, dst)}
    # The first scan's tables as written, for the standalone cluster's scan to equal (later
    # tests scan this run again).
    first_scan = root / "first-scan"
    for side in ("source", "destination"):
        (first_scan / side).mkdir(parents=True)
        for table in (run / side).glob("record_*.parquet"):  # Spark's part-file directories
            (shutil.copytree if table.is_dir() else shutil.copy2)(table, first_scan / side / table.name)
    first_note = json.loads((run / "destination" / "manifest.json").read_text())["notes"]["records"]
    audit = run_in_process(
        "audit",
        "--source",
        str(run / "source"),
        "--destination",
        str(run / "destination"),
        "--out",
        str(run / "audit"),
    )
    summary = json.loads((run / "audit" / "summary.json").read_text())
    return {
        "topics": t,
        "scan": scan,
        "audit": audit,
        "summary": summary,
        "groups": (groups_before, groups_after),
        "compacted_away": compacted_away,
        "cleaner": cleaner,
        "run": run,
        "cfg": cfg,
        "first_note": first_note,
        "first_scan": first_scan,
    }


def _first(audited: dict[str, Any]) -> dict[str, dict[str, Any]]:
    by_topic = {d["topic"]: d for d in audited["summary"]["invariants"]["CM-DATA-1"]["first_divergence"]}
    return {name: by_topic[topic] for name, topic in audited["topics"].items() if topic in by_topic}


def test_each_fault_is_localized_to_its_offset_and_kind(audited: dict[str, Any]) -> None:
    assert audited["scan"].returncode == 0, audited["scan"].stderr[-3000:]
    assert audited["audit"].returncode == 1, audited["audit"].stderr[-3000:]
    # records.reader auto, with the compiled package installed (make test builds it): the batch reader.
    assert audited["first_note"]["reader"] == "batches"
    assert "(read_uncommitted, batches reader)" in audited["scan"].stdout
    inv = audited["summary"]["invariants"]
    assert inv["CM-DATA-1"]["status"] == "fail"
    found = {name: (d["offset"], d["kind"]) for name, d in _first(audited).items()}
    assert found == {
        "payload": (60, "payload_differs"),
        "dropped": (70, "missing_record"),
        "dup": (80, "duplicate_record"),
        "headers": (90, "headers_differs"),
        "tombstone": (39, "payload_differs"),
        # The destination lacks the aborted records and the abort marker: from offset 20 it
        # holds the committed records the source has at 26 and after.
        "txnlost": (20, "payload_differs"),
    }, found
    payload = _first(audited)["payload"]
    assert "changed" in payload["destination_record"] and "changed" not in payload["source_record"]
    headers = _first(audited)["headers"]  # both sides' header values, not just their keys
    assert "trace=90 (2 bytes)" in headers["source_record"]
    assert "trace=other (5 bytes)" in headers["destination_record"]
    tombstone = _first(audited)["tombstone"]
    assert "value=null" in tombstone["source_record"]
    assert "value= (0 bytes)" in tombstone["destination_record"]


def test_identical_retention_cut_aborted_and_compacted_topics_pass(audited: dict[str, Any]) -> None:
    """No divergence where the mirror is right: identical topics (tombstones and headers
    included), a destination whose first records retention deleted (only the common range
    is compared), a mirrored aborted transaction, and a topic each cleaner compacted its own
    way (records equal wherever both sides hold one)."""
    assert audited["compacted_away"] > 0, f"the destination's log cleaner did not run:\n{audited['cleaner']}"
    assert not {"same", "retention", "aborted", "compacted"} & set(_first(audited))
    coverage = {
        (p["topic"]): p["ranges"]
        for p in audited["summary"]["invariants"]["CM-DATA-1"]["coverage"]["partitions"]
    }
    assert coverage[audited["topics"]["retention"]] == [{"start": 30, "end": 120, "state": "verified"}]
    # a compacted chunk narrowed to compaction_only is verified, not left mismatched
    assert {r["state"] for r in coverage[audited["topics"]["compacted"]]} == {"verified"}
    assert coverage[audited["topics"]["payload"]][0] == {"start": 0, "end": 50, "state": "verified"}
    assert {"start": 50, "end": 100, "state": "mismatched"} in coverage[audited["topics"]["payload"]]


def test_record_gaps_compare_at_record_level(audited: dict[str, Any]) -> None:
    """CM-TXN-2 from record gaps: the mirrored abort's marker sits at the same offset; the
    lost transaction leaves the destination without that gap."""
    txn2 = audited["summary"]["invariants"]["CM-TXN-2"]
    assert txn2["status"] == "fail"
    assert {e["topic"] for e in txn2["examples"]} == {audited["topics"]["txnlost"]}


def test_the_scan_joins_no_group_and_commits_nothing(audited: dict[str, Any]) -> None:
    before, after = audited["groups"]
    assert before == after


def _history_runs(audited: dict[str, Any]) -> int:
    return int(json.loads((audited["run"].parent / "record-verification.json").read_text())["runs"])


def test_incremental_runs_read_only_new_offsets(audited: dict[str, Any], sandbox: SandboxState) -> None:
    """A second scan of the same snapshot pair finds everything verified up to the first
    mismatch of each partition, and re-reads only from there (plus re-checks)."""
    history = json.loads((audited["run"].parent / "record-verification.json").read_text())
    parts = history["partitions"]
    assert parts[f"{audited['topics']['same']}/0"]["verified_through"] == 120
    assert parts[f"{audited['topics']['payload']}/0"]["verified_through"] == 50
    assert history["runs"] == 1
    again = run_in_process("records", "scan", "--config", str(audited["cfg"]), "--run", str(audited["run"]))
    assert again.returncode == 0, again.stderr[-2000:]
    manifest = json.loads((audited["run"] / "destination" / "manifest.json").read_text())
    note = manifest["notes"]["records"]
    assert 0 < note["offsets_planned"] < audited["first_note"]["offsets_planned"]
    assert _history_runs(audited) == 2


def test_a_byte_budget_reads_what_fits_and_leaves_the_rest(
    audited: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """records.max_bytes_per_run, charged at each partition's bytes per offset from the
    source's DescribeLogDirs: a --full run plans a few chunks and says what it left."""
    cfg = tmp_path_factory.mktemp("budget") / "audit.yaml"
    text = audited["cfg"].read_text()
    assert "  resample_chunks: 1\n" in text
    cfg.write_text(
        text.replace("  resample_chunks: 1\n", "  resample_chunks: 1\n  max_bytes_per_run: 3000\n")
    )
    run = run_in_process("records", "scan", "--config", str(cfg), "--run", str(audited["run"]), "--full")
    assert run.returncode == 0, run.stderr[-2000:]
    note = json.loads((audited["run"] / "destination" / "manifest.json").read_text())["notes"]["records"]
    assert any("3000 bytes (estimated from partition sizes) reached" in n for n in note["notes"]), note[
        "notes"
    ]
    assert 0 < note["offsets_planned"] < audited["first_note"]["offsets_planned"]


READERS = ("python", "native", "batches")


@pytest.mark.parametrize("reader", READERS)
def test_ranges_of_one_partition_read_in_waves_equal_one_range(
    audited: dict[str, Any], sandbox: SandboxState, reader: ReaderName
) -> None:
    """A task holding several ranges of the same partition reads them in successive waves
    with one consumer (a partition finished in one wave is paused, and must read again in
    the next): the chunks equal those of one range read whole."""
    from audit.collect.records.read import chunk_ranges, consumer_settings

    settings = consumer_settings(
        {"bootstrap.servers": sandbox.cluster("source").bootstrap}, "read_uncommitted"
    )
    topic, other = audited["topics"]["aborted"], audited["topics"]["same"]
    whole, failed = chunk_ranges(settings, [(topic, 0, 0, 126)], 50, 30, reader)
    assert failed == []
    parts, failed = chunk_ranges(
        settings,
        [(topic, 0, 0, 50), (other, 0, 0, 120), (topic, 0, 50, 100), (topic, 0, 100, 126)],
        50,
        30,
        reader,
    )
    assert failed == []
    got = [c for r, chunks in sorted(parts) if r[0] == topic for c in chunks]
    assert got == whole[0][1]


def test_partition_sizes_for_the_byte_budget_are_the_replicas_bytes_on_disk(sandbox: SandboxState) -> None:
    """DescribeLogDirs through kafka-python, on both brokers of a replicated topic: each
    partition's size is its largest replica's segment bytes, what its log dirs hold."""
    cluster = sandbox.cluster("source")
    topic = f"rec-sizes-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=2)])[topic].result(timeout=60)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(300):
        p.produce(topic, b"v" * (10 + i), partition=i % 2)
    assert p.flush(60) == 0
    sizes = partition_sizes("source", ClusterConfig(cluster.bootstrap), [topic])
    on_disk = {
        (topic, n): max(
            sum(f.stat().st_size for f in (Path(node.node_dir) / "data" / f"{topic}-{n}").glob("*.log"))
            for node in cluster.nodes
        )
        for n in (0, 1)
    }
    assert sizes == on_disk and min(sizes.values()) > 0
    with pytest.raises(ClusterError, match=r"partition sizes unavailable.*max_records_per_run"):
        partition_sizes("source", ClusterConfig("127.0.0.1:1", timeout_seconds=2), [topic])


@pytest.mark.parametrize("reader", READERS)
def test_read_committed_turns_the_aborted_records_into_gaps(
    sandbox: SandboxState, reader: ReaderName
) -> None:
    """The scan's isolation level on a real aborted transaction: read_uncommitted returns
    the aborted records and only the abort marker is a gap; read_committed skips the records
    too, so the two scans differ by exactly the aborted records."""
    from audit.collect.records.read import chunk_ranges, consumer_settings

    bootstrap = sandbox.cluster("source").bootstrap
    topic = f"rec-isolation-{uuid.uuid4().hex[:6]}"
    _create(bootstrap, topic)
    _produce_with_abort(bootstrap, topic, _records(40, "iso"), True, f"iso-{topic}")
    # 20 records (0-19), 5 aborted (20-24), the abort marker (25), 20 records (26-45)
    seen: dict[str, tuple[list[tuple[int, int]], int]] = {}
    for isolation in ("read_uncommitted", "read_committed"):
        settings = consumer_settings({"bootstrap.servers": bootstrap}, isolation)
        done, failed = chunk_ranges(settings, [(topic, 0, 0, 46)], 100, 30, reader)
        assert failed == [], failed
        (chunk,) = done[0][1]
        seen[isolation] = ([(g["start"], g["end"]) for g in chunk["gaps"]], chunk["record_count"])
    assert seen["read_uncommitted"] == ([(25, 25)], 45)
    assert seen["read_committed"] == ([(20, 25)], 40)


def _ranges(bootstrap: str, topics: list[str]) -> list[tuple[str, int, int, int]]:
    """[log start, end) of partition 0 of each topic."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "test-reader-unused"})
    try:
        return [(t, 0, *c.get_watermark_offsets(TopicPartition(t, 0), timeout=30)) for t in topics]
    finally:
        c.close()


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_the_compiled_readers_give_the_python_readers_rows(
    audited: dict[str, Any], sandbox: SandboxState, isolation: str
) -> None:
    """The compiled readers (librdkafka's messages, and raw record batches, hashing in
    Rust) against confluent-kafka on every topic of the fixture, both clusters: equal chunk
    rows, checksums, gaps (markers, aborted records under read_committed, compaction holes),
    epoch runs and all; and a range below the log start fails for each, the rest still read."""
    from audit.collect.records.read import chunk_ranges, consumer_settings

    for side in ("source", "destination"):
        bootstrap = sandbox.cluster(side).bootstrap
        settings = consumer_settings({"bootstrap.servers": bootstrap}, isolation)
        ranges = _ranges(bootstrap, sorted(audited["topics"].values()))
        gone = (audited["topics"]["retention"], 0, 0, 10) if side == "destination" else None
        asked = ranges + ([gone] if gone else [])
        python = chunk_ranges(settings, asked, 7, 30, "python")
        for reader in ("native", "batches"):
            got = chunk_ranges(settings, asked, 7, 30, reader)
            assert sorted(got[0]) == sorted(python[0]), reader
            assert len(got[0]) == len(ranges) and sum(len(rows) for _, rows in got[0]) > 100
            assert [r for r, _ in got[1]] == [r for r, _ in python[1]] == ([gone] if gone else [])
            assert all(why for _, why in got[1])


def test_the_compiled_reader_frames_nulls_empties_and_headers_like_python(sandbox: SandboxState) -> None:
    """Null against empty key, value and header value, several headers, non-ASCII header
    keys and binary values, across batches: each record alone in a chunk, so a framing
    difference shows at its offset, and both readers' checksums agree everywhere."""
    from audit.collect.records.read import chunk_ranges, consumer_settings

    bootstrap = sandbox.cluster("source").bootstrap
    topic = f"rec-frames-{uuid.uuid4().hex[:6]}"
    _create(bootstrap, topic)
    cases: list[tuple[bytes | None, bytes | None, Headers]] = [
        (None, None, None),
        (b"", b"", None),
        (b"k", None, [("h", None)]),
        (None, b"v", [("h", b"")]),
        (b"\x00\xff", b"\x00" * 3, [("\u00fc", b"\x00\x01"), ("h", b"x"), ("h", None)]),
        (b"k", b"v" * 5000, [("", b"empty key")]),
    ]
    shapes: list[Rec] = [(key, value, headers, T0 + i) for i, (key, value, headers) in enumerate(cases)]
    _produce(bootstrap, topic, shapes)
    settings = consumer_settings({"bootstrap.servers": bootstrap}, "read_uncommitted")
    python = chunk_ranges(settings, [(topic, 0, 0, len(shapes))], 1, 30, "python")
    assert chunk_ranges(settings, [(topic, 0, 0, len(shapes))], 1, 30, "native") == python
    assert chunk_ranges(settings, [(topic, 0, 0, len(shapes))], 1, 30, "batches") == python
    sums = [row["checksum"] for row in python[0][0][1]]
    assert len(sums) == len(set(sums)) == len(shapes)


CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def test_every_reader_gives_equal_rows_on_every_codec_transaction_and_timestamp_type(
    sandbox: SandboxState,
) -> None:
    """Topics in each compression codec (librdkafka's producer, and the broker recompressing
    with the topic's compression.type), with repeated header names, null header values,
    null and empty keys and values, a committed and an aborted transaction, and a topic
    with broker append times: the three readers' rows equal, cell by cell, under both
    isolation levels."""
    from audit.collect.records.read import chunk_ranges, consumer_settings

    bootstrap = sandbox.cluster("source").bootstrap
    shapes: list[Rec] = []
    for i in range(60):
        key = None if i % 7 == 3 else (b"" if i % 7 == 4 else f"k{i}".encode())
        value = None if i % 5 == 2 else (b"" if i % 5 == 3 else f"value-{i}".encode() * (1 + i % 4))
        headers: Headers = [("dup", b"1"), ("dup", b"2"), ("null", None), ("", b"")] if i % 3 else None
        shapes.append((key, value, headers, T0 + i))
    topics = []
    tag = uuid.uuid4().hex[:6]
    for codec in CODECS:
        for broker_side in (False, True):
            topic = f"rec-codec-{codec}-{'topic' if broker_side else 'producer'}-{tag}"
            if broker_side:  # the broker recompresses what it is sent
                _create(bootstrap, topic, **{"compression.type": "producer" if codec == "none" else codec})
            else:
                _create(bootstrap, topic)
            producer = {"bootstrap.servers": bootstrap, "linger.ms": 5, "compression.type": codec}
            p = Producer(producer)
            for key, value, headers, ts in shapes[:30]:
                p.produce(topic, value, key, partition=0, timestamp=ts, headers=headers)
            assert p.flush(60) == 0
            for committed in (True, False):
                t = Producer({**producer, "transactional.id": f"{topic}-{committed}"})
                t.init_transactions(30)
                t.begin_transaction()
                for key, value, headers, ts in shapes[30:45]:
                    t.produce(topic, value, key, partition=0, timestamp=ts, headers=headers)
                t.flush(30)
                if committed:
                    t.commit_transaction(30)
                else:
                    t.abort_transaction(30)
            wait_transactions_settled(bootstrap, [topic])
            topics.append(topic)
    appended = f"rec-append-time-{tag}"
    _create(bootstrap, appended, **{"message.timestamp.type": "LogAppendTime"})
    _produce(bootstrap, appended, shapes)
    topics.append(appended)
    for isolation in ("read_uncommitted", "read_committed"):
        settings = consumer_settings({"bootstrap.servers": bootstrap}, isolation)
        ranges = _ranges(bootstrap, topics)
        python = chunk_ranges(settings, ranges, 8, 30, "python")
        assert python[1] == [] and len(python[0]) == len(topics)
        for reader in ("native", "batches"):
            assert sorted(chunk_ranges(settings, ranges, 8, 30, reader)[0]) == sorted(python[0]), (
                reader,
                isolation,
            )


def test_the_records_scan_on_a_standalone_cluster_writes_what_the_local_one_wrote(
    audited: dict[str, Any], standalone: Any, tmp_path: Path
) -> None:
    """The same snapshot pair's records scanned from scratch by spark-submit on a standalone
    master and two workers (whose tasks open the Kafka clients in the executors): every
    record table equal cell by cell to what the module's first scan, in this process on the
    local session, wrote (the compacted topic left out: its cleaner may still remove records
    between the two scans)."""
    stable = {t for name, t in audited["topics"].items() if name != "compacted"}
    run = tmp_path / "reports" / "r1"
    for side in ("source", "destination"):
        shutil.copytree(audited["run"] / side, run / side, ignore=shutil.ignore_patterns("record_*"))
    cfg = (
        audited["cfg"]
        .read_text()
        .replace(str(audited["cfg"].parent / "reports"), str(tmp_path / "reports"))
        .replace("|".join(audited["topics"].values()), "|".join(sorted(stable)))
    )
    assert "|".join(sorted(stable)) in cfg
    (tmp_path / "audit.yaml").write_text(cfg)
    on_cluster = submit_cli(
        standalone.master_url, "records", "scan", "--config", str(tmp_path / "audit.yaml"), "--run", str(run)
    )
    assert on_cluster.returncode == 0, on_cluster.stderr[-3000:]

    def rows(path: Path) -> list[str]:
        return sorted(
            json.dumps(r, sort_keys=True, default=str)
            for r in pq.read_table(path).to_pylist()
            if r["topic"] in stable
        )

    compared = 0
    first = audited["first_scan"]
    for side in ("source", "destination"):
        tables = sorted(p.name for p in (first / side).glob("record_*.parquet"))
        assert tables == sorted(p.name for p in (run / side).glob("record_*.parquet")), side
        for table in tables:
            expected = rows(first / side / table)
            assert rows(run / side / table) == expected, (side, table)
            compared += len(expected)
    assert compared > 20
