"""The files mode mm2's records scan writes from its tasks (audit/collect/records/digests.py,
``DigestFile``): whole or absent, a retried task's replacing its earlier attempt's, row
groups bounded, the table's declared schema even when empty."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from audit.collect.records import digests
from audit.collect.records.digests import DigestFile, HeldDigests, _batch, _file_name, keeps_digests
from audit.schemas import arrow_schema


def _records(n: int, first: int = 0, partition: int = 3) -> pa.RecordBatch:
    offsets = pa.array(range(first, first + n), pa.int64())
    values = pa.array([o * 31 for o in range(first, first + n)], pa.int64())
    (batch,) = _batch("orders", partition, *_buffers(offsets, values))
    return batch


def _buffers(*arrays: pa.Array) -> tuple[bytes, ...]:
    return tuple(a.buffers()[1].to_pybytes() for a in arrays)


def _rows(root: Path) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = (
        ds.dataset(str(root), format="parquet", partitioning="hive").to_table().to_pylist()
    )
    return rows


def test_a_file_is_in_place_once_closed_with_every_record_and_the_declared_schema(tmp_path: Path) -> None:
    out = DigestFile(str(tmp_path), "source", "t1")
    out.add(_records(3), ("orders", 3))
    out.add(_records(2, first=3), ("orders", 3))
    assert not Path(out.path).exists()  # not yet whole: nothing a reader could take for it
    out.close()
    assert out.records == 5
    table = pq.read_table(out.path)
    assert table.schema == arrow_schema("record_digests")
    assert table.column("offset").to_pylist() == [0, 1, 2, 3, 4]
    assert table.column("digest").to_pylist() == [o * 31 for o in range(5)]
    assert {r["partition"] for r in _rows(tmp_path)} == {3}
    assert [p.name for p in (tmp_path / "side=source").iterdir()] == ["part-t1.parquet"]  # no temporary left


def test_a_retried_task_replaces_its_earlier_attempts_file(tmp_path: Path) -> None:
    ranges = [("orders", 3, 0, 100), ("orders", 4, 0, 100)]
    name = _file_name("source", ranges)
    assert name == _file_name("source", list(reversed(ranges)))  # the same ranges, the same file
    assert name != _file_name("destination", ranges)
    first = DigestFile(str(tmp_path), "source", name)
    first.add(_records(4), ("orders", 3))
    first.close()
    again = DigestFile(str(tmp_path), "source", name)
    again.add(_records(4), ("orders", 3))
    again.close()
    assert len(_rows(tmp_path)) == 4  # once, not twice


def test_a_failed_attempt_leaves_nothing(tmp_path: Path) -> None:
    out = DigestFile(str(tmp_path), "source", "t2")
    out.add(_records(3), ("orders", 3))
    out.discard()
    assert list((tmp_path / "side=source").iterdir()) == []


def test_row_groups_hold_at_most_the_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digests, "ROW_GROUP_ROWS", 10)
    out = DigestFile(str(tmp_path), "source", "t3")
    for first in range(0, 35, 7):  # batches of 7, as responses come
        out.add(_records(7, first=first), ("orders", 3))
    out.close()
    meta = pq.ParquetFile(out.path).metadata
    sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert sum(sizes) == 35 and max(sizes) <= 14  # a group is written once it holds >= 10
    # Each row group keeps its offset statistics (what the offset bounds check reads).
    stats = meta.row_group(0).column(2).statistics
    assert stats is not None and (stats.min, stats.max) == (0, sizes[0] - 1)


def test_a_side_that_read_nothing_is_an_empty_table_of_the_declared_schema(tmp_path: Path) -> None:
    out = DigestFile(str(tmp_path), "destination", "t4")
    out.close()
    assert out.records == 0
    table = pq.read_table(out.path)
    assert table.num_rows == 0 and table.schema == arrow_schema("record_digests")


def test_a_row_group_holds_one_partitions_records(tmp_path: Path) -> None:
    # The aligner finds a partition's records by the row groups' statistics: one partition
    # per row group, however few records each holds.
    out = DigestFile(str(tmp_path), "source", "t5")
    for partition, n in ((0, 3), (1, 2), (2, 4)):
        out.add(_records(n, partition=partition), ("orders", partition))
    out.close()
    meta = pq.ParquetFile(out.path).metadata
    groups = [meta.row_group(i) for i in range(meta.num_row_groups)]
    partitions = [(g.column(1).statistics.min, g.column(1).statistics.max) for g in groups if g.num_rows]
    assert partitions == [(0, 0), (1, 1), (2, 2)]
    assert [g.num_rows for g in groups if g.num_rows] == [3, 2, 4]


def test_the_runs_of_offsets_are_written_beside_the_digests_in_their_own_schema(tmp_path: Path) -> None:
    from audit.collect.records.offset_runs import OffsetRuns

    runs = OffsetRuns("orders", 3)
    runs.add(pa.array([0, 1, 2, 4, 5], pa.int64()))  # a marker at 3
    out = DigestFile(str(tmp_path), "source", "t6", "record_digest_runs")
    for batch in runs.take(final=True):
        out.add(batch, ("orders", 3))
    out.close()
    table = pq.read_table(out.path)
    assert table.schema == arrow_schema("record_digest_runs")
    assert table.select(["start_offset", "end_offset"]).to_pylist() == [
        {"start_offset": 0, "end_offset": 3},
        {"start_offset": 4, "end_offset": 6},
    ]


def _held(root: Path, partition: int, n: int) -> HeldDigests:
    held = HeldDigests(str(root), "source", [("orders", partition, 0, n)])
    for first in range(0, n, 3):
        offsets = pa.array(range(first, min(n, first + 3)), pa.int64())
        held.add(*_buffers(offsets, pa.array([o * 31 for o in offsets.to_pylist()], pa.int64())))
    return held


def test_held_digests_are_kept_whole_or_leave_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A partition's digests wait until the scan knows whether the comparison may need them:
    # held in memory up to a row group, in a file of the partition's own past it.
    monkeypatch.setattr(digests, "ROW_GROUP_ROWS", 4)
    out = DigestFile(str(tmp_path), "source", "task")
    small, large, dropped = _held(tmp_path, 0, 3), _held(tmp_path, 1, 10), _held(tmp_path, 2, 10)
    assert small.spilled is None and large.spilled is not None and dropped.spilled is not None
    small.keep(out)
    large.keep(out)
    dropped.drop()
    out.close()
    assert large.spilled is not None and large.spilled.path != out.path
    files = sorted(p.name for p in (tmp_path / "side=source").iterdir())
    assert files == sorted(["part-task.parquet", Path(large.spilled.path).name])  # nothing of the dropped one
    rows = _rows(tmp_path)
    kept = sorted((r["partition"], r["offset"], r["digest"]) for r in rows)
    assert kept == [(0, o, o * 31) for o in range(3)] + [(1, o, o * 31) for o in range(10)]


def test_digests_are_kept_where_the_comparison_may_need_them() -> None:
    whole = [("source", "t", 0, 0, 10, 10, None), ("destination", "source.t", 0, 0, 10, 10, None)]
    stopped = [whole[0], ("destination", "source.t", 0, 0, 10, 4, "fetch at offset 4: refused")]
    aligned = {"fallback": None, "missing_records": 0}
    assert keeps_digests(False, whole, aligned) is False
    assert keeps_digests(False, stopped, aligned) is True  # the comparison's range may differ
    assert keeps_digests(False, whole, {"fallback": "a replay longer than the window"}) is True
    assert keeps_digests(False, whole, {}) is False  # no range to match: nothing needs them
    assert keeps_digests(True, whole, aligned) is True  # records.mm2_keep_digests
