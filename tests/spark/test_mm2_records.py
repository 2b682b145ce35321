"""MM2-DATA-1 to -4 through the whole pipeline on Spark: hand-made snapshots whose record
digests hold a skip, a stray record and a replay, judged by the suites, with the examples,
the unchecked partitions and the statuses a user reads in summary.json. The matching itself
is tested situation by situation in tests/unit/test_mm2_record_matching.py, and each
invariant failing, warning, passing and left unchecked in tests/unit/test_invariant_outcomes.py
and test_unknown_never_passes.py (in process, the fast tier): this runs in make test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from audit import api
from audit.config_file import parse_config
from audit.jobs import NIGHTLY
from audit.pipeline import audit_snapshots
from audit.schemas import arrow_schema, columns
from audit.snapshot import Mm2OffsetSyncRecord
from audit.validate.invariants import MM2_DATA
from tests.snapshots import part, write_pair

CFG = parse_config("mode: mm2\n", env={})
DATA_IDS = {inv.id for inv in MM2_DATA}

# Per partition of "orders": the source's contents and the replica's (a letter a record),
# and the offset syncs (upstream, downstream).
TEN = "abcdefghij"
PARTITIONS = {
    0: (TEN, TEN, [(0, 0), (9, 9)]),  # healthy
    1: (TEN, "abcdghij", [(0, 0), (9, 7)]),  # MM2-DATA-1: offsets 4 and 5 skipped
    2: (TEN, "abcdeXfghij", [(0, 0), (9, 10)]),  # MM2-DATA-2: a stray record at 5
    3: (TEN, "abcdefgefghij", [(0, 0), (4, 7), (9, 12)]),  # MM2-DATA-3: e, f, g again from 7
    4: (TEN, TEN, []),  # no sync yet: unchecked
}


def _write(directory: Path, table: str, rows: list[dict[str, Any]]) -> None:
    names = [c.name for c in columns(table)]
    data = {n: [r.get(n) for r in rows] for n in names}
    pq.write_table(pa.Table.from_pydict(data, schema=arrow_schema(table)), directory / f"{table}.parquet")


# What a scan says it read of a partition, where not all of it: (read_to, complete, detail)
# per (side index, partition); the digests it kept end at read_to.
Reads = dict[tuple[int, int], tuple[int, bool, str | None]]
REFUSED = "TopicAuthorizationFailedError: read refused"


def _pair(
    root: Path,
    partitions: dict[int, tuple[str, str, list[tuple[int, int]]]],
    reads: Reads | None = None,
    newest_first: frozenset[int] = frozenset(),
) -> tuple[Path, Path]:
    """The snapshots; ``newest_first``: partitions whose digests are written in descending
    offset order on both sides (a layout the aligner refuses: matched row by row)."""
    syncs = [
        Mm2OffsetSyncRecord("orders", p, up, down, 0, 10 * p + i, 1000)
        for p, (_, _, pairs) in partitions.items()
        for i, (up, down) in enumerate(pairs)
    ]
    src, dst = write_pair(
        root,
        [
            part("orders", p, high_watermark=len(s), last_stable_offset=len(s))
            for p, (s, _, _) in partitions.items()
        ],
        [
            part("source.orders", p, high_watermark=len(d), last_stable_offset=len(d))
            for p, (_, d, _) in partitions.items()
        ],
        src_syncs=syncs,
        dst_checkpoints=[],
    )
    for directory, topic, which in ((src, "orders", 0), (dst, "source.orders", 1)):
        digests, ranges = [], []
        for p, (src_contents, dst_contents, _) in partitions.items():
            contents = dst_contents if which else src_contents
            read_to, complete, detail = (reads or {}).get((which, p), (len(contents), True, None))
            kept = [
                {"topic": topic, "partition": p, "offset": o, "digest": ord(c)}
                for o, c in enumerate(contents)
                if o < read_to
            ]
            digests += kept[::-1] if p in newest_first else kept
            ranges.append(
                {
                    "topic": topic,
                    "partition": p,
                    "start_offset": 0,
                    "end_offset": len(contents),
                    "read_to": read_to,
                    "complete": complete,
                    "isolation": "read_uncommitted",
                    "compacted": False,
                    "detail": detail,
                }
            )
        _write(directory, "record_digests", digests)
        _write(directory, "record_digest_ranges", ranges)
    return src, dst


def _examples(inv: dict[str, Any], severity: str, *cols: str) -> set[tuple[Any, ...]]:
    return {
        tuple(e[c] for c in cols) for c in inv["checks"] if c["severity"] == severity for e in c["examples"]
    }


def test_skip_stray_and_replay_are_each_caught_and_an_unsynced_partition_is_unchecked(
    spark: Any, tmp_path: Path
) -> None:
    src, dst = _pair(tmp_path, PARTITIONS)
    summary = audit_snapshots(src, dst, tmp_path / "run", CFG, engine="spark").summary
    inv = summary["invariants"]
    assert inv["MM2-DATA-1"]["status"] == "fail"
    assert _examples(inv["MM2-DATA-1"], "fail", "partition", "missing_records", "first_missing_offset") == {
        (1, 2, 4)
    }
    assert inv["MM2-DATA-2"]["status"] == "fail"
    assert _examples(
        inv["MM2-DATA-2"], "fail", "partition", "unexplained_records", "first_unexplained_offset"
    ) == {(2, 1, 5)}
    # At-least-once delivery: duplicates warn unless the config says exactly once.
    assert inv["MM2-DATA-3"]["status"] == "warn"
    assert _examples(
        inv["MM2-DATA-3"], "warn", "partition", "duplicate_records", "first_duplicate_offset"
    ) == {(3, 3, 7)}
    # Order held everywhere it was judged, but partition 4 (no sync) was not judged: not pass.
    assert inv["MM2-DATA-4"]["status"] == "warn"
    for inv_id in DATA_IDS:
        (gap,) = inv[inv_id]["unchecked_gaps"]
        assert gap["missing"].startswith("an offset sync whose record and copy the scan read"), gap
        assert gap["first"] == [{"topic": "orders", "partition": "4"}], gap
    assert summary["verdict"] == "FAIL"


def test_a_clean_copy_passes_a_replay_fails_under_exactly_once_and_in_process_leaves_digests_out(
    spark: Any, tmp_path: Path
) -> None:
    """One Spark audit for both: partition 0 a clean copy, partition 3 a replay, MirrorMaker 2
    configured exactly once (duplicates then fail, and only where they are)."""
    # Partition 3's digests are written newest first: the aligner refuses them, and the
    # partition is matched row by row, to the same answer, and the run says so.
    src, dst = _pair(tmp_path, {0: PARTITIONS[0], 3: PARTITIONS[3]}, newest_first=frozenset({3}))
    cfg = parse_config("mode: mm2\nmirror:\n  mm2:\n    exactly_once: true\n", env={})
    run = audit_snapshots(src, dst, tmp_path / "spark", cfg, engine="spark")
    inv = run.summary["invariants"]
    assert {i: inv[i]["status"] for i in DATA_IDS} == {
        **dict.fromkeys(DATA_IDS, "pass"),
        "MM2-DATA-3": "fail",
    }
    assert _examples(inv["MM2-DATA-3"], "fail", "partition", "first_duplicate_offset") == {(3, 7)}
    matching = inv["MM2-DATA-1"]["matching"]
    assert (matching["aligned"], matching["row_by_row"]) == (1, 1), matching
    (fallback,) = matching["fallbacks"]
    assert (fallback["topic"], fallback["partition"]) == ("orders", 3)
    assert fallback["why"].startswith("the digests are not in offset order"), fallback
    page = (run.run_dir / "report" / "index.html").read_text()
    assert "1 partition(s) aligned as their records streamed, 1 matched row by row" in page
    in_process = audit_snapshots(src, dst, tmp_path / "local", cfg, engine="local").summary
    assert {i: in_process["invariants"][i]["status"] for i in DATA_IDS} == dict.fromkeys(DATA_IDS, "skipped")


def test_partitions_a_scan_did_not_read_are_unchecked_and_a_gated_readiness_is_no_go(
    spark: Any, tmp_path: Path
) -> None:
    """Issue 53, 1: partition 1's reads refused on both clusters (read_to at the start, not
    complete, no digests) and partition 2's ranges impossible (read_to below the start) with
    records missing on the replica: neither is judged as empty. MM2-DATA-1 to -4 leave them
    unchecked with the cause, the nightly is not PASS, and readiness gated on it is NO-GO."""
    partitions = {0: PARTITIONS[0], 1: PARTITIONS[0], 2: PARTITIONS[1]}
    reads: Reads = {
        (0, 1): (0, False, REFUSED),
        (1, 1): (0, False, REFUSED),
        (0, 2): (-1, False, REFUSED),
        (1, 2): (-1, False, REFUSED),
    }
    src, dst = _pair(tmp_path / "snaps", partitions, reads)
    root = tmp_path / "runs"
    nightly = audit_snapshots(src, dst, root / "nightly", CFG, job=NIGHTLY, engine="spark").summary
    inv = nightly["invariants"]
    for inv_id in DATA_IDS:
        assert inv[inv_id]["status"] == "warn", (inv_id, inv[inv_id]["status"])
        gaps = {g["missing"].split(" (")[0]: g["first"] for g in inv[inv_id]["unchecked_gaps"]}
        assert gaps == {
            "the whole of the partition on the source": [{"topic": "orders", "partition": "1"}],
            "a consistent account of what the records scan read": [{"topic": "orders", "partition": "2"}],
        }, inv[inv_id]["unchecked_gaps"]
    assert nightly["verdict"] != "PASS"
    assert nightly["coverage"]["complete"] is False

    gated = parse_config("mode: mm2\nreadiness:\n  nightly_data_max_age_hours: 24\n", env={})
    result = api.readiness(gated, source=src, destination=dst, out=root / "readiness")
    summary = json.loads(result.summary_path.read_text())
    assert summary["readiness"] == "NO-GO"
    assert (
        "cannot verify: MM2-DATA-1: 2 rows unchecked in the latest nightly run (nightly)"
        in (summary["readiness_reasons"])
    ), summary["readiness_reasons"]


def test_a_gap_the_nightly_scan_read_counts_its_records_and_readiness_after_it_too(
    spark: Any, tmp_path: Path
) -> None:
    """Issue 55: orders-0 is written by one transactional producer; its markers sit at 5 and
    9. MirrorMaker 2 passed over 5-14 (syncs (0, 0) then (15, 5)). The nightly's records
    scan read the gap: 8 records lost, the 2 markers not, and what it read is kept
    (mm2_source_reads, a row per run of records), so the readiness check after it, which
    scans nothing, counts the same from it."""
    from audit.jobs import READINESS
    from audit.snapshot import PartitionTraitRecord, write_table

    letters = "abcdefghijklmnopqrst"
    src, dst = _pair(tmp_path / "pair", {0: (letters, letters[:5] + letters[15:], [(0, 0), (15, 5)])})
    digests = pq.read_table(src / "record_digests.parquet").to_pylist()
    _write(src, "record_digests", [d for d in digests if d["offset"] not in (5, 9)])
    write_table(src, "partition_traits", (PartitionTraitRecord("orders", 0, False, 1),))
    runs = tmp_path / "runs"
    nightly = audit_snapshots(src, dst, runs / "nightly", CFG, engine="spark").summary
    (gap,) = nightly["invariants"]["MM2-SKIP-1"]["examples"]
    assert (gap["skipped_from_offset"], gap["upstream_offset"], gap["lost_records"], gap["gap_scanned"]) == (
        5,
        15,
        8,
        True,
    )
    assert nightly["run"]["lost_records"] == 8  # every run has the figure; readiness answers with it
    kept = pq.ParquetDataset(runs / "nightly" / "compare" / "mm2_source_reads.parquet").read().to_pylist()
    assert sorted((r["kind"], r["start_offset"], r["end_offset"]) for r in kept) == [
        ("read", 0, 20),
        ("records", 0, 5),
        ("records", 6, 9),
        ("records", 10, 20),
    ]
    ready = audit_snapshots(src, dst, runs / "ready", CFG, job=READINESS, engine="local").summary
    assert ready["lost_records"] == 8 and ready["readiness"] == "NO-GO"
