"""Record-level comparison (CM-DATA-1, and CM-TXN-2 and CM-EPOCH-4 at record level) on
hand-made ``record_chunks`` (Spark).

Each side's chunks are made the way the collector makes them: the records of a partition's
common range fed to ``RangeChunker`` in offset order, each chunk's ``row()`` with the scan's
isolation and the topic's ``compacted`` flag added (records.py ``_scan_task``). Chunks
whose checksum or gaps differ are narrowed with the collector's ``first_divergence`` into
the destination's ``record_divergences`` (``_narrow_task``). The live clusters' version of
these faults is tests/integration/test_records_live.py; here every record is known, so each
fault must be reported at exactly its chunk.

The audit tests share two Spark audits of one pair (a whole audit takes 10-40 s): the pair
holds every case (``CASES``: a healthy mirror, chunk faults, differing chunks left
unnarrowed, a leader change moved to another offset), each case's topics named apart by
the case (``healthy.orders``, ``faulty.orders``...). One audit is in the default
configuration, the other under ``mirror.preserves_batch_epochs`` (a setting of the whole
run). A test reads its case's share of a run (``tests.cases.Case``: the validator's own
fold over its topics' rows of the run's comparison tables, the summary's details filtered
to them) and its rows of ``record_chunk_diffs``, by the topic names the case gave them
(``_case``). Record chunks not collected on a side, or collected but empty, are properties
of the whole pair: that test audits three pairs of its own, each validated by the suites
of the record invariants only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from audit.collect.records.chunks import RangeChunker
from audit.collect.records.narrow import describe_record, first_divergence
from audit.config import AuditConfig
from audit.config_file import parse_config
from audit.pipeline import audit_snapshots
from audit.profiles import profile_of
from audit.schemas import arrow_schema
from audit.validate.run import mode_suites
from tests.cases import Audit, Case, audit_pair
from tests.snapshots import T0_MS, part, write_pair

# These run the whole audit on Spark (make test). The fast tier checks each record-level
# check failing, passing and never passing on an unknown input on its one Spark compare,
# without an audit: tests/spark/test_data_level_outcomes.py.

SIZE = 10  # records.chunk_records
RECORD_INVARIANTS = ("CM-DATA-1", "CM-TXN-2", "CM-EPOCH-4")
Key = tuple[str, int, int]  # topic, partition, chunk_start


@dataclass(frozen=True)
class Rec:
    """One record as a consumer returns it (offset, timestamp, key, value, headers, epoch)."""

    offset: int
    key: bytes | None
    value: bytes | None
    epoch: int = 3
    headers: tuple[tuple[str, bytes | None], ...] = ()

    # The part of confluent_kafka.Message the narrowing reads.
    def timestamp(self) -> tuple[int, int]:
        return (1, T0_MS - 100_000 + self.offset)

    def leader_epoch(self) -> int:
        return self.epoch


def log(end: int, start: int = 0, gaps: tuple[int, ...] = (), epoch: int = 3) -> list[Rec]:
    """Records at every offset of [start, end) except ``gaps`` (transaction markers,
    compacted or aborted records: offsets a consumer never returns)."""
    return [
        Rec(o, f"k{o % 7}".encode(), f"v{o}".encode(), epoch, (("trace", f"t{o}".encode()),))
        for o in range(start, end)
        if o not in gaps
    ]


@dataclass(frozen=True)
class Partition:
    """One partition's common range [start, end) as each side holds it."""

    topic: str
    partition: int
    src: list[Rec]
    dst: list[Rec]
    start: int = 0
    end: int = 30
    compacted: bool = False
    dle: int = 5  # the destination partition's leader epoch
    src_failed: tuple[int, ...] = ()  # chunk starts whose read failed on the source
    dst_failed: tuple[int, ...] = ()
    narrowed: bool = True  # False: past records.narrow_max_chunks, no divergence row


def range_rows(p: Partition, failed: tuple[int, ...]) -> list[dict[str, Any]]:
    """One side's record_chunk_ranges, as the collector writes them with ``split_records``
    equal to the chunk size: a range per chunk, read whole unless its read failed (then
    read to its start, no chunk kept)."""
    rows = []
    for aligned in range(p.start - p.start % SIZE, p.end, SIZE):
        lo, hi = max(aligned, p.start), min(aligned + SIZE, p.end)
        bad = lo in failed
        rows.append(
            {
                "topic": p.topic,
                "partition": p.partition,
                "start_offset": lo,
                "end_offset": hi,
                "read_to": lo if bad else hi,
                "complete": not bad,
                "isolation": "read_uncommitted",
                "compacted": p.compacted,
                "detail": f"no progress for 120s at the range ending at {hi}" if bad else None,
            }
        )
    return rows


def chunk_rows(p: Partition, records: list[Rec], failed: tuple[int, ...]) -> dict[int, dict[str, Any]]:
    """One side's chunk rows by chunk start, as ``_scan_task`` writes them."""
    chunker = RangeChunker(p.topic, p.partition, p.start, p.end, SIZE)
    for r in records:
        chunker.add(r.offset, r.timestamp()[1], r.key, r.value, list(r.headers), r.epoch)
    rows = {
        c.start: {**c.row(), "isolation": "read_uncommitted", "compacted": p.compacted}
        for c in chunker.finish()
    }
    return {start: row for start, row in rows.items() if start not in failed}


class _Msg:
    def __init__(self, r: Rec) -> None:
        self.r = r

    def offset(self) -> int:
        return self.r.offset

    def key(self) -> bytes | None:
        return self.r.key

    def value(self) -> bytes | None:
        return self.r.value

    def timestamp(self) -> tuple[int, int]:
        return self.r.timestamp()

    def headers(self) -> list[tuple[str, bytes | None]] | None:
        return list(self.r.headers) or None


def divergence(p: Partition, lo: int, hi: int, failed: bool) -> dict[str, Any]:
    """The narrowing of one mismatching chunk (``_narrow_task``): both sides re-read and
    streamed to the first difference; a read that fails again is ``not_narrowed``."""

    def stream(records: list[Rec]) -> Iterator[Any]:
        return (_Msg(r) for r in records if lo <= r.offset < hi)

    row: dict[str, Any] = {"topic": p.topic, "partition": p.partition, "chunk_start": lo, "chunk_end": hi}
    if failed:
        return {**row, "offset": None, "kind": "not_narrowed", "detail": "ClusterError: no progress"}
    offset, kind, s, d = first_divergence(stream(p.src), stream(p.dst), p.compacted)
    described = offset is not None
    return {
        **row,
        "offset": offset,
        "kind": kind,
        "source_record": describe_record(s) if described else None,
        "destination_record": describe_record(d) if described else None,
    }


def _write(directory: Path, table: str, rows: list[dict[str, Any]]) -> None:
    pq.write_table(pa.Table.from_pylist(rows, schema=arrow_schema(table)), directory / f"{table}.parquet")


def write_records(
    root: Path, parts: list[Partition], sides: tuple[str, ...] = ("source", "destination")
) -> tuple[Path, Path]:
    """A snapshot pair of these partitions with each listed side's record chunks, and the
    destination's divergences of every chunk whose checksum or gaps differ."""
    src, dst = write_pair(
        root,
        [part(p.topic, p.partition, log_start_offset=p.start, high_watermark=p.end) for p in parts],
        [
            part(p.topic, p.partition, log_start_offset=p.start, high_watermark=p.end, leader_epoch=p.dle)
            for p in parts
        ],
    )
    src_rows: list[dict[str, Any]] = []
    dst_rows: list[dict[str, Any]] = []
    divergences: list[dict[str, Any]] = []
    for p in parts:
        s, d = chunk_rows(p, p.src, p.src_failed), chunk_rows(p, p.dst, p.dst_failed)
        src_rows += s.values()
        dst_rows += d.values()
        for lo in sorted(s.keys() | d.keys()):
            a, b = s.get(lo), d.get(lo)
            if (
                a is None
                or b is None
                or (a["checksum"], a["gaps_checksum"]) != (b["checksum"], b["gaps_checksum"])
            ):
                hi = (a or b or {})["chunk_end"]
                if p.narrowed:
                    divergences.append(divergence(p, lo, hi, failed=a is None or b is None))
    # The ranges whose read failed, as the collector notes them in both manifests.
    issues = [
        {
            "topic": p.topic,
            "partition": p.partition,
            "file": None,
            "position": start,
            "kind": "fetch_error",
            "severity": "error",
            "detail": f"{side}: no progress for 120s at the range ending at {start + SIZE}",
        }
        for p in parts
        for side, failed in (("source", p.src_failed), ("destination", p.dst_failed))
        for start in failed
    ]
    if issues:
        manifest = json.loads((dst / "manifest.json").read_text())
        manifest.setdefault("notes", {})["records"] = {"issues": issues, "unreadable_ranges": len(issues)}
        (dst / "manifest.json").write_text(json.dumps(manifest))
    if "source" in sides:
        _write(src, "record_chunks", src_rows)
        _write(src, "record_chunk_ranges", [r for p in parts for r in range_rows(p, p.src_failed)])
    if "destination" in sides:
        _write(dst, "record_chunks", dst_rows)
        _write(dst, "record_chunk_ranges", [r for p in parts for r in range_rows(p, p.dst_failed)])
        _write(dst, "record_divergences", divergences)
    return src, dst


def _check(result: dict[str, Any], words: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [c for c in result["checks"] if words in c["description"]]
    assert len(found) == 1, (words, result["checks"])
    return found[0]


# ------------------------------------------------------------------ the cases of one pair


def _healthy() -> list[Partition]:
    """A mirror that is right everywhere, with what it may legitimately differ in."""
    # A leader change at offset 15 on the source, its epoch kept by the mirror.
    markers = [replace(r, epoch=4) if r.offset >= 15 else r for r in log(30, gaps=(5, 17))]
    # Compacted: the source's cleaner has not run; the destination's removed offsets 0-2,
    # whose keys recur at 7-9 (k0, k1, k2), records of an older leader epoch.
    compactable = [replace(r, epoch=2) if r.offset < 3 else r for r in log(30)]
    return [
        # Transaction markers at the same offsets; the highest destination record epoch
        # equals the DLE.
        Partition("orders", 0, markers, markers, dle=4),
        # A common range from 12 (retention): only it is chunked, the first chunk clipped
        # to [12, 20). Record epochs below the DLE.
        Partition("orders", 1, log(30, 12, epoch=2), log(30, 12, epoch=2), start=12),
        Partition("compacted", 0, compactable, compactable[3:], compacted=True),
        # A mirror that writes its own leader epochs (as the sandbox emulator does): records
        # equal, epochs not.
        Partition("epochs", 0, log(10, epoch=3), log(10, epoch=2), end=10),
    ]


def _faulty() -> list[Partition]:
    changed = [replace(r, value=b"changed") if r.offset == 13 else r for r in log(30)]
    compacted_src = log(30)
    compacted_dst = [
        replace(r, value=b"other") if r.offset == 24 else r for r in compacted_src if r.offset != 21
    ]
    return [
        Partition("orders", 0, log(30), changed),
        Partition("orders", 1, log(30), log(30), dst_failed=(20,)),
        Partition("orders", 2, log(30), log(30), src_failed=(0,)),
        # The source's marker at 5 is on the destination too, but the destination also has
        # no record at 6 (an aborted record the source committed).
        Partition("txn", 0, log(10, gaps=(5,)), log(10, gaps=(5, 6)), end=10),
        # The records are the source's, with the source's epoch 9; the destination's
        # partition is at leader epoch 8.
        Partition("epoch", 0, log(10, epoch=9), log(10, epoch=9), end=10, dle=8),
        # Compacted, but a record both sides hold differs: not the cleaners' doing.
        Partition("compacted", 0, compacted_src, compacted_dst, compacted=True),
    ]


def _unnarrowed() -> list[Partition]:
    """Differing chunks past records.narrow_max_chunks (no divergence row): one of a
    compacted topic whose destination's cleaner removed 0-2, one of a plain topic whose
    record at 13 changed."""
    compactable = log(30)
    changed = [replace(r, value=b"changed") if r.offset == 13 else r for r in log(30)]
    return [
        Partition("compacted", 0, compactable, compactable[3:], compacted=True, narrowed=False),
        Partition("plain", 0, log(30), changed, narrowed=False),
    ]


def _epoch_runs() -> list[Partition]:
    """A leader change at 5 on the source that the mirror placed at 7 ("moved"), and one it
    kept at 5 ("kept")."""
    src = [replace(r, epoch=4) if r.offset >= 5 else r for r in log(10)]
    dst = [replace(r, epoch=4) if r.offset >= 7 else r for r in log(10)]
    return [Partition("moved", 0, src, dst, end=10, dle=4), Partition("kept", 0, src, src, end=10, dle=4)]


HEALTHY = "healthy"
FAULTY = "faulty"
UNNARROWED = "unnarrowed"
EPOCH_RUNS = "epoch-runs"
# Each case's partitions, their topics named apart in the pair by the case: "orders" of the
# healthy case is "healthy.orders" there.
CASES: dict[str, Callable[[], list[Partition]]] = {
    HEALTHY: _healthy,
    FAULTY: _faulty,
    UNNARROWED: _unnarrowed,
    EPOCH_RUNS: _epoch_runs,
}
PROMISED = parse_config("mirror:\n  preserves_batch_epochs: true\n", env={})


def _named(case: str, parts: list[Partition]) -> list[Partition]:
    return [replace(p, topic=f"{case}.{p.topic}") for p in parts]


def _unnamed(topic: str) -> str:
    """A topic's name in its case ("healthy.orders": "orders")."""
    return topic.split(".", 1)[1]


def _suites(invariants: tuple[str, ...]) -> tuple[str, ...]:
    """The mode's suite files that hold a check of ``invariants`` (every check a case's
    result is folded from)."""
    cfg = AuditConfig()
    return tuple(
        suite.path.name
        for suite in mode_suites(cfg, profile_of(cfg).suite_patterns)
        if any(e["meta"]["invariant"] in invariants for e in suite.raw["expectations"])
    )


SUITES = _suites(RECORD_INVARIANTS)


@dataclass(frozen=True)
class Pair:
    """One snapshot pair of every case's partitions (``write_records``)."""

    root: Path
    src: Path
    dst: Path


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Pair:
    root = tmp_path_factory.mktemp("record-compare")
    src, dst = write_records(
        root / "pair", [p for case, parts in CASES.items() for p in _named(case, parts())]
    )
    return Pair(root, src, dst)


@pytest.fixture(scope="module")
def audited(spark: Any, pair: Pair) -> Audit:
    """The audit of every case in the default configuration."""
    return audit_pair(spark, pair.src, pair.dst, pair.root / "run", SUITES)


@pytest.fixture(scope="module")
def promised(spark: Any, pair: Pair) -> Audit:
    """The audit of the same pair under ``mirror.preserves_batch_epochs`` (a setting of the
    whole run): record epochs are compared."""
    return audit_pair(spark, pair.src, pair.dst, pair.root / "promised", SUITES, PROMISED)


@dataclass(frozen=True)
class Chunks:
    """One case's share of an audit: its invariants' results (``Case.invariant``) and its
    rows of ``record_chunk_diffs`` by (topic, partition, chunk_start), its topics by the
    names the case gave them."""

    case: Case
    rows: dict[Key, dict[str, Any]]

    def invariant(self, inv_id: str) -> dict[str, Any]:
        return self.case.invariant(inv_id)


def _case(audit: Audit, case: str) -> Chunks:
    topics = tuple(sorted({p.topic for p in _named(case, CASES[case]())}))
    rows = {
        (_unnamed(r["topic"]), r["partition"], r["chunk_start"]): r
        for r in audit.rows("record_chunk_diffs")
        if r["topic"] in topics
    }
    return Chunks(audit.case(*topics), rows)


def _examples(result: dict[str, Any]) -> set[Key]:
    return {(_unnamed(e["topic"]), e["partition"], e["chunk_start"]) for e in result["examples"]}


def test_identical_chunks_and_a_compacted_topic_pass_every_record_invariant(audited: Audit) -> None:
    case = _case(audited, HEALTHY)
    inv = {inv_id: case.invariant(inv_id) for inv_id in RECORD_INVARIANTS}
    rows = case.rows
    assert {k: r["chunk_status"] for k, r in rows.items()} == {
        ("orders", 0, 0): "same",
        ("orders", 0, 10): "same",
        ("orders", 0, 20): "same",
        ("orders", 1, 12): "same",
        ("orders", 1, 20): "same",
        ("compacted", 0, 0): "tolerated",
        ("compacted", 0, 10): "same",
        ("compacted", 0, 20): "same",
        ("epochs", 0, 0): "same",
    }
    assert rows[("orders", 1, 12)]["chunk_end"] == 20
    tolerated = rows[("compacted", 0, 0)]
    assert (tolerated["checksums_equal"], tolerated["divergence_kind"]) == (False, "compaction_only")
    assert tolerated["gaps_equal"] is None  # compacted: gaps not compared
    for inv_id in RECORD_INVARIANTS:
        assert inv[inv_id]["status"] == "pass", (inv_id, inv[inv_id])
    # The counts and the unreadable ranges are the case's (its topics' rows; the run's
    # summary counts every case's).
    assert inv["CM-DATA-1"]["evaluated"] == 9
    assert inv["CM-DATA-1"]["unreadable_ranges"] == {"total": 0, "first": []}
    # The markers' gaps compared on the 6 chunks of topics that are not compacted.
    assert _check(inv["CM-TXN-2"], "record-level")["evaluated"] == 6
    assert [rows[("orders", 0, s)]["src_gap_count"] for s in (0, 10, 20)] == [1, 1, 0]
    assert _check(inv["CM-EPOCH-4"], "never exceed")["evaluated"] == 9
    assert rows[("orders", 0, 20)]["dst_max_record_epoch"] == rows[("orders", 0, 20)]["dst_leader_epoch"] == 4
    # Epochs differ on "epochs" and on the compacted chunk, but the mirror does not promise
    # to keep them: not asserted.
    assert rows[("epochs", 0, 0)]["epochs_equal"] is False
    assert _check(inv["CM-EPOCH-4"], "equal the source")["evaluated"] == 0


def test_record_epochs_are_compared_only_where_the_mirror_preserves_them(promised: Audit) -> None:
    case = _case(promised, HEALTHY)
    epoch4 = case.invariant("CM-EPOCH-4")
    assert epoch4["status"] == "fail"
    unequal = _check(epoch4, "equal the source")
    # The compacted chunk holds other records on each side (min epoch 2 against 3), so
    # its per-chunk epochs say nothing about the epochs at any one offset.
    assert _examples(unequal) == {("epochs", 0, 0)}
    # The case's counts (its topics' rows).
    assert unequal["unexpected"] == 1
    assert unequal["evaluated"] == 8
    rows = case.rows
    assert rows[("compacted", 0, 0)]["epochs_must_match"] is False
    assert rows[("compacted", 0, 10)]["epochs_must_match"] is True
    assert _check(epoch4, "never exceed")["success"] is True
    assert case.invariant("CM-DATA-1")["status"] == "pass"


def test_each_chunk_fault_is_reported_at_its_chunk(audited: Audit) -> None:
    case = _case(audited, FAULTY)
    inv = {inv_id: case.invariant(inv_id) for inv_id in RECORD_INVARIANTS}
    rows = case.rows
    bad = {k: r["chunk_status"] for k, r in rows.items() if r["chunk_status"] != "same"}
    # A range whose read failed on one side is neither judged nor called missing there:
    # one row for the range, its status unknown, why the read failed beside it.
    unread = {k for k, r in rows.items() if r["chunk_status"] is None}
    assert unread == {("orders", 1, 20), ("orders", 2, 0)}
    assert (rows[("orders", 1, 20)]["src_read_whole"], rows[("orders", 1, 20)]["dst_read_whole"]) == (
        True,
        False,
    )
    assert "no progress for 120s" in rows[("orders", 1, 20)]["dst_read_detail"]
    assert (rows[("orders", 2, 0)]["src_read_whole"], rows[("orders", 2, 0)]["dst_read_whole"]) == (
        False,
        True,
    )
    bad = {k: r["chunk_status"] for k, r in rows.items() if r["chunk_status"] not in ("same", None)}
    assert bad == {
        ("orders", 0, 10): "differs",
        ("txn", 0, 0): "differs",
        ("compacted", 0, 20): "differs",
    }
    assert len(rows) == 3 * 3 + 1 + 1 + 3  # the case's chunks, an unread range in place of each failed one

    data1 = inv["CM-DATA-1"]
    assert data1["status"] == "fail"
    assert data1["violations"] == 3  # the case's (its topics' rows)
    assert _examples(data1) == set(bad)
    assert data1["unchecked"] == 2
    assert {g["missing"].split(" (")[0] for g in data1["unchecked_gaps"]} == {
        "the records of the range on the source",
        "the records of the range on the destination",
    }
    payload = next(e for e in data1["examples"] if (_unnamed(e["topic"]), e["partition"]) == ("orders", 0))
    assert (payload["divergence_offset"], payload["divergence_kind"]) == (13, "payload_differs")
    assert "changed" in payload["destination_record"] and "changed" not in payload["source_record"]
    compacted = rows[("compacted", 0, 20)]
    assert (compacted["divergence_offset"], compacted["divergence_kind"]) == (24, "payload_differs")
    # The summary's first divergences, the case's partitions' (Case filters the run's list).
    (first,) = [
        d for d in data1["first_divergence"] if (_unnamed(d["topic"]), d["partition"]) == ("orders", 0)
    ]
    assert (first["chunk_start"], first["offset"], first["kind"]) == (10, 13, "payload_differs")
    # The two chunks missing on one side were reads that failed: said so, with where (the
    # case's unreadable ranges: the run's filtered to its topics).
    unreadable = data1["unreadable_ranges"]
    assert unreadable["total"] == 2
    assert {(_unnamed(u["topic"]), u["partition"], u["offset"]) for u in unreadable["first"]} == {
        ("orders", 1, 20),
        ("orders", 2, 0),
    }
    # The report counts the run's unreadable ranges: every one of them is this case's (no
    # other case's read failed), so its count is the case's, and it lists the case's.
    assert audited.summary["invariants"]["CM-DATA-1"]["unreadable_ranges"]["total"] == unreadable["total"]
    report = (audited.run / "report" / "index.html").read_text()
    assert "2 range(s) could not be read" in report
    for u in unreadable["first"]:
        assert f'<td>{u["topic"]}-{u["partition"]}</td><td class="num">{u["offset"]}</td>' in report

    txn2 = inv["CM-TXN-2"]
    assert txn2["status"] == "fail"
    assert _examples(txn2) == {("txn", 0, 0)}
    assert rows[("txn", 0, 0)]["divergence_kind"] == "gap_pattern_differs"
    assert rows[("txn", 0, 0)]["divergence_offset"] == 6
    assert rows[("orders", 0, 10)]["gaps_equal"] is True  # a payload, not a gap, differs

    epoch4 = inv["CM-EPOCH-4"]
    assert epoch4["status"] == "fail"
    assert _examples(epoch4) == {("epoch", 0, 0)}
    assert (epoch4["examples"][0]["dst_max_record_epoch"], epoch4["examples"][0]["dst_leader_epoch"]) == (
        9,
        8,
    )
    assert rows[("epoch", 0, 0)]["chunk_status"] == "same"  # epochs are not in the checksum


def test_without_record_chunks_of_both_sides_the_record_invariants_are_skipped(
    spark: Any, tmp_path: Path
) -> None:
    # Audits of their own: record chunks not collected on a side, or collected but empty,
    # are properties of the whole pair. Each validates the suites that hold a check of the
    # record invariants (``SUITES``; the others judge other invariants only, and took about
    # half of these audits' time): their results are those a run of every suite gives.
    cfg = AuditConfig()
    suites = mode_suites(cfg, SUITES)

    def audit(src: Path, dst: Path, run: Path) -> dict[str, Any]:
        summary = audit_snapshots(src, dst, run, cfg, engine="spark", suites=suites).summary
        return dict(summary["invariants"])

    for name, sides in (("none", ()), ("source-only", ("source",))):
        src, dst = write_records(tmp_path / name, _faulty(), sides)
        inv = audit(src, dst, tmp_path / f"run-{name}")
        assert not (tmp_path / f"run-{name}" / "compare" / "record_chunk_diffs.parquet").exists()
        for inv_id in RECORD_INVARIANTS:
            assert inv[inv_id]["status"] == "skipped", (name, inv_id, inv[inv_id])
            assert inv[inv_id]["reason"].startswith("not collected"), inv[inv_id]
    # Collected, but the scan planned nothing (no common range): nothing checked, no pass.
    src, dst = write_pair(tmp_path / "empty", [part()], [part()])
    for directory in (src, dst):
        _write(directory, "record_chunks", [])
        _write(directory, "record_chunk_ranges", [])
    _write(dst, "record_divergences", [])
    inv = audit(src, dst, tmp_path / "run-empty")
    for inv_id in RECORD_INVARIANTS:
        assert inv[inv_id]["status"] == "skipped", (inv_id, inv[inv_id])


def test_a_differing_chunk_left_unnarrowed_is_unverified_on_a_compacted_topic_only(audited: Audit) -> None:
    """Past records.narrow_max_chunks a differing chunk has no divergence row: on a
    compacted topic the difference may be only the cleaners', so it is unverified (not a
    failure, not verified); anywhere else a different checksum is a failure regardless."""
    case = _case(audited, UNNARROWED)
    rows = case.rows
    assert rows[("compacted", 0, 0)]["chunk_status"] == "unverified"
    assert rows[("compacted", 0, 0)]["divergence_kind"] is None
    assert rows[("plain", 0, 10)]["chunk_status"] == "differs"
    data1 = case.invariant("CM-DATA-1")
    assert data1["status"] == "fail"
    assert _examples(data1) == {("plain", 0, 10)}
    # The summary's first divergences, the case's partitions' (Case filters the run's list).
    assert {(_unnamed(d["topic"]), d["chunk_start"]) for d in data1["first_divergence"]} == {("plain", 10)}


def test_epochs_are_compared_offset_by_offset_not_by_their_extremes(promised: Audit) -> None:
    """A leader change the mirror placed at another offset: both chunks span epochs 3 to 4,
    so their min and max agree, but the epoch runs do not."""
    case = _case(promised, EPOCH_RUNS)
    rows = case.rows
    moved = rows[("moved", 0, 0)]
    assert (moved["src_min_record_epoch"], moved["src_max_record_epoch"]) == (3, 4)
    assert (moved["dst_min_record_epoch"], moved["dst_max_record_epoch"]) == (3, 4)
    assert [r["start"] for r in moved["dst_epoch_runs"]] == [0, 7]
    assert moved["epochs_equal"] is False and rows[("kept", 0, 0)]["epochs_equal"] is True
    unequal = _check(case.invariant("CM-EPOCH-4"), "equal the source")
    assert _examples(unequal) == {("moved", 0, 0)}
    assert case.invariant("CM-DATA-1")["status"] == "pass"  # epochs are not in the checksum
