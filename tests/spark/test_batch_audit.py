"""Segment scans and the batch-level invariants on hand-made segment files (Spark).

Real brokers' segments are covered by tests/integration/test_segments_live.py; here every
byte is known, so each fault is placed exactly and must be reported at exactly its offset.

The scan tests scan a directory each. The audit tests share two Spark audits (a whole audit
takes 10-40 s): one pair of log dirs holds a topic per case (``CASES``: an identical copy, a
partition a side's scan did not read, a live log dir, offsets going backwards, damages,
transactions open below the last stable offset, epochs above the destination's), each is
scanned once and one audit judges every case; a test reads its case's share of the run: the
validator's own fold (``audit.validate.results.fold``) over its topic's rows of the run's
comparison tables (``Case``, tests/cases.py). The second audit is under
``mirror.preserves_batch_epochs`` (a setting of the whole run) and reads an issues table
written before ``end_position`` existed (a column of the whole table). A third, of a pair
without batches (not collected: a property of the whole pair), is its own test's.
"""

from __future__ import annotations

import dataclasses
import shutil
import struct
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from audit.collect.batches.collect import write_batch_scan
from audit.collect.batches.segments import ScanOptions, scan_segments
from audit.config import AuditConfig
from audit.config_file import parse_config
from audit.errors import InputError
from audit.pipeline import audit_snapshots
from audit.snapshot import PartitionRecord, Role
from tests.batches import batch, control_batch, index
from tests.cases import Audit, audit_pair
from tests.snapshots import part, write_pair

# These run the whole audit on Spark over segments the real scanner reads (make test). The
# fast tier checks each batch-level check failing, passing and never passing on an unknown
# input on its one Spark compare, without an audit: tests/spark/test_data_level_outcomes.py.

TOPIC_ID = "q1zq4Ck7TyWBfw0r_E9hKA"


def _orders_0() -> list[bytes]:
    """Offsets 0..11: plain, a committed transaction (pid 42), a gzip batch, an aborted
    transaction (pid 43), and a transaction still open at 11 (pid 44)."""
    return [
        batch(0, [(b"k0", b"a"), (b"k1", b"b"), (None, b"c")], epoch=3),
        batch(3, [(b"t", b"1"), (b"t", b"2")], transactional=True, producer_id=42, producer_epoch=7, epoch=3),
        control_batch(5, 1, producer_id=42, producer_epoch=7, epoch=3),
        batch(6, [(b"z", b"x" * 300), (b"z", b"y" * 300)], compression=1, epoch=4),
        batch(8, [(b"u", b"1"), (b"u", b"2")], transactional=True, producer_id=43, producer_epoch=1, epoch=4),
        control_batch(10, 0, producer_id=43, producer_epoch=1, epoch=4),
        batch(11, [(b"o", b"open")], transactional=True, producer_id=44, producer_epoch=0, epoch=4),
    ]


def _write_partition(root: Path, name: str, segments: dict[int, list[bytes]], tail: bytes = b"") -> None:
    d = root / name
    d.mkdir(parents=True)
    (d / "partition.metadata").write_text(f"version: 0\ntopic_id: {TOPIC_ID}\n")
    (d / "leader-epoch-checkpoint").write_text("0\n2\n3 0\n4 6\n")
    last = max(segments)
    for base, batches in segments.items():
        data = b"".join(batches) + (tail if base == last else b"")
        (d / f"{base:020d}.log").write_bytes(data)
        positions, pos = [], 0
        for b in batches:
            positions.append((struct.unpack_from(">q", b)[0] - base, pos))
            pos += len(b)
        (d / f"{base:020d}.index").write_bytes(index(positions[::2], preallocated=16))


def source_tree(root: Path, topic: str = "orders") -> Path:
    _write_partition(root, f"{topic}-0", {0: _orders_0()})
    o1 = [batch(i, [(b"k", f"v{i}".encode())], epoch=4) for i in range(10)]
    cut = batch(10, [(b"k", b"z" * 50)])[:70]  # the active segment's tail, mid-write
    _write_partition(root, f"{topic}-1", {0: o1[:5], 5: o1[5:]}, tail=cut)
    return root


def _scan(spark: Any, tree: Path, out: Path, role: Role | None, deep: bool = False) -> dict[str, Any]:
    scanned = scan_segments(spark, [str(tree)], ScanOptions(deep=deep, split_bytes=200))
    return write_batch_scan(spark, scanned, out, role, {"read": "files"})


def _table(path: Path) -> list[dict[str, Any]]:
    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["topic"], r["partition"], r.get("base_offset", r.get("offset")))

    return sorted(pq.read_table(path).to_pylist(), key=key)


def test_scan_of_a_new_directory_makes_a_whole_snapshot(spark: Any, tmp_path: Path) -> None:
    tree = source_tree(tmp_path / "logs")
    note = _scan(spark, tree, tmp_path / "snap", "source", deep=True)
    assert (note["batches"], note["markers"]) == (17, 2)
    assert note["issues"] == {"truncated": 1}
    snap = tmp_path / "snap"
    batches = [r for r in _table(snap / "batches.parquet") if r["partition"] == 0]
    assert [r["base_offset"] for r in batches] == [0, 3, 5, 6, 8, 10, 11]
    assert all(r["crc_valid"] for r in batches)
    markers = _table(snap / "markers.parquet")
    assert [(m["offset"], m["marker"], m["producer_id"], m["coordinator_epoch"]) for m in markers] == [
        (5, "COMMIT", 42, 5),
        (10, "ABORT", 43, 5),
    ]
    (issue,) = pq.read_table(snap / "batch_scan_issues.parquet").to_pylist()
    assert (issue["partition"], issue["kind"], issue["severity"]) == (1, "truncated", "info")
    assert issue["file"].endswith("orders-1/00000000000000000005.log") and issue["position"] > 0
    # The cut batch's bytes run to the end of the file: no byte of it is left unaccounted.
    assert issue["end_position"] == (tree / "orders-1" / f"{5:020d}.log").stat().st_size
    parts = {r["partition"]: r for r in pq.read_table(snap / "partitions.parquet").to_pylist()}
    p0 = parts[0]
    assert (p0["log_start_offset"], p0["high_watermark"], p0["last_stable_offset"]) == (0, 12, 11)
    assert (p0["topic_id"], p0["leader_epoch"]) == (TOPIC_ID.replace("_", "/"), 4)
    assert p0["open_txn_first_timestamp_ms"] == 1_700_000_000_000
    assert (parts[1]["high_watermark"], parts[1]["last_stable_offset"]) == (10, 10)
    assert pq.read_table(snap / "groups.parquet").num_rows == 0


def test_a_second_scan_of_the_same_directory_replaces_its_tables(spark: Any, tmp_path: Path) -> None:
    tree = source_tree(tmp_path / "logs")
    _scan(spark, tree, tmp_path / "snap", "source")
    shutil.rmtree(tree / "orders-1")
    with pytest.raises(InputError, match="role is 'source'"):
        _scan(spark, tree, tmp_path / "snap", "destination")
    # orders-0 now ends with pid 43's transaction (8-9) open, its abort marker not there yet:
    # the snapshot's partitions, derived from the segments, follow the new scan (they were
    # [0, 12) with the LSO at 11).
    shutil.rmtree(tree / "orders-0")
    _write_partition(tree, "orders-0", {0: _orders_0()[:5]})
    note = _scan(spark, tree, tmp_path / "snap", None)
    assert note["batches"] == 5
    assert {r["partition"] for r in _table(tmp_path / "snap" / "batches.parquet")} == {0}
    (p0,) = pq.read_table(tmp_path / "snap" / "partitions.parquet").to_pylist()
    assert (p0["partition"], p0["high_watermark"], p0["last_stable_offset"]) == (0, 10, 8)


def test_a_scan_into_a_snapshot_that_dies_before_its_manifest_leaves_the_old_snapshot_whole(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan replaced its tables one at a time, then the manifest: a crash in between left
    new tables under the old manifest. The snapshot is now replaced as one unit."""
    from audit.collect.batches import collect

    tree = source_tree(tmp_path / "logs")
    snap = tmp_path / "snap"
    _scan(spark, tree, snap, "source")
    before = {str(f.relative_to(snap)): f.read_bytes() for f in snap.rglob("*") if f.is_file()}
    shutil.rmtree(tree / "orders-1")

    def dies(*_: object) -> None:
        raise KeyboardInterrupt  # the process killed as it writes the manifest

    monkeypatch.setattr(collect, "atomic_write_json", dies)
    with pytest.raises(KeyboardInterrupt):
        _scan(spark, tree, snap, None)
    after = {str(f.relative_to(snap)): f.read_bytes() for f in snap.rglob("*") if f.is_file()}
    assert after == before


def test_split_ranges_and_one_range_per_file_give_the_same_batches(spark: Any, tmp_path: Path) -> None:
    tree = source_tree(tmp_path / "logs")
    key = ["topic", "partition", "base_offset", "crc", "position"]
    found = []
    for split in (100, 1 << 30):
        scan = scan_segments(spark, [str(tree)], ScanOptions(split_bytes=split))
        rows = sorted(repr(tuple(r)) for r in scan.rows.select(key).collect())
        found.append((rows, [(i.kind, i.file, i.position) for i in scan.collected_issues()]))
    assert found[0] == found[1]
    assert len(found[0][0]) == 17 and [k for k, _, _ in found[0][1]] == ["truncated"]


# ------------------------------------------------------------------ the cases of one audit

# The suites of the batch-level tables: every check of the invariants asserted below is in
# them (record_chunk_diffs is not computed here: no records scan).
SUITES = (
    "cm_batch_diffs.json",
    "cm_marker_diffs.json",
    "cm_txn_closure.json",
    "cm_scan_issues.json",
    "cm_record_chunks.json",
)
BATCH_LEVEL = ("CM-DATA-2", "CM-TXN-2", "CM-TXN-3", "CM-EPOCH-4")

IDENTICAL = "identical"
UNREAD = "unread"
LIVE = "live"
BACKWARDS = "backwards"
DAMAGED = "damaged"
OPEN_BELOW_LSO = "open-below-lso"
OPEN_AT_LSO = "open-at-lso"
EPOCHS = "epochs"
UID = "5f0e6c2a9b1d4e7f8a3c2b1d0e9f8a7b"

Parts = tuple[list[PartitionRecord], list[PartitionRecord]]  # a case's partitions: source, destination


def _rewrite(path: Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert data.count(old) == 1
    path.write_bytes(data.replace(old, new))


def _rewrite_epoch(seg: Path, base_offset: int) -> None:
    """Set the partition leader epoch of one batch (outside the CRC, as a mirror may)."""
    data = bytearray(seg.read_bytes())
    pos = 0
    while pos < len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        if base == base_offset:
            struct.pack_into(">i", data, pos + 12, 1)
        pos += length + 12
    seg.write_bytes(bytes(data))


def _as_scanned(topic: str) -> list[PartitionRecord]:
    """``source_tree``'s partitions as a scan of it derives them (the first test): what the
    snapshots a scan made held, where a case needs nothing else."""
    return [
        part(topic, 0, high_watermark=12, last_stable_offset=11, leader_epoch=4),
        part(topic, 1, high_watermark=10, last_stable_offset=10, leader_epoch=4),
    ]


def _copied(src: Path, dst: Path, topic: str, partitions: Iterable[int] = (0, 1)) -> None:
    """``source_tree`` of ``topic`` into the source's log dir, its ``partitions`` copied into
    the destination's."""
    source_tree(src, topic)
    for p in partitions:
        shutil.copytree(src / f"{topic}-{p}", dst / f"{topic}-{p}")


def _identical(src: Path, dst: Path) -> Parts:
    _copied(src, dst, IDENTICAL)
    return _as_scanned(IDENTICAL), _as_scanned(IDENTICAL)


def _unread(src: Path, dst: Path) -> Parts:
    """Both snapshots say unread-1 holds records, but the destination's log dir lacks its
    replica: its scan reads none of its batches."""
    _copied(src, dst, UNREAD, (0,))
    return _as_scanned(UNREAD), _as_scanned(UNREAD)  # the destination's as a live snapshot lists them


def _live(src: Path, dst: Path) -> Parts:
    """The destination's log dir as Kafka leaves it: replica directories set aside (a -future
    copy being moved between log dirs, a -delete and a -stray one, all holding damaged
    batches), KRaft's metadata log and the broker's own files (in the log dir itself: the
    destination tree's root); and a segment in no partition directory (restored/)."""
    _copied(src, dst, LIVE)
    for state in ("future", "delete", "stray"):
        aside = dst / f"{LIVE}-0.{UID}-{state}"
        shutil.copytree(dst / f"{LIVE}-0", aside)
        _rewrite(aside / f"{0:020d}.log", _orders_0()[3], b"")  # would differ if it were read
    shutil.copytree(dst / f"{LIVE}-1", dst / "__cluster_metadata-0")
    for name in ("meta.properties", "recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        (dst / name).write_text("0\n0\n")
    shutil.copytree(dst / f"{LIVE}-1", dst / "restored")
    return _as_scanned(LIVE), _as_scanned(LIVE)


def _backwards(src: Path, dst: Path) -> Parts:
    """The destination's offsets go back, inside a segment (5, then 4) and across two (4 in
    the first, then 2 in the next)."""
    rec: list[tuple[bytes | None, bytes | None]] = [(b"k", b"v")]
    _write_partition(
        dst,
        f"{BACKWARDS}-0",
        {0: [batch(0, rec), batch(5, rec), batch(4, rec)], 6: [batch(2, rec), batch(7, rec)]},
    )
    _write_partition(src, f"{BACKWARDS}-0", {0: [batch(i, rec) for i in range(8)]})
    parts = [part(BACKWARDS, 0, high_watermark=8, last_stable_offset=8, leader_epoch=4)]
    return parts, parts


def _damaged(src: Path, dst: Path) -> Parts:
    """Into the destination's copy: a flipped payload byte (offset 0), a removed batch (6),
    a changed marker (5: COMMIT became ABORT) and a second ABORT closing the same producer
    epoch as the one at 10 (a failback hazard) on another partition."""
    batches = _orders_0()
    _copied(src, dst, DAMAGED)
    seg = dst / f"{DAMAGED}-0" / f"{0:020d}.log"
    flipped = bytearray(batches[0])
    flipped[-3] ^= 0xFF
    _rewrite(seg, batches[0], bytes(flipped))
    _rewrite(seg, batches[3], b"")
    seg.with_suffix(".index").unlink()  # stale after the removal: read as one range instead
    _rewrite(seg, batches[2], control_batch(5, 0, producer_id=42, producer_epoch=7, epoch=3))
    seg1 = dst / f"{DAMAGED}-1" / f"{5:020d}.log"
    data = seg1.read_bytes()
    cut = data.index(batch(9, [(b"k", b"v9")], epoch=4)) + len(batch(9, [(b"k", b"v9")], epoch=4))
    seg1.write_bytes(
        data[:cut]
        + control_batch(10, 0, producer_id=50, producer_epoch=2, epoch=4)
        + control_batch(11, 0, producer_id=50, producer_epoch=2, epoch=4)
    )
    return (
        [part(DAMAGED, 0, high_watermark=12, last_stable_offset=11), part(DAMAGED, 1, high_watermark=10)],
        [
            part(DAMAGED, 0, high_watermark=12, last_stable_offset=11, leader_epoch=9),
            part(DAMAGED, 1, high_watermark=12, leader_epoch=9),
        ],
    )


def _open_transactions(topic: str, src_lso: int, dst_lso: int) -> Callable[[Path, Path], Parts]:
    """Each side's copy loses one marker: the source the ABORT at 10 (pid 43's batch at 8 is
    left open), the destination the COMMIT at 5 (pid 42's batch at 3); each side's last
    stable offset of partition 0 is ``src_lso`` and ``dst_lso``."""

    def build(src: Path, dst: Path) -> Parts:
        batches = _orders_0()
        _copied(src, dst, topic)
        for tree, marker in ((src, batches[5]), (dst, batches[2])):
            seg = tree / f"{topic}-0" / f"{0:020d}.log"
            _rewrite(seg, marker, b"")
            seg.with_suffix(".index").unlink()  # stale after the removal
        return (
            [
                part(topic, 0, high_watermark=12, last_stable_offset=src_lso),
                part(topic, 1, high_watermark=10),
            ],
            [
                part(topic, 0, high_watermark=12, last_stable_offset=dst_lso),
                part(topic, 1, high_watermark=10),
            ],
        )

    return build


def _epochs(src: Path, dst: Path) -> Parts:
    """DLE 3 on epochs-0: its batches of epoch 4 (offsets 6..11) are above it; the batch at 2
    of epochs-1 carries epoch 1 on the destination, 4 on the source."""
    _copied(src, dst, EPOCHS)
    _rewrite_epoch(dst / f"{EPOCHS}-1" / f"{0:020d}.log", 2)
    return (
        [part(EPOCHS, 0, high_watermark=12, last_stable_offset=11), part(EPOCHS, 1, high_watermark=10)],
        [
            part(EPOCHS, 0, high_watermark=12, last_stable_offset=11, leader_epoch=3),
            part(EPOCHS, 1, high_watermark=10, leader_epoch=9),
        ],
    )


# A topic per case, its segments in both log dirs and its partitions in both snapshots. The
# live log dir's segment in no partition directory has no topic: its case is topic None.
CASES = {
    IDENTICAL: _identical,
    UNREAD: _unread,
    LIVE: _live,
    BACKWARDS: _backwards,
    DAMAGED: _damaged,
    # The broker's view (only pid 44's transaction at 11 is open), and each side's LSO at its
    # oldest open batch (8 and 3: what a broker holding these logs would report).
    OPEN_BELOW_LSO: _open_transactions(OPEN_BELOW_LSO, 11, 11),
    OPEN_AT_LSO: _open_transactions(OPEN_AT_LSO, 8, 3),
    EPOCHS: _epochs,
}


@dataclasses.dataclass(frozen=True)
class Pair:
    """Both log dirs, scanned once each into the snapshot pair of every case."""

    root: Path
    src: Path
    dst: Path
    parts: dict[str, Parts]
    notes: dict[str, dict[str, Any]]  # each side's scan note


@pytest.fixture(scope="module")
def pair(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Pair:
    root = tmp_path_factory.mktemp("batch-audit")
    src_tree, dst_tree = root / "src", root / "dst"
    src_tree.mkdir()
    dst_tree.mkdir()
    parts = {topic: build(src_tree, dst_tree) for topic, build in CASES.items()}
    src, dst = write_pair(
        root / "pair",
        [p for s, _ in parts.values() for p in s],
        [p for _, d in parts.values() for p in d],
    )
    notes = {
        "source": _scan(spark, src_tree, src, None, deep=True),
        "destination": _scan(spark, dst_tree, dst, None, deep=True),
    }
    return Pair(root, src, dst, parts, notes)


@pytest.fixture(scope="module")
def audited(spark: Any, pair: Pair) -> Audit:
    """The one audit of every case, in the default configuration."""
    return audit_pair(spark, pair.src, pair.dst, pair.root / "run", SUITES)


@pytest.fixture(scope="module")
def promised(spark: Any, pair: Pair) -> Audit:
    """The second audit, of two cases' rows of the same scans, for what no run can hold
    beside the first: ``mirror.preserves_batch_epochs`` (the epochs case) is a setting of the
    whole run, and an issues table written before ``end_position`` existed (the identical
    copy's, as an older snapshot holds it) lacks that column for every row of it."""
    topics = (IDENTICAL, EPOCHS)
    src, dst = write_pair(
        pair.root / "promised",
        [p for t in topics for p in pair.parts[t][0]],
        [p for t in topics for p in pair.parts[t][1]],
    )
    for scanned, into in ((pair.src, src), (pair.dst, dst)):
        for name in ("batches", "markers", "batch_scan_issues"):
            table = pq.read_table(scanned / f"{name}.parquet")
            table = table.filter(pc.is_in(table["topic"], value_set=pa.array(topics)))
            if name == "batch_scan_issues":
                table = table.drop_columns(["end_position"])
            pq.write_table(table, into / f"{name}.parquet")
    cfg = parse_config("mirror:\n  preserves_batch_epochs: true\n", env={})
    return audit_pair(spark, src, dst, pair.root / "promised" / "run", SUITES, cfg)


def test_an_identical_copy_audits_as_identical(audited: Audit) -> None:
    case = audited.case(IDENTICAL)
    inv = {inv_id: case.invariant(inv_id) for inv_id in BATCH_LEVEL}
    for inv_id in BATCH_LEVEL:
        assert inv[inv_id]["status"] == "pass", (inv_id, inv[inv_id])
    # The copy's batches and markers (the run's counts are every case's).
    assert inv["CM-DATA-2"]["evaluated"] == 17
    assert inv["CM-TXN-2"]["evaluated"] == 2


def test_a_partition_a_sides_scan_did_not_read_is_unchecked_not_passed(audited: Audit) -> None:
    """Both snapshots say unread-1 holds records, but the destination's scan read none of
    its batches (a log dir without its replica): nothing of it was compared, so CM-DATA-2
    warns with that partition unchecked, naming the input, instead of passing by omission
    (found by the data level's unknown-input tests, tests/spark/test_data_level_outcomes.py)."""
    data2 = audited.case(UNREAD).invariant("CM-DATA-2")
    assert data2["status"] == "warn", data2
    (gap,) = data2["unchecked_gaps"]
    assert gap["missing"].startswith("the batches of the partition on one side") and gap["rows"] == 1, gap
    assert [(f["topic"], f["partition"]) for f in gap["first"]] == [(UNREAD, "1")]
    assert data2["violations"] == 0  # unread-0, read on both sides, is the same
    # The run's own summary names it too (no other case leaves a partition unread).
    (gap,) = audited.summary["invariants"]["CM-DATA-2"]["unchecked_gaps"]
    assert [(f["topic"], f["partition"]) for f in gap["first"]] == [(UNREAD, "1")] and gap["rows"] == 1


def test_a_live_log_dir_audits_its_current_replicas_only(pair: Pair, audited: Audit) -> None:
    """A broker's log dir as Kafka leaves it: replica directories set aside, KRaft's metadata
    log and the broker's own files. They are reported as information and CM-DATA-2 passes;
    a segment in no partition directory still fails it."""
    batches = Counter(b["topic"] for b in pq.read_table(pair.dst / "batches.parquet").to_pylist())
    # Only the cases' partitions were read: nothing of the metadata log, the replicas set
    # aside, the broker's files or the segment in no partition directory.
    assert batches[LIVE] == 17 and set(batches) == set(CASES)
    issues = pq.read_table(pair.dst / "batch_scan_issues.parquet").to_pylist()
    restored = [i for i in issues if "/restored/" in i["file"]]
    live = [i for i in issues if i["topic"] not in set(CASES) - {LIVE} and i not in restored]
    assert Counter(i["kind"] for i in live) == {"truncated": 1, "set_aside_replica": 3}
    set_aside = sorted((i["file"].rsplit("-", 1)[-1], i["severity"]) for i in live if i["partition"] == 0)
    assert set_aside == [("delete", "info"), ("future", "info"), ("stray", "info")]
    data2 = audited.case(LIVE).invariant("CM-DATA-2")
    assert data2["status"] == "pass", data2

    lost = audited.case(None).invariant("CM-DATA-2")
    assert lost["status"] == "fail"
    failing = next(c for c in lost["checks"] if "could be read" in c["description"] and not c["success"])
    assert {(e["kind"], e["topic"]) for e in failing["examples"]} == {("not_a_partition", None)}
    assert restored and all(i["topic"] is None for i in restored)
    whole = audited.summary["invariants"]["CM-DATA-2"]
    failing = next(c for c in whole["checks"] if "could be read" in c["description"] and not c["success"])
    assert ("not_a_partition", None) in {(e["kind"], e["topic"]) for e in failing["examples"]}


def test_offsets_going_backwards_are_an_error_issue_and_fail_cm_data_2(pair: Pair, audited: Audit) -> None:
    """A log's offsets only grow. Batches whose base offset is not past the one before
    them, inside a segment or across two, are read (rows) and reported (an error issue at
    each), never accepted in silence."""
    assert pair.notes["destination"]["issues"].get("offsets_backwards") == 2, pair.notes  # this case's only
    issues = pq.read_table(pair.dst / "batch_scan_issues.parquet").to_pylist()
    backwards = sorted(
        (i["file"].rsplit("/", 1)[-1], i["severity"], i["detail"])
        for i in issues
        if i["kind"] == "offsets_backwards" and i["topic"] == BACKWARDS
    )
    assert backwards == [
        (f"{0:020d}.log", "error", "base offset 4 is not past the previous batch's last offset 5"),
        (f"{6:020d}.log", "error", "base offset 2 is not past the previous batch's last offset 4"),
    ]
    data2 = audited.case(BACKWARDS).invariant("CM-DATA-2")
    assert data2["status"] == "fail", data2


def test_a_snapshot_written_before_end_position_existed_still_audits(promised: Audit) -> None:
    """``batch_scan_issues.end_position`` was added to the contract later: an older
    snapshot's issues table lacks it and reads as nulls there, not as an error."""
    data2 = promised.case(IDENTICAL).invariant("CM-DATA-2")
    assert data2["status"] == "pass", data2
    # The whole run's too: the epochs case's batches differ only in their leader epochs.
    assert promised.summary["invariants"]["CM-DATA-2"]["status"] == "pass"
    issues = promised.rows("scan_issues")
    assert issues and all(i["end_position"] is None for i in issues)


def test_each_damage_to_a_copy_is_caught_at_its_offset(audited: Audit) -> None:
    """The damages of ``_damaged``, each reported at its offset."""
    case = audited.case(DAMAGED)
    data2 = case.invariant("CM-DATA-2")
    assert data2["status"] == "fail"
    diffs = next(c for c in data2["checks"] if "common offset range" in c["description"])
    got = {(e["partition"], e["base_offset"], e["batch_status"]) for e in diffs["examples"]}
    assert got == {(0, 6, "missing_on_destination"), (0, 5, "differs")}, diffs
    # The report's first differing batch of damaged-0: the marker at 5, both headers side by
    # side, the fields that differ marked by their values.
    (first,) = [d for d in data2["first_divergence"] if d["partition"] == 0]
    assert (first["base_offset"], first["status"], first["differing_batches"]) == (5, "differs", 2)
    fields = {f["name"]: (f["source"], f["destination"]) for f in first["fields"]}
    assert fields["control_type"] == (1, 0)  # COMMIT on the source, ABORT on the copy
    assert fields["crc"][0] != fields["crc"][1]
    assert fields["last_offset"] == (5, 5) and fields["producer_id"] == (42, 42)
    assert "crc" in first["differing_fields"]
    corrupt = next(c for c in data2["checks"] if "could be read" in c["description"] and not c["success"])
    ((side, kind, partition, position, file),) = {
        (e["side"], e["kind"], e["partition"], e["position"], e["file"]) for e in corrupt["examples"]
    }
    assert (side, kind, partition, position) == ("destination", "crc_mismatch", 0, 0)
    assert file.endswith(f"{DAMAGED}-0/{0:020d}.log")

    txn2 = case.invariant("CM-TXN-2")
    assert txn2["status"] == "fail"
    assert {(e["offset"], e["src_marker"], e["dst_marker"]) for e in txn2["examples"]} == {
        (5, "COMMIT", "ABORT")
    }

    txn3 = case.invariant("CM-TXN-3")
    assert txn3["status"] == "fail"
    assert {(e["side"], e["partition"], e["base_offset"]) for e in txn3["examples"]} == {
        ("destination", 1, 11)
    }
    assert case.invariant("CM-EPOCH-4")["status"] == "pass"


def test_transactions_left_open_below_the_lso_are_flagged_on_either_side(audited: Audit) -> None:
    """Each side's copy loses one marker: the source the ABORT at 10 (pid 43's batch at 8
    is left open), the destination the COMMIT at 5 (pid 42's batch at 3). Against
    snapshots whose last stable offset is 11 (the broker's view: only pid 44's transaction
    at 11 is open) both are below it and flagged, each at its own side and offset; pid
    44's batch at the LSO is not. With each side's LSO at its oldest open batch (8 and 3,
    what a broker holding these logs would report) the same batches are at or after it and
    nothing is flagged: the comparison is strictly below."""
    closure = audited.rows("txn_closure")

    def case(topic: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        rows = [r for r in closure if r["topic"] == topic and r["partition"] == 0 and not r["is_control"]]
        return audited.case(topic).invariant("CM-TXN-3"), rows

    def unclosed(txn3: dict[str, Any]) -> dict[str, Any]:
        return next(c for c in txn3["checks"] if "below the last stable offset" in c["description"])

    txn3, rows = case(OPEN_BELOW_LSO)
    assert txn3["status"] == "fail", txn3
    check = unclosed(txn3)
    assert check["unexpected"] == 2
    assert {
        (e["side"], e["partition"], e["base_offset"], e["last_stable_offset"]) for e in check["examples"]
    } == {
        ("source", 0, 8, 11),
        ("destination", 0, 3, 11),
    }
    flagged = {(r["side"], r["base_offset"]): r["unclosed_below_lso"] for r in rows}
    assert flagged == {
        ("source", 3): False,  # closed by the COMMIT at 5
        ("source", 8): True,
        ("source", 11): False,  # open, but at the LSO
        ("destination", 3): True,
        ("destination", 8): False,  # closed by the ABORT at 10
        ("destination", 11): False,
    }

    txn3, rows = case(OPEN_AT_LSO)
    assert txn3["status"] == "pass", txn3
    assert unclosed(txn3)["unexpected"] == 0
    assert not any(r["unclosed_below_lso"] for r in rows)
    assert {(r["side"], r["base_offset"]) for r in rows if r["closing_offset"] is None} == {
        ("source", 8),
        ("source", 11),
        ("destination", 3),
        ("destination", 11),
    }


def test_destination_batch_epochs_above_dle_and_unequal_epochs(audited: Audit, promised: Audit) -> None:
    epoch4 = audited.case(EPOCHS).invariant("CM-EPOCH-4")
    assert epoch4["status"] == "fail"
    assert {(e["partition"], e["base_offset"]) for e in epoch4["examples"]} <= {
        (0, o) for o in (6, 8, 10, 11)
    }
    assert epoch4["violations"] == 4

    # Epoch equality is asserted only where the mirror promises to keep source epochs.
    epoch4 = promised.case(EPOCHS).invariant("CM-EPOCH-4")
    unequal = [c for c in epoch4["checks"] if "equal the source" in c["description"]]
    assert unequal[0]["unexpected"] == 1 and unequal[0]["examples"][0]["base_offset"] == 2
    epoch4 = promised.summary["invariants"]["CM-EPOCH-4"]  # the identical copy keeps its epochs
    unequal = [c for c in epoch4["checks"] if "equal the source" in c["description"]]
    assert unequal[0]["unexpected"] == 1 and unequal[0]["examples"][0]["base_offset"] == 2
    for epoch4 in (audited.case(EPOCHS).invariant("CM-EPOCH-4"), audited.summary["invariants"]["CM-EPOCH-4"]):
        unequal = [c for c in epoch4["checks"] if "equal the source" in c["description"]]
        assert unequal[0]["evaluated"] == 0  # not promised: not asserted


def test_without_batches_the_batch_invariants_are_skipped_as_not_collected(
    spark: Any, tmp_path: Path
) -> None:
    # An audit of its own: batches not collected is a property of the whole pair. On Spark,
    # not the in-process engine: there every Spark-only invariant is skipped, collected or
    # not ("not collected by this engine: checked by the Spark engine only").
    src, dst = write_pair(tmp_path, [part()], [part()])
    inv = audit_snapshots(src, dst, tmp_path / "run", AuditConfig(), engine="spark").summary["invariants"]
    for inv_id in BATCH_LEVEL:
        assert inv[inv_id]["status"] == "skipped"
        assert inv[inv_id]["reason"].startswith("not collected"), inv[inv_id]


def test_only_abort_and_commit_close_a_transaction(spark: Any) -> None:
    """A failover writes the KIP-1279 prototype's pid-reset control record (type 7) next to
    the ABORTs that close in-flight transactions. A pid-reset right after an ABORT of the
    same epoch is not a second close, does not close a transaction itself, and does not hide
    a real second close behind it."""
    from audit.collect.batches.closure import transaction_closure

    rows = [  # base_offset, producer_id, producer_epoch, is_control, control_type
        (0, 50, 2, False, None),
        (1, 50, 2, True, 0),  # ABORT closes 0
        (2, 50, 2, True, 7),  # pid-reset after it: a clean failover
        (3, 50, 3, False, None),
        (4, 50, 3, True, 7),  # pid-reset: 3 is still open here
        (5, 50, 3, True, 1),  # COMMIT closes 3
        (6, 50, 3, True, 7),
        (7, 50, 3, True, 1),  # a second COMMIT of epoch 3, the reset at 6 between
        (8, 51, 0, False, None),
        (9, 51, 0, True, 7),  # only a pid-reset after 8: left open
    ]
    batches = spark.createDataFrame(
        [("t", 0, o, pid, epoch, True, control, ctype) for o, pid, epoch, control, ctype in rows],
        "topic string, partition int, base_offset long, producer_id long, producer_epoch int, "
        "is_transactional boolean, is_control boolean, control_type int",
    )
    got = {r["base_offset"]: r for r in transaction_closure(batches).collect()}
    assert {o: got[o]["closing_offset"] for o in (0, 3, 8)} == {0: 1, 3: 5, 8: None}
    assert {o: got[o]["closes_twice"] for o in (1, 2, 4, 5, 6, 7, 9)} == {
        1: False,
        2: False,
        4: False,
        5: False,
        6: False,
        7: True,
        9: False,
    }
