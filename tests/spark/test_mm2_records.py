"""MM2-DATA-1 to -4 through the whole pipeline on Spark: hand-made snapshots whose record
digests hold a skip, a stray record and a replay, judged by the suites, with the examples,
the unchecked partitions and the statuses a user reads in summary.json. The matching itself
is tested situation by situation in tests/unit/test_mm2_record_matching.py, and each
invariant failing, warning, passing and left unchecked in tests/unit/test_invariant_outcomes.py
and test_unknown_never_passes.py (in process, the fast tier): this runs in make test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from audit.config_file import parse_config
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


def _pair(root: Path, partitions: dict[int, tuple[str, str, list[tuple[int, int]]]]) -> tuple[Path, Path]:
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
            digests += [
                {"topic": topic, "partition": p, "offset": o, "digest": ord(c)}
                for o, c in enumerate(contents)
            ]
            ranges.append(
                {
                    "topic": topic,
                    "partition": p,
                    "start_offset": 0,
                    "end_offset": len(contents),
                    "read_to": len(contents),
                    "complete": True,
                    "isolation": "read_uncommitted",
                    "compacted": False,
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
    src, dst = _pair(tmp_path, {0: PARTITIONS[0], 3: PARTITIONS[3]})
    cfg = parse_config("mode: mm2\nmirror:\n  mm2:\n    exactly_once: true\n", env={})
    inv = audit_snapshots(src, dst, tmp_path / "spark", cfg, engine="spark").summary["invariants"]
    assert {i: inv[i]["status"] for i in DATA_IDS} == {
        **dict.fromkeys(DATA_IDS, "pass"),
        "MM2-DATA-3": "fail",
    }
    assert _examples(inv["MM2-DATA-3"], "fail", "partition", "first_duplicate_offset") == {(3, 7)}
    in_process = audit_snapshots(src, dst, tmp_path / "local", cfg, engine="local").summary
    assert {i: in_process["invariants"][i]["status"] for i in DATA_IDS} == dict.fromkeys(DATA_IDS, "skipped")
