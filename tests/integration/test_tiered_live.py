"""Tiered storage (KIP-405) in the sandbox: ``SandboxOptions(tiered_storage=True)`` starts
brokers with Kafka's LocalTieredStorage, and a topic with remote.storage.enable=true moves its
closed segments to the cluster's remote storage directory and drops them locally.

Oracle: the remote directory holds the partition's segment file sets, the local log starts
above offset 0 (its first segments are gone), and a consumer reading from the beginning gets
every record produced, in order and unchanged: the records below the local log start can
only have come from the remote tier. This module starts its own small sandbox (one broker
per cluster), not the shared ``sandbox`` fixture.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from audit.report.summary import output_schema, schema_errors
from audit.sandbox import mm2
from audit.sandbox.cluster import SandboxOptions, remote_storage_dir, running
from audit.sandbox.mirror import mirror_once
from audit.sandbox.state import SandboxState
from audit.sandbox.traffic import Record, create_topic, high_watermark, produce, scan_messages
from tests.cli import run_in_process

RECORDS = 2000
# Kafka 4's smallest segment.bytes: 2000 records of ~1.5 kB fill two segments and start a third.
SEGMENT_BYTES = 1 << 20
PADDING = b"x" * 1500
# <base offset>-<remote log segment id (a Uuid, base64url)><suffix>
REMOTE_FILE = re.compile(r"(\d+)-([A-Za-z0-9_-]{22})(\.[a-z_]+)")


@dataclass(frozen=True)
class Tiered:
    state: SandboxState
    topic: str  # tiered on the source, fully mirrored after it tiered
    remote_dir: Path  # the partition's directory in the remote storage
    local_dir: Path  # the partition's local log directory
    lagging: str  # tiered on the source, mirrored up to MIRRORED_BEFORE only
    lagging_local_dir: Path
    tiered_destination: str  # plain on the source, tiered on the destination, mirrored
    config: Path  # an audit config for the pair


def _value(i: int) -> bytes:
    return f"{i:06d}-".encode() + PADDING


def _local_start(local_dir: Path) -> int | None:
    """The base offset of the partition's first local segment (not one awaiting deletion)."""
    offsets = [int(p.name[: -len(".log")]) for p in local_dir.glob("*.log")]
    return min(offsets) if offsets else None


def _wait_tiered(
    root: Path, topic: str, local_dir: Path, log_path: str, timeout: float = 60, above: int = 0
) -> Path:
    """The partition's remote directory once every closed segment has moved to it and left
    the local log: the local log holds the active segment alone, its start settled (and
    past ``above``)."""
    deadline = time.monotonic() + timeout
    while True:
        found = sorted(root.glob(f"{topic}-0-*")) if root.is_dir() else []
        local = list(local_dir.glob("*.log"))
        start = _local_start(local_dir)
        if len(found) == 1 and any(found[0].glob("*.log")) and len(local) == 1 and start and start > above:
            return found[0]
        if time.monotonic() > deadline:
            remote = sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.is_dir() else None
            raise AssertionError(
                f"no tiering within {timeout:.0f} s: remote {remote}, local "
                f"{sorted(p.name for p in local_dir.iterdir())}; see {log_path}"
            )
        time.sleep(0.5)


TIERED_TOPIC = {
    "remote.storage.enable": "true",
    "segment.bytes": str(SEGMENT_BYTES),
    "local.retention.ms": "1000",
}
# Produced past MirrorMaker 2's position once it stopped: two segments and more, so the
# segment holding that position moves to the remote tier.
LAGGED_RECORDS = 1500
MIRRORED_BEFORE = 300  # the lagging topic's records the mirror copied before the source moved on


@pytest.fixture(scope="module")
def tiered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tiered]:
    """A tiered sandbox (one broker per cluster) and three topics mirrored by the sandbox's
    emulator (offsets kept), waited for until the source's closed segments have all moved to
    the remote tier (up to a minute):

    - ``topic``: ``RECORDS`` records on a tiered source topic, then mirrored whole: the
      emulator reads the first offsets through the source broker from the remote tier;
    - ``lagging``: tiered on the source, mirrored up to ``MIRRORED_BEFORE``, then the source
      moved on past its local retention: the mirror would read the remote tier next;
    - ``tiered_destination``: a plain source topic whose destination topic has tiered
      storage on (KIP-1279's prototype fails such a partition)."""
    tmp = tmp_path_factory.mktemp("tiered-sandbox")
    opts = SandboxOptions(workdir=tmp / "sandbox", brokers_per_cluster=1, heap_mb=512, tiered_storage=True)
    with running(opts) as state:
        assert state.tiered_storage
        src, dst = state.cluster("source").bootstrap, state.cluster("destination").bootstrap
        run = uuid.uuid4().hex[:6]
        topic, lagging, tiered_dst = f"tiered-{run}", f"lagging-{run}", f"dst-tiered-{run}"
        create_topic(src, topic, 1, 1, **TIERED_TOPIC)
        create_topic(src, lagging, 1, 1, **TIERED_TOPIC)
        create_topic(src, tiered_dst, 1, 1)
        for name in (topic, lagging):
            create_topic(dst, name, 1, 1)
        create_topic(dst, tiered_dst, 1, 1, **TIERED_TOPIC)
        produce(src, topic, (Record(str(i).encode(), _value(i)) for i in range(RECORDS)), partition=0)
        lagged = (Record(str(i).encode(), _value(i)) for i in range(MIRRORED_BEFORE))
        produce(src, lagging, lagged, partition=0)
        produce(src, tiered_dst, (Record(b"k", b"v") for _ in range(10)), partition=0)
        mirror_once(src, dst, [lagging, tiered_dst])
        rest = (Record(str(i).encode(), _value(i)) for i in range(MIRRORED_BEFORE, RECORDS))
        produce(src, lagging, rest, partition=0)
        data = Path(state.cluster("source").node(1).node_dir) / "data"
        root, log_path = remote_storage_dir(state, "source"), state.cluster("source").node(1).log_path
        remote_dir = _wait_tiered(root, topic, data / f"{topic}-0", log_path)
        _wait_tiered(root, lagging, data / f"{lagging}-0", log_path)
        assert mirror_once(src, dst, [topic]) == {(topic, 0): RECORDS}
        config = tmp / "audit.yaml"
        config.write_text(
            f"source:\n  bootstrap_servers: {src}\n  timeout_seconds: 20\n"
            f"destination:\n  bootstrap_servers: {dst}\n  timeout_seconds: 20\n"
            "spark:\n  master: local[2]\n  conf:\n    spark.sql.shuffle.partitions: '2'\n"
        )
        yield Tiered(
            state, topic, remote_dir, data / f"{topic}-0", lagging, data / f"{lagging}-0", tiered_dst, config
        )


def test_remote_directory_holds_segment_filesets(tiered: Tiered) -> None:
    """One directory per partition, <topic>-<partition>-<topic id>; per copied segment a
    .log, .index, .timeindex, .snapshot and .leader_epoch_checkpoint named by its base
    offset and remote segment id; the .log is the segment's bytes, its first batch at that
    offset."""
    assert re.fullmatch(rf"{re.escape(tiered.topic)}-0-[A-Za-z0-9_-]{{22}}", tiered.remote_dir.name)
    sets: dict[tuple[int, str], set[str]] = {}
    for path in tiered.remote_dir.iterdir():
        m = REMOTE_FILE.fullmatch(path.name)
        assert m is not None, path.name
        assert len(m.group(1)) == 20, path.name  # zero-padded like the local log's names
        sets.setdefault((int(m.group(1)), m.group(2)), set()).add(m.group(3))
    assert sets
    for (offset, segment_id), suffixes in sets.items():
        assert {".log", ".index", ".timeindex", ".snapshot", ".leader_epoch_checkpoint"} <= suffixes
        log = tiered.remote_dir / f"{offset:020d}-{segment_id}.log"
        with log.open("rb") as f:
            assert struct.unpack(">q", f.read(8))[0] == offset  # the first batch's base offset
    offsets = sorted(offset for offset, _ in sets)
    assert offsets[0] == 0 and offsets[-1] < RECORDS
    assert not (tiered.local_dir / f"{0:020d}.log").exists()  # the first segment is remote only


def test_consumer_reads_all_records_through_the_remote_tier(tiered: Tiered) -> None:
    """From offset 0, by assignment and without a group commit: the records below the local
    log's start come from the remote tier."""
    start = _local_start(tiered.local_dir)
    assert start is not None and start > 0
    messages = scan_messages(tiered.state.cluster("source").bootstrap, tiered.topic, 0, 0, RECORDS)
    assert [m.offset() for m in messages] == list(range(RECORDS))
    assert [m.key() for m in messages] == [str(i).encode() for i in range(RECORDS)]
    assert [m.value() for m in messages] == [_value(i) for i in range(RECORDS)]


@pytest.fixture(scope="module")
def readiness(tiered: Tiered, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One readiness run (in-process engine) over the tiered pair: its exit code, summary and
    snapshot directories."""
    out = tmp_path_factory.mktemp("tiered-ready")
    proc = run_in_process("readiness", "--config", str(tiered.config), "--out", str(out))
    snapshots = {json.loads(m.read_text())["role"]: m.parent for m in out.rglob("manifest.json")}
    summary = json.loads((out / "summary.json").read_text())
    return {"proc": proc, "summary": summary, "snapshots": snapshots}


def _partition(snapshot: Path, topic: str) -> dict[str, Any]:
    rows: list[dict[str, Any]] = pq.read_table(snapshot / "partitions.parquet").to_pylist()
    (row,) = (r for r in rows if r["topic"] == topic)
    return row


def test_a_snapshot_of_a_tiered_partition_carries_both_log_starts(
    tiered: Tiered, readiness: dict[str, Any]
) -> None:
    """The source's tiered partition: its log start (0, held in the remote tier) and its
    local log start (ListOffsets' earliest-local), which is where its first local segment
    begins on the broker's disk; the destination's plain copy: local start = log start."""
    src = _partition(readiness["snapshots"]["source"], tiered.topic)
    assert (src["remote_storage"], src["log_start_offset"], src["local_retention_ms"]) == (True, 0, 1000)
    local_start = _local_start(tiered.local_dir)
    assert local_start is not None and local_start > 0
    assert src["local_log_start_offset"] == local_start
    assert src["tier_detail"] is None
    dst = _partition(readiness["snapshots"]["destination"], tiered.topic)
    assert (dst["remote_storage"], dst["log_start_offset"], dst["local_log_start_offset"]) == (False, 0, 0)
    status = run_in_process("sandbox", "status", "--workdir", tiered.state.workdir, "--output", "json")
    (line,) = status.stdout.splitlines()
    shown = json.loads(line)
    assert schema_errors(shown, output_schema()) == []
    assert (shown["outcome"], shown["tiered_storage"], shown["kafka_version"]) == ("running", True, "4.3.1")
    manifest = json.loads((readiness["snapshots"]["source"] / "manifest.json").read_text())
    assert "with a remote tier" in manifest["notes"]["tiered_storage"]


def test_readiness_fails_a_tiered_destination_and_warns_a_mirror_reading_the_remote_tier(
    tiered: Tiered, readiness: dict[str, Any]
) -> None:
    """CM-TIER-1: the destination topic with tiered storage on is a NO-GO before KIP-1279's
    mirror fails it. CM-TIER-2: the lagging mirror's end (300) is below the source's local
    log start, so it would read the remote tier: a warning with how many records lie there."""
    proc, summary = readiness["proc"], readiness["summary"]
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert summary["readiness"] == "NO-GO"
    inv = summary["invariants"]
    assert inv["CM-TIER-1"]["status"] == "fail"
    assert {e["topic"] for e in inv["CM-TIER-1"]["examples"]} == {tiered.tiered_destination}
    assert inv["CM-TIER-2"]["status"] == "warn"
    (example,) = inv["CM-TIER-2"]["examples"]
    local_start = _local_start(tiered.lagging_local_dir)
    assert local_start is not None and local_start > MIRRORED_BEFORE
    assert (example["topic"], example["remote_tier_records"]) == (
        tiered.lagging,
        local_start - MIRRORED_BEFORE,
    )
    # The whole mirrored topic read back through the remote tier by the emulator: in sync.
    for inv_id in ("CM-OFFSET-1", "CM-EPOCH-1", "CM-TOPIC-1"):
        assert inv[inv_id]["status"] == "pass", (inv_id, inv[inv_id])


def _plain_copy(tiered: Tiered, root: Path) -> Path:
    """The source partition's whole log, both tiers, as one plain log directory: the remote
    segments under their local names, then the local ones. What a byte-for-byte mirror's
    destination holds."""
    target = root / f"{tiered.topic}-0"
    target.mkdir(parents=True)
    for path in tiered.remote_dir.glob("*.log"):
        m = REMOTE_FILE.fullmatch(path.name)
        assert m is not None
        shutil.copy(path, target / f"{m.group(1)}.log")
        shutil.copy(path.with_suffix(".index"), target / f"{m.group(1)}.index")
    for path in tiered.local_dir.glob("*.log"):
        shutil.copy(path, target / path.name)
        shutil.copy(path.with_suffix(".index"), target / path.with_suffix(".index").name)
    return root


def _scan(paths: list[Path], out: Path, role: str) -> None:
    args = ["segments", "scan", *map(str, paths), "--out", str(out), "--role", role, "--deep"]
    proc = run_in_process(*args)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_a_segment_scan_reads_both_tiers_and_never_drops_the_remote_one_silently(
    spark: Any, tiered: Tiered, readiness: dict[str, Any], tmp_path: Path
) -> None:
    """CM-DATA-2 on Spark, the source's batches read from segment files beside the live
    snapshots (one audit, two topics):

    - the fully mirrored topic, the source read from its remote tier (LocalTieredStorage's
      layout, a copy with a byte flipped in a record of its first remote segment) and its
      log dir, the destination a byte-for-byte copy of the whole log: every batch of the
      retained range compared (all the same), and the flipped byte caught (CRC-32C
      recomputed) in that remote file, at its position;
    - the lagging topic, the source read from its log dir alone (everything it holds is in
      the remote tier), the destination from its broker's log dir: unchecked with the cause
      "remote tier not read", never passed (CM-DATA-2's batches, CM-TXN-2's markers)."""
    config = tmp_path / "audit.yaml"
    scope = f"scope:\n  topics:\n    include: ['{tiered.topic}', '{tiered.lagging}']\n"
    config.write_text(tiered.config.read_text() + scope)
    run = tmp_path / "run"
    for role, snapshot in readiness["snapshots"].items():
        shutil.copytree(snapshot, run / role)
    remote = tmp_path / "remote" / tiered.remote_dir.name
    shutil.copytree(tiered.remote_dir, remote)
    first = min(remote.glob("*.log"))
    data = bytearray(first.read_bytes())
    (batch_length,) = struct.unpack_from(">i", data, 8)
    data[12 + batch_length - 1] ^= 0xFF  # the last byte of the first batch: a record's value
    first.write_bytes(bytes(data))
    _scan([remote, tiered.local_dir, tiered.lagging_local_dir], run / "source", "source")
    dst_data = Path(tiered.state.cluster("destination").node(1).node_dir) / "data"
    _scan(
        [_plain_copy(tiered, tmp_path / "copy"), dst_data / f"{tiered.lagging}-0"],
        run / "destination",
        "destination",
    )
    proc = run_in_process(
        "audit",
        "--source",
        str(run / "source"),
        "--destination",
        str(run / "destination"),
        "--config",
        str(config),
        "--out",
        str(run / "out"),
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    data2 = json.loads((run / "out" / "summary.json").read_text())["invariants"]["CM-DATA-2"]
    assert data2["status"] == "fail", data2
    unreadable = next(c for c in data2["checks"] if "could be read" in c["description"])
    assert {(e["side"], e["kind"], e["topic"], e["position"]) for e in unreadable["examples"]} == {
        ("source", "crc_mismatch", tiered.topic, 0)
    }
    assert {Path(e["file"]).name for e in unreadable["examples"]} == {first.name}
    diffs = pq.read_table(run / "out" / "compare" / "batch_diffs.parquet").to_pylist()
    full = sorted((r["base_offset"], r["batch_status"]) for r in diffs if r["topic"] == tiered.topic)
    assert full[0] == (0, "same") and {s for _, s in full} == {"same"}
    assert max(r["src_last_offset"] for r in diffs if r["topic"] == tiered.topic) == RECORDS - 1
    (gap,) = data2["unchecked_gaps"]
    assert "remote tier not read" in gap["missing"], gap
    assert gap["first"][0]["topic"] == tiered.lagging, gap
    # Nor are its transaction markers there compared: CM-TXN-2 is not passed over them either.
    txn2 = json.loads((run / "out" / "summary.json").read_text())["invariants"]["CM-TXN-2"]
    assert txn2["status"] != "pass", txn2
    (gap,) = txn2["unchecked_gaps"]
    assert "remote tier not read" in gap["missing"] and gap["first"][0]["topic"] == tiered.lagging, gap


def test_mirror_maker_2_copies_a_tiered_topic_and_the_mm2_records_scan_compares_both_tiers_whole(
    spark: Any, tiered: Tiered, readiness: dict[str, Any], tmp_path: Path
) -> None:
    """A real MirrorMaker 2 (its 4.3.1 connect-mirror, the tiered brokers' release) copies the
    fully tiered topic, whose first segments its consumer can only get from the source's
    remote tier, into a replica that tiers too; once the replica's closed segments have moved
    to the destination's remote tier, the nightly in mode mm2 reads every record of both
    sides over the wire, through both remote tiers: MM2-DATA-1 to -4 pass over the whole
    range [0, RECORDS) of each side, and MM2-TIER-1 passes (MirrorMaker 2's position is past
    the source's local log start). Then MirrorMaker 2, stopped, lags past the source's local
    retention: readiness warns (MM2-TIER-1) with the records between its position and the
    source's local log start, which it would read from the remote tier. Needs ``readiness``
    first: MirrorMaker 2's own topics (on the destination only: its offset syncs too) are not
    the cluster-mirroring pair's."""
    state = tiered.state
    src, dst = state.cluster("source").bootstrap, state.cluster("destination").bootstrap
    opts = mm2.Mm2Options(topics=tiered.topic, groups="mm2-tiered-none", offset_syncs_location="target")
    replica = mm2.remote_topic(tiered.topic, opts)
    create_topic(dst, replica, 1, 1, **TIERED_TOPIC)
    try:
        mm2.start(state, opts)
        deadline = time.monotonic() + 120
        while (copied := high_watermark(dst, replica)) < RECORDS:
            assert time.monotonic() < deadline, f"the replica holds {copied} of {RECORDS} records"
            time.sleep(0.5)
    finally:
        mm2.stop(state)
    dst_data = Path(state.cluster("destination").node(1).node_dir) / "data"
    dst_log = state.cluster("destination").node(1).log_path
    _wait_tiered(remote_storage_dir(state, "destination"), replica, dst_data / f"{replica}-0", dst_log)
    config = tmp_path / "mm2.yaml"
    config.write_text(
        "mode: mm2\n"
        f"source:\n  bootstrap_servers: {src}\n  timeout_seconds: 30\n"
        f"destination:\n  bootstrap_servers: {dst}\n  timeout_seconds: 30\n"
        "mirror:\n  mm2:\n    offset_syncs_topic_location: target\n"
        "records:\n  enabled: true\n"
        "spark:\n  master: local[2]\n  conf:\n    spark.sql.shuffle.partitions: '2'\n"
        f"scope:\n  topics:\n    include: ['{tiered.topic}']\n  groups:\n    include: ['mm2-tiered-none']\n"
    )
    out = tmp_path / "nightly"
    proc = run_in_process("nightly", "--config", str(config), "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    inv = summary["invariants"]
    for inv_id in ("MM2-DATA-1", "MM2-DATA-2", "MM2-DATA-3", "MM2-DATA-4", "MM2-TIER-1", "MM2-SYNC-1"):
        assert inv[inv_id]["status"] == "pass", (inv_id, inv[inv_id])
    # Both sides tiered: each log starts at 0, each local log well after it.
    for role, topic in (("source", tiered.topic), ("destination", replica)):
        part = _partition(out / role, topic)
        assert part["remote_storage"] and part["log_start_offset"] == 0, (role, part)
        assert part["local_log_start_offset"] is not None and part["local_log_start_offset"] > 0, (role, part)
        ranges = pq.read_table(out / role / "record_digest_ranges.parquet").to_pylist()
        read = sorted((r["start_offset"], r["read_to"], r["complete"]) for r in ranges if r["topic"] == topic)
        assert read[0][0] == 0 and read[-1][1] == RECORDS and all(done for _, _, done in read), (role, read)
    (row,) = pq.read_table(out / "compare" / "mm2_record_partitions.parquet").to_pylist()
    counts = ("missing_records", "unexplained_records", "duplicate_records", "order_breaks")
    assert [row[c] for c in counts] == [0, 0, 0, 0], row
    assert (row["compared_src_start"], row["compared_src_end"], row["compared_src_records"]) == (
        0,
        RECORDS,
        RECORDS,
    ), row

    # MirrorMaker 2 stays stopped at RECORDS while the source moves on past its local
    # retention: the next record it would copy is in the source's remote tier only.
    more = (Record(str(i).encode(), _value(i)) for i in range(RECORDS, RECORDS + LAGGED_RECORDS))
    produce(src, tiered.topic, more, partition=0)
    src_log = state.cluster("source").node(1).log_path
    _wait_tiered(remote_storage_dir(state, "source"), tiered.topic, tiered.local_dir, src_log, above=RECORDS)
    local_start = _local_start(tiered.local_dir)
    assert local_start is not None and local_start > RECORDS
    proc = run_in_process("readiness", "--config", str(config), "--out", str(tmp_path / "lagging"))
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr[-3000:]
    tier = json.loads((tmp_path / "lagging" / "summary.json").read_text())["invariants"]["MM2-TIER-1"]
    assert tier["status"] == "warn", tier
    (example,) = tier["examples"]
    assert (example["topic"], example["next_offset"], example["remote_tier_records"]) == (
        tiered.topic,
        RECORDS,
        local_start - RECORDS,
    ), example


def test_the_records_scan_reads_the_remote_tier_and_a_remote_storage_failure_is_its_own_cause(
    spark: Any, tiered: Tiered, readiness: dict[str, Any], tmp_path: Path
) -> None:
    """The records scan over the wire, both topics' common ranges, on the source all in the
    remote tier: the fully mirrored topic is verified over its whole range [0, RECORDS)
    (the broker reads its remote tier); the lagging topic's remote storage directory taken
    away (the storage unreachable), the broker's remote fetch fails, and its range [0, 300)
    is unread with the remote tier named as the cause, never read as empty or passed; the
    batches fetched over the wire (``segments fetch``) fail there with the same cause.
    Runs last: it takes the lagging topic's remote segments away."""
    run = tmp_path / "pair" / "run"
    for role, snapshot in readiness["snapshots"].items():
        shutil.copytree(snapshot, run / role)
    config = tmp_path / "audit.yaml"
    scope = f"scope:\n  topics:\n    include: ['{tiered.topic}', '{tiered.lagging}']\n"
    config.write_text(tiered.config.read_text() + scope)
    (remote,) = remote_storage_dir(tiered.state, "source").glob(f"{tiered.lagging}-0-*")
    remote.rename(tmp_path / "unreachable")
    proc = run_in_process("records", "scan", "--config", str(config), "--out", str(run), "--output", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    (line,) = proc.stdout.splitlines()
    assert schema_errors(json.loads(line), output_schema()) == []
    ranges = pq.read_table(run / "source" / "record_chunk_ranges.parquet").to_pylist()
    (lagging,) = (r for r in ranges if r["topic"] == tiered.lagging)
    assert (lagging["start_offset"], lagging["read_to"], lagging["complete"]) == (0, 0, False)
    assert lagging["detail"].startswith("remote tier read failed"), lagging["detail"]
    note = json.loads((run / "source" / "manifest.json").read_text())["notes"]["records"]
    assert note["unreadable_ranges"] >= 1
    coverage = {p["topic"]: p["ranges"] for p in note["coverage"]["partitions"]}
    assert coverage[tiered.topic] == [{"start": 0, "end": RECORDS, "state": "verified"}]
    # An unreadable range stays in the history's list of ranges to verify again: never verified.
    assert [(r["start"], r["end"]) for r in coverage[tiered.lagging]] == [(0, MIRRORED_BEFORE)]
    assert coverage[tiered.lagging][0]["state"] == "unreadable"  # not read: neither verified nor mismatched
    # The batches fetched over the wire (segments fetch): the same remote failure, named so.
    fetch = run_in_process(
        "segments", "fetch", "--config", str(config), "--role", "source", "--out", str(run / "source")
    )
    assert fetch.returncode == 0, fetch.stdout + fetch.stderr[-3000:]
    issues = pq.read_table(run / "source" / "batch_scan_issues.parquet").to_pylist()
    failed = [i for i in issues if i["topic"] == tiered.lagging and i["kind"] == "fetch_error"]
    assert failed and all(i["detail"].startswith("remote tier read failed") for i in failed), issues
    assert not [i for i in issues if i["topic"] == tiered.topic], issues
