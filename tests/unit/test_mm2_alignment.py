"""The streaming aligner of mode mm2's records (native/src/align.rs, ``Aligner``) against
the row-per-record query it stands in for (audit/compare/mm2_records.py), on generated
copies: MirrorMaker 2's skips, replays after a restart, strangers written into the replica,
swapped copies, markers and aborted records on either side, expired prefixes, incremental
cuts with the source read again behind them.

The query is the reference: with a window as large as the partition the aligner must give
its answer exactly; with a small one it must give that answer or say it falls back, never
another answer."""

from __future__ import annotations

import array
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from audit.collect.records import native
from audit.compare.mm2_alignment import new_aligner
from audit.compare.mm2_records import ALIGNED_COLUMNS, RECORDS, ROW_BY_ROW, records_comparison
from tests.unit.test_mm2_record_matching import Case, Side, tables_of

# make venv builds and installs it: missing, these tests fail rather than skip.
module = native.load()

RANGES = next(s.sql for s in RECORDS.steps if s.name == "mm2_record_ranges")
ROWS = "SELECT * FROM {mm2_record_partitions} ORDER BY topic"


@st.composite
def copies(draw: st.DrawFn) -> Case:
    """A source partition and MirrorMaker 2's copy of it, with what can go wrong."""
    # ".": an offset without a record (a marker, an aborted record).
    source = "".join(draw(st.lists(st.sampled_from("abcdef."), min_size=4, max_size=36)))
    records = [(u, c) for u, c in enumerate(source) if c != "."]
    copy: list[str] = []
    pairs: list[tuple[int, int]] = []  # (source offset, replica offset) of each copy written
    i = 0
    while i < len(records):
        step = draw(st.sampled_from(["copy"] * 8 + ["skip", "replay", "stranger", "swap", "marker"]))
        if step == "skip":
            i += draw(st.integers(1, 4))
        elif step == "replay":  # a task restarted behind its last commit writes them again
            for u, c in records[max(0, i - draw(st.integers(1, 5))) : i]:
                pairs.append((u, len(copy)))
                copy.append(c)
        elif step == "stranger":  # another producer; its content may equal a source record's
            copy.append(draw(st.sampled_from("xyza")))
        elif step == "marker":
            copy.append(".")
        elif step == "swap" and i + 1 < len(records):
            for u, c in (records[i + 1], records[i]):
                pairs.append((u, len(copy)))
                copy.append(c)
            i += 2
        else:
            u, c = records[i]
            pairs.append((u, len(copy)))
            copy.append(c)
            i += 1
    replica = "".join(copy)
    syncs = sorted(set(draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=4)))) if pairs else []
    if draw(st.booleans()) and replica and source:  # a sync no copy explains
        syncs.append((draw(st.integers(0, len(source) - 1)), draw(st.integers(0, len(replica) - 1))))
    src_start = draw(st.integers(0, min(3, len(source))))  # retention removed a prefix
    dst_start = draw(st.integers(0, min(3, len(replica))))
    src = Side(source[src_start:], start=src_start)
    dst = Side(replica[dst_start:], start=dst_start)
    cut = None
    if draw(st.booleans()) and pairs:  # earlier runs verified through a pair
        u, d = draw(st.sampled_from(pairs))
        if u >= src_start and d >= dst_start:
            cut = (u, d, src_start)
            lookback = draw(st.integers(0, 5))
            src.read = (max(src_start, min(u + 1 - lookback, src.end)), src.end)
            dst.read = (min(d + 1, dst.end), dst.end)
    return Case(src, dst, syncs, cut=cut)


def _buffers(rows: list[dict[str, Any]]) -> tuple[bytes, bytes]:
    return (
        array.array("q", [r["o"] for r in rows]).tobytes(),
        array.array("q", [r["d"] for r in rows]).tobytes(),
    )


def _aligned(tables: Any, topic: str, rng: dict[str, Any], window: int, chunks: list[int]) -> dict[str, Any]:
    """The aligner over what the scan read of both sides, pushed in turns of the given
    sizes (how the reads interleave must not change the answer)."""
    assert module is not None
    aligner = new_aligner(module, rng, window)
    sides = [
        tables.rows(
            "SELECT r.offset AS o, r.digest AS d FROM {src_record_digests} r "
            f"WHERE r.topic = '{topic}' ORDER BY r.offset"
        ),
        tables.rows(
            "SELECT r.offset AS o, r.digest AS d FROM {dst_record_digests} r "
            f"WHERE r.topic = 'source.{topic}' ORDER BY r.offset"
        ),
    ]
    turn = 0
    while sides[0] or sides[1]:
        n = chunks[turn % len(chunks)]
        side = turn % 2
        taken, sides[side] = sides[side][:n], sides[side][n:]
        (aligner.push_src if side == 0 else aligner.push_dst)(*_buffers(taken))
        turn += 1
    return dict(aligner.finish())


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cases=st.lists(copies(), min_size=1, max_size=8),
    small=st.integers(1, 6),
    chunks=st.lists(st.integers(1, 7), min_size=1, max_size=4),
)
def test_the_aligner_answers_as_the_query_does(
    cases: list[Case], small: int, chunks: list[int], tmp_path_factory: pytest.TempPathFactory
) -> None:
    # Several partitions (topics t0, t1, ...) per run of the query: its cost is per run.
    tables = tables_of({f"t{i}": case for i, case in enumerate(cases)})
    ranges = {r["topic"]: r for r in tables.rows(RANGES)}
    out = tmp_path_factory.mktemp("mm2") / "mm2_record_partitions.parquet"
    # The comparison as the pipeline runs it: with a window as large as the partitions every
    # partition is aligned, with a small one some fall back to the pairs; both answer as
    # the reference, which matches every partition row by row.
    answers = {}
    for name, comparison in (("large", RECORDS), ("small", records_comparison(small)), ("rows", ROW_BY_ROW)):
        tables.compute(comparison, out)
        answers[name] = tables.rows(ROWS)
    matched = {name: [(r.pop("matching"), r["topic"]) for r in rows] for name, rows in answers.items()}
    assert answers["large"] == answers["rows"]
    assert answers["small"] == answers["rows"]
    for name, how in (("large", "aligned"), ("rows", "row by row: asked to (the reference path)")):
        assert all(m == (how if ranges[t]["end_u"] is not None else None) for m, t in matched[name])
    for m, _ in matched["small"]:
        event("the pipeline fell back" if m and m.startswith("row by row: ") else "the pipeline aligned")
    for want in answers["rows"]:
        rng = ranges[want["topic"]]
        if rng["end_u"] is None:  # no range: nothing for either to judge
            event("no range")
            continue
        expected = {k: want[k] for k in ALIGNED_COLUMNS}
        for finding in ("missing_records", "duplicate_records", "unexplained_records", "order_breaks"):
            if expected[finding]:
                event(finding)
        event("after a cut" if rng["cut_u"] is not None else "from the first copy")
        whole = _aligned(tables, want["topic"], rng, 1 << 12, chunks)
        assert whole.pop("fallback") is None
        assert whole == expected
        bounded = _aligned(tables, want["topic"], rng, small, chunks)
        if bounded.pop("fallback") is None:
            event("a small window answered")
            assert bounded == expected
        else:
            event("a small window fell back")


def _push(aligner: Any, side: str, offsets: list[int], digests: list[int]) -> None:
    getattr(aligner, f"push_{side}")(array.array("q", offsets).tobytes(), array.array("q", digests).tobytes())


def test_a_gap_longer_than_the_window_falls_back_and_says_why() -> None:
    assert module is not None
    src = list(range(100))
    dst = src[:10] + src[60:]  # fifty records skipped
    for window, falls_back in ((16, True), (64, False)):
        aligner = module.Aligner(99, 49, 0, 0, first_sync=(0, 0), window=window)
        _push(aligner, "src", src, [1000 + d for d in src])
        _push(aligner, "dst", list(range(len(dst))), [1000 + d for d in dst])
        got = aligner.finish()
        if falls_back:
            assert "longer than 16 records" in got["fallback"]
        else:
            assert got["fallback"] is None
            assert (got["missing_records"], got["first_missing_offset"]) == (50, 10)
            assert (got["clean_src_through"], got["clean_dst_through"]) == (9, 9)


def test_source_records_held_while_the_start_is_fixed_count_once_in_its_contents() -> None:
    # Window 2: the source's exact contents are its last 4 records. 100-103 lie before the
    # range (the first sync is at 4); 104 is held until the start is fixed, then taken.
    # Counted twice, 104 would push 102 out, and the replica's re-sent 102 would read as
    # "maybe the source's": a fallback. Counted once, it is a duplicate, as the query says.
    assert module is not None
    aligner = module.Aligner(5, 2, 0, 0, first_sync=(4, 0), window=2)
    _push(aligner, "src", list(range(6)), list(range(100, 106)))
    _push(aligner, "dst", [0, 1, 2], [104, 105, 102])
    got = aligner.finish()
    assert got["fallback"] is None
    assert (got["duplicate_records"], got["first_duplicate_offset"], got["unexplained_records"]) == (1, 2, 0)
    assert (got["compared_src_start"], got["clean_src_through"], got["clean_dst_through"]) == (4, 5, 1)


def test_the_findings_leave_as_rows() -> None:
    assert module is not None
    aligner = module.Aligner(5, 5, 0, 0, first_sync=(0, 0), window=8)
    _push(aligner, "src", [0, 1, 2, 3, 4, 5], [10, 11, 12, 13, 14, 15])
    _push(aligner, "dst", [0, 1, 2, 3, 4, 5], [10, 12, 11, 99, 14, 15])  # 13 lost, 99 a stranger
    got = aligner.finish()
    kinds, src, dst, digests = aligner.take_findings()
    rows = sorted(
        zip(
            kinds,
            array.array("q", src),
            array.array("q", dst),
            array.array("q", digests),
            strict=True,
        )
    )
    assert rows == [(1, 3, -1, 13), (3, -1, 3, 99), (4, 1, 2, 11)]
    assert (got["missing_records"], got["unexplained_records"], got["order_breaks"]) == (1, 1, 1)


def test_records_out_of_offset_order_are_refused(tmp_path: Path) -> None:
    assert module is not None
    aligner = module.Aligner(5, 5, 0, 0, first_sync=(0, 0))
    with pytest.raises(module.ReaderError, match="does not follow"):
        _push(aligner, "src", [3, 2], [1, 1])


def _digest_file(path: Path, rows: list[tuple[int, int]], topic: str = "t") -> str:
    """(partition, offset) rows as one row group of ``record_digests``, digest = offset."""
    import pyarrow.parquet as pq

    from audit.schemas import arrow_schema

    table = pa.Table.from_pylist(
        [{"topic": topic, "partition": p, "offset": o, "digest": o} for p, o in rows],
        schema=arrow_schema("record_digests"),
    )
    pq.write_table(table, path)
    return str(path)


def _offsets(batches: Any) -> list[int]:
    return [o for b in batches for o in b.column("offset").to_pylist()]


def test_a_task_reads_each_partitions_records_from_the_scans_files_in_offset_order(tmp_path: Path) -> None:
    from audit.collect.records.digests import DigestFile, _batch
    from audit.compare.partition_files import PartitionFiles

    # As the scan writes them: a row group per partition; and a file of another writer, both
    # partitions in one row group, which is read for each and filtered.
    out = DigestFile(str(tmp_path), "source", "scan")
    for partition, first in ((1, 0), (0, 0), (0, 10)):
        offsets = array.array("q", range(first, first + 5)).tobytes()
        for batch in _batch("t", partition, offsets, offsets):
            out.add(batch, ("t", partition))
    out.close()
    mixed = _digest_file(tmp_path / "z-other.parquet", [(0, 20), (1, 20), (0, 21)])
    files = PartitionFiles({"digests": sorted([out.path, mixed])})
    cols = ("offset", "digest")
    got = _offsets(files.batches("digests", "t", 0, 2, 20, cols))
    assert got == [2, 3, 4, 10, 11, 12, 13, 14, 20]  # within [2, 20], in order, partition 0 only
    assert _offsets(files.batches("digests", "t", 1, 0, 100, cols)) == [0, 1, 2, 3, 4, 20]
    assert _offsets(files.batches("digests", "other", 0, 0, 100, cols)) == []


def test_digests_out_of_offset_order_across_files_are_matched_row_by_row(tmp_path: Path) -> None:
    from audit.compare.mm2_alignment import WINDOW, _align_row
    from audit.compare.partition_files import PartitionFiles

    # An older scan split a partition over two files whose names sort against its offsets.
    files = [
        _digest_file(tmp_path / "a.parquet", [(0, 5), (0, 6)]),
        _digest_file(tmp_path / "b.parquet", [(0, 0)]),
    ]
    read = PartitionFiles({"src_record_digests": files, "dst_record_digests": files}).batches
    r = {
        "topic": "t",
        "remote_topic": "t",
        "partition": 0,
        "end_u": 6,
        "end_d": 6,
        "src_read_start": 0,
        "dst_read_start": 0,
        "first_sync_u": 0,
        "first_sync_d": 0,
        "cut_u": None,
        "cut_d": None,
        "scan_digests_kept": None,  # no scan matched it as it read
    }
    got = _align_row(r, read, WINDOW)
    assert got["fallback"].startswith("the digests are not in offset order"), got
