"""Batch-level collection against the real sandbox brokers and Kafka's own tools.

Oracle: for segments the sandbox brokers wrote (plain, each compression codec,
transactional with commits and aborts), the batches and markers the scan finds equal what
``kafka-dump-log`` prints for the same files. The Fetch path gives the same tables as the
segment path for the same partitions. Copies of real segment files audit as identical,
and a flipped payload byte, a removed batch and a changed marker in a copy are each caught
at their offset.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from crc32c import crc32c

from audit.sandbox.mirror import wait_transactions_settled
from audit.sandbox.processes import dump_log_class, run_tool
from audit.sandbox.state import SandboxState
from tests.cli import run_cli, run_in_process, submit_cli

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
COMPARED = (
    "base_offset",
    "last_offset",
    "crc",
    "partition_leader_epoch",
    "producer_id",
    "producer_epoch",
    "is_transactional",
    "is_control",
    "compression",
    "record_count",
    "size_bytes",
    "position",
    "base_sequence",
    "magic",
    "timestamp_type",
    "max_timestamp_ms",
)


@pytest.fixture(scope="module")
def written(sandbox: SandboxState) -> dict[str, Any]:
    """Two single-replica topics on source broker 1 with 1 MiB segments (Kafka's minimum), so
    several files and indexes per partition: one per codec, one transactional with commits
    and aborts whose timestamps the broker sets (LogAppendTime)."""
    bootstrap = sandbox.cluster("source").bootstrap
    suffix = uuid.uuid4().hex[:6]
    plain, txn = f"seg-codecs-{suffix}", f"seg-txn-{suffix}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for topic, timestamps in ((plain, "CreateTime"), (txn, "LogAppendTime")):
        config = {"segment.bytes": str(1 << 20), "message.timestamp.type": timestamps}
        admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[1]], config=config)])[
            topic
        ].result(timeout=60)
    for codec in CODECS:
        p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 20})
        for i in range(3000):  # random bytes: ~2.5 MB even compressed, so several 1 MiB segments
            value = f"{codec}-{i}-".encode() + os.urandom(160)
            p.produce(plain, value, f"k{i % 7}".encode(), partition=0, headers=[("h", b"1")])
        p.flush(30)
    t = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"seg-{suffix}"})
    t.init_transactions(30)
    for n, outcome in enumerate(("commit", "abort", "commit", "abort", "commit")):
        t.begin_transaction()
        for i in range(10):
            t.produce(txn, f"{outcome}-{n}-{i}".encode(), b"k", partition=0)
        t.flush(30)
        (t.commit_transaction if outcome == "commit" else t.abort_transaction)(30)
    wait_transactions_settled(bootstrap, [plain, txn])
    data = Path(sandbox.cluster("source").node(1).node_dir) / "data"
    return {"plain": plain, "txn": txn, "dirs": [data / f"{plain}-0", data / f"{txn}-0"]}


def _dump_log(sandbox: SandboxState, files: list[Path]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Batches and markers as kafka-dump-log (DumpLogSegments --deep-iteration) prints them."""
    proc = run_tool(
        sandbox, dump_log_class(sandbox.jars), ["--deep-iteration", "--files", ",".join(map(str, files))]
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    batches, markers = [], []
    current = ""
    for line in proc.stdout.splitlines():
        if line.startswith("Dumping "):
            current = line.split(" ", 1)[1].strip()
        elif line.startswith("baseOffset:"):
            f: dict[str, str] = dict(re.findall(r"(\w+): (\S+)", line))
            batches.append(
                {
                    "file": Path(current).name,
                    "dir": Path(current).parent.name,
                    "base_offset": int(f["baseOffset"]),
                    "last_offset": int(f["lastOffset"]),
                    "crc": int(f["crc"]),
                    "partition_leader_epoch": int(f["partitionLeaderEpoch"]),
                    "producer_id": int(f["producerId"]),
                    "producer_epoch": int(f["producerEpoch"]),
                    "is_transactional": f["isTransactional"] == "true",
                    "is_control": f["isControl"] == "true",
                    "compression": f["compresscodec"].lower(),
                    "record_count": int(f["count"]),
                    "size_bytes": int(f["size"]),
                    "position": int(f["position"]),
                    "base_sequence": int(f["baseSequence"]),
                    "magic": int(f["magic"]),
                    # printed as "<timestamp type>: <max timestamp>"
                    "timestamp_type": "LogAppendTime" if "LogAppendTime" in f else "CreateTime",
                    "max_timestamp_ms": int(f.get("LogAppendTime", f.get("CreateTime", "-2"))),
                }
            )
        elif "endTxnMarker:" in line:
            f = dict(re.findall(r"(\w+): (\S+)", line))
            markers.append(
                {
                    "dir": Path(current).parent.name,
                    "offset": int(f["offset"]),
                    "marker": f["endTxnMarker"],
                    "coordinator_epoch": int(f["coordinatorEpoch"]),
                }
            )
    return batches, markers


def _rows(path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
    return rows


def test_scan_equals_kafka_dump_log(sandbox: SandboxState, written: dict[str, Any], tmp_path: Path) -> None:
    files = sorted(f for d in written["dirs"] for f in d.glob("*.log"))
    # Several segments in the plain partition: indexes and multi-file partitions are exercised.
    assert len(list(written["dirs"][0].glob("*.log"))) >= 3
    out = tmp_path / "scan"
    proc = run_cli(
        "segments", "scan", *map(str, written["dirs"]), "--out", str(out), "--role", "source", "--deep"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    oracle_batches, oracle_markers = _dump_log(sandbox, files)
    ours = _rows(out / "batches.parquet")
    assert all(r["crc_valid"] for r in ours)
    assert {r["compression"] for r in ours} == set(CODECS)
    assert {r["timestamp_type"] for r in ours} == {"CreateTime", "LogAppendTime"}
    mine = sorted(
        (
            {"file": Path(r["file"]).name, "dir": Path(r["file"]).parent.name} | {k: r[k] for k in COMPARED}
            for r in ours
        ),
        key=lambda r: (r["dir"], r["base_offset"]),
    )
    assert mine == sorted(oracle_batches, key=lambda r: (r["dir"], r["base_offset"]))
    markers = sorted(
        (
            {
                "dir": Path(m["file"]).parent.name,
                "offset": m["offset"],
                "marker": m["marker"],
                "coordinator_epoch": m["coordinator_epoch"],
            }
            for m in _rows(out / "markers.parquet")
        ),
        key=lambda m: m["offset"],
    )
    assert [m["marker"] for m in markers] == ["COMMIT", "ABORT", "COMMIT", "ABORT", "COMMIT"]
    assert markers == sorted(oracle_markers, key=lambda m: m["offset"])
    issues = _rows(out / "batch_scan_issues.parquet")
    assert all(i["severity"] == "info" for i in issues), issues


def _config(tmp: Path, sandbox: SandboxState, extra: str = "") -> Path:
    path = tmp / "audit.yaml"
    path.write_text(
        f"source:\n  bootstrap_servers: {sandbox.cluster('source').bootstrap}\n  timeout_seconds: 20\n"
        f"destination:\n  bootstrap_servers: {sandbox.cluster('destination').bootstrap}\n"
        "  timeout_seconds: 20\n"
        "spark:\n  master: local[2]\n  conf:\n    spark.sql.shuffle.partitions: '2'\n" + extra
    )
    return path


# A split that cuts the transactional topic (5 transactions of 10 records and a marker:
# 55 offsets) through its batches, and each codec's big batches into many ranges, most of
# them inside one batch; a byte budget below most batches' size, so responses hold one
# batch or end inside the next one and are fetched again.
SPLIT_OFFSETS, FETCH_MAX_BYTES = 27, 1024


def test_fetch_over_the_wire_equals_the_segment_scan(
    spark: Any, sandbox: SandboxState, written: dict[str, Any], standalone: Any, tmp_path: Path
) -> None:
    """The wire tables equal the segment tables for the same partitions, batches and
    markers cell by cell (minus where the bytes were: file and position), both with the
    default split (one offset range per partition) and split into ranges of
    ``SPLIT_OFFSETS``: no batch lost or fetched twice at a range boundary; the split fetch
    also submitted to a standalone cluster, whose executors open the Kafka connections."""
    # Only this module's topics: a session's other topics would be fetched in tiny ranges too.
    scope = f"scope:\n  topics:\n    include: ['{written['plain']}', '{written['txn']}']\n"
    cfg = _config(tmp_path, sandbox, scope)
    split_dir = tmp_path / "split"
    split_dir.mkdir()
    split_cfg = _config(
        split_dir,
        sandbox,
        scope + f"segments:\n  split_offsets: {SPLIT_OFFSETS}\n  fetch_max_bytes: {FETCH_MAX_BYTES}\n",
    )
    assert run_cli("snapshot", "--config", str(cfg), "--out", str(tmp_path / "run")).returncode == 0
    snap = tmp_path / "run" / "source"
    split_snap, cluster_snap = tmp_path / "split-source", tmp_path / "cluster-source"
    shutil.copytree(snap, split_snap)
    shutil.copytree(snap, cluster_snap)
    for config, out in ((cfg, snap), (split_cfg, split_snap)):
        proc = run_in_process(
            "segments", "fetch", "--config", str(config), "--role", "source", "--out", str(out)
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
    proc = submit_cli(
        standalone.master_url,
        "segments",
        "fetch",
        "--config",
        str(split_cfg),
        "--role",
        "source",
        "--out",
        str(cluster_snap),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = run_in_process(
        "segments", "scan", *map(str, written["dirs"]), "--out", str(tmp_path / "seg"), "--role", "source"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    ours = {written["plain"], written["txn"]}
    drop = ("file", "position", "crc_valid")

    def cells(path: Path, offset: str) -> list[dict[str, Any]]:
        return sorted(
            ({k: v for k, v in r.items() if k not in drop} for r in _rows(path) if r["topic"] in ours),
            key=lambda r: (r["topic"], r["partition"], r[offset]),
        )

    seg = cells(tmp_path / "seg" / "batches.parquet", "base_offset")
    seg_markers = cells(tmp_path / "seg" / "markers.parquet", "offset")
    assert len(seg) >= 10 and len(seg_markers) == 5
    # The split really cuts through batches of both topics (the case under test).
    for topic in ours:
        batches = [r for r in seg if r["topic"] == topic]
        start, end = batches[0]["base_offset"], batches[-1]["last_offset"] + 1
        cuts = range(start + SPLIT_OFFSETS, end, SPLIT_OFFSETS)
        assert any(b["base_offset"] < c <= b["last_offset"] for b in batches for c in cuts), topic

    parts = _rows(snap / "partitions.parquet")
    assert {p["topic"] for p in parts} == ours
    for out, split in ((snap, 1_000_000), (split_snap, SPLIT_OFFSETS), (cluster_snap, SPLIT_OFFSETS)):
        assert cells(out / "batches.parquet", "base_offset") == seg, out.name
        assert cells(out / "markers.parquet", "offset") == seg_markers, out.name
        note = json.loads((out / "manifest.json").read_text())["notes"]["batches"]
        assert note["read"] == "wire" and note["split_offsets"] == split
        expected_ranges = sum(
            -(-(p["high_watermark"] - p["log_start_offset"]) // split)
            for p in parts
            if p["high_watermark"] > p["log_start_offset"]
        )
        assert note["offset_ranges"] == expected_ranges


def _batches_by_offset(out: Path) -> dict[tuple[str, int], dict[str, Any]]:
    return {(Path(r["file"]).parent.name, r["base_offset"]): r for r in _rows(out / "batches.parquet")}


def _cut(path: Path, position: int, size: int, replacement: bytes = b"") -> None:
    data = path.read_bytes()
    path.write_bytes(data[:position] + replacement + data[position + size :])


def test_copies_of_real_segments_audit_as_identical_and_damage_is_caught(
    spark: Any, sandbox: SandboxState, written: dict[str, Any], tmp_path: Path
) -> None:
    src_tree, same_tree, bad_tree = tmp_path / "src", tmp_path / "same", tmp_path / "bad"
    for tree in (src_tree, same_tree, bad_tree):
        for d in written["dirs"]:
            shutil.copytree(d, tree / d.name)
    scan = tmp_path / "scans"
    for name, tree, role in (("s", src_tree, "source"), ("same", same_tree, "destination")):
        proc = run_in_process(
            "segments", "scan", str(tree), "--out", str(scan / name), "--role", role, "--deep"
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
    proc = run_in_process(
        "audit",
        "--source",
        str(scan / "s"),
        "--destination",
        str(scan / "same"),
        "--out",
        str(tmp_path / "ok"),
    )
    inv = json.loads((tmp_path / "ok" / "summary.json").read_text())["invariants"]
    for inv_id in ("CM-DATA-2", "CM-TXN-2", "CM-TXN-3"):
        assert inv[inv_id]["status"] == "pass", (inv_id, inv[inv_id], proc.stderr[-2000:])
    # Identical copies fail nothing (warnings allowed): ExitCode.OK.
    failed = [i for i, v in inv.items() if v["status"] == "fail"]
    assert proc.returncode == 0, (failed, proc.stderr[-2000:])

    batches = _batches_by_offset(scan / "s")
    plain_dir, txn_dir = written["dirs"][0].name, written["dirs"][1].name
    plain = sorted((r for (d, _), r in batches.items() if d == plain_dir), key=lambda r: r["base_offset"])
    assert len(plain) >= 5
    flip, removed = plain[1], plain[len(plain) // 2]
    # 1. A flipped byte in a record payload of the plain topic (the last byte of a batch).
    seg = bad_tree / plain_dir / Path(flip["file"]).name
    data = bytearray(seg.read_bytes())
    data[flip["position"] + flip["size_bytes"] - 1] ^= 0xFF
    seg.write_bytes(bytes(data))
    # 2. The second commit marker's batch changed into an ABORT (CRC recomputed: a valid batch).
    commits = sorted(
        (r for (d, _), r in batches.items() if d == txn_dir and r["is_control"] and r["control_type"] == 1),
        key=lambda r: r["base_offset"],
    )
    marker = commits[1]
    seg = bad_tree / txn_dir / Path(marker["file"]).name
    data = bytearray(seg.read_bytes())
    body = data[marker["position"] : marker["position"] + marker["size_bytes"]]
    key_at = bytes(body).index(b"\x08\x00\x00\x00\x01", 61)  # key length 4, version 0, type 1 (COMMIT)
    body[key_at + 4] = 0  # type 0: ABORT
    struct.pack_into(">I", body, 17, crc32c(bytes(body[21:])))
    data[marker["position"] : marker["position"] + marker["size_bytes"]] = body
    seg.write_bytes(bytes(data))
    # 3. A whole batch removed from the middle of the plain topic's log.
    _cut(bad_tree / plain_dir / Path(removed["file"]).name, removed["position"], removed["size_bytes"])

    proc = run_in_process(
        "segments", "scan", str(bad_tree), "--out", str(scan / "bad"), "--role", "destination", "--deep"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = run_in_process(
        "audit",
        "--source",
        str(scan / "s"),
        "--destination",
        str(scan / "bad"),
        "--out",
        str(tmp_path / "bad-run"),
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    summary = json.loads((tmp_path / "bad-run" / "summary.json").read_text())
    inv = summary["invariants"]
    data2 = inv["CM-DATA-2"]
    assert data2["status"] == "fail"
    diffs = next(c for c in data2["checks"] if "common offset range" in c["description"])
    got = {(e["topic"], e["base_offset"], e["batch_status"]) for e in diffs["examples"]}
    assert (written["plain"], removed["base_offset"], "missing_on_destination") in got
    assert (written["txn"], marker["base_offset"], "differs") in got
    corrupt = next(c for c in data2["checks"] if "could be read" in c["description"])
    assert {(e["side"], e["kind"], e["topic"], e["position"]) for e in corrupt["examples"]} == {
        ("destination", "crc_mismatch", written["plain"], flip["position"])
    }
    firsts = {(d["topic"], d["base_offset"]) for d in data2["first_divergence"]}
    assert (written["txn"], marker["base_offset"]) in firsts
    txn2 = inv["CM-TXN-2"]
    assert txn2["status"] == "fail"
    assert {(e["offset"], e["src_marker"], e["dst_marker"]) for e in txn2["examples"]} == {
        (marker["base_offset"], "COMMIT", "ABORT")
    }
    report = (tmp_path / "bad-run" / "report" / "index.html").read_text()
    assert "First differing batch per partition" in report
