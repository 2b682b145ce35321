"""A partition's rows of a data table (a row per record: ``topic``, ``partition``,
``offset`` and values), read straight from the table's Parquet files in offset order by the
task that needs them: what a comparison step computed by code reads (``Step.run``;
``Tables.per_partition`` on Spark), without the rows passing through a shuffle.

Each file's footer is read once per task and its row groups indexed by the partition their
statistics name: the writers of these tables keep one partition per row group (mode mm2's
scan: collect/records/digests.py), so a partition's rows are read from its own row groups
alone, in file and row group order, however many partitions share the files. A row group
whose statistics name no single partition (another writer's) is read for every partition
it may hold, its rows filtered. The order is the files': a reader that needs offsets
ascending checks them (the aligner refuses records out of order).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

# Rows per batch handed out: a bound on what a reader holds besides the row group.
BATCH_ROWS = 1 << 14

RowGroups = list[tuple[int, int]]  # (file number, row group)


class PartitionFiles:
    """The files of some data tables, by the name the comparison reads them under."""

    def __init__(self, files: dict[str, list[str]]) -> None:
        self._files = files
        self._index: dict[str, tuple[dict[tuple[str, int], RowGroups], RowGroups]] = {}
        self._open: dict[int, Any] = {}

    def batches(
        self, name: str, topic: str, partition: int, lo: int, hi: int, columns: tuple[str, ...]
    ) -> Iterator[Any]:
        """``columns`` of the partition's rows of table ``name`` with offsets in [lo, hi],
        as Arrow record batches in file and row group order."""
        import pyarrow.compute as pc

        exact, mixed = self._indexed(name)
        groups = sorted(
            [(n, g, False) for n, g in exact.get((topic, partition), [])] + [(n, g, True) for n, g in mixed]
        )
        for number, group, filtered in groups:
            f = self._open[number]
            if not _may_hold(f, group, topic, partition, lo, hi):  # pruned once, by its statistics
                continue
            read = list(dict.fromkeys(("offset", *columns, *(("topic", "partition") if filtered else ()))))
            for batch in f.iter_batches(batch_size=BATCH_ROWS, row_groups=[group], columns=read):
                offsets = batch.column("offset")
                keep = pc.and_(pc.greater_equal(offsets, lo), pc.less_equal(offsets, hi))
                if filtered:
                    mine = pc.and_(
                        pc.equal(batch.column("topic"), topic), pc.equal(batch.column("partition"), partition)
                    )
                    keep = pc.and_(keep, mine)
                picked = batch.filter(keep)
                if picked.num_rows:
                    yield picked.select(list(columns))

    def _indexed(self, name: str) -> tuple[dict[tuple[str, int], RowGroups], RowGroups]:
        """(row groups by the one partition they hold, row groups of several or unknown)."""
        import pyarrow.parquet as pq

        if name not in self._index:
            exact: dict[tuple[str, int], RowGroups] = {}
            mixed: RowGroups = []
            for path in self._files[name]:
                number = len(self._open)
                f = self._open[number] = pq.ParquetFile(path)
                names = f.schema_arrow.names
                for g in range(f.metadata.num_row_groups):
                    meta = f.metadata.row_group(g)
                    if meta.num_rows == 0:
                        continue
                    topic = meta.column(names.index("topic")).statistics
                    partition = meta.column(names.index("partition")).statistics
                    one = (
                        topic is not None
                        and partition is not None
                        and topic.has_min_max
                        and partition.has_min_max
                        and topic.min == topic.max
                        and partition.min == partition.max
                    )
                    if one:
                        exact.setdefault((topic.min, partition.min), []).append((number, g))
                    else:
                        mixed.append((number, g))
            self._index[name] = (exact, mixed)
        return self._index[name]


def _may_hold(f: Any, group: int, topic: str, partition: int, lo: int, hi: int) -> bool:
    """Whether a row group's statistics leave room for the partition's rows in [lo, hi]
    (a column without statistics leaves room)."""
    meta = f.metadata.row_group(group)
    names = f.schema_arrow.names
    for column, low, high in (
        ("topic", topic, topic),
        ("partition", partition, partition),
        ("offset", lo, hi),
    ):
        stats = meta.column(names.index(column)).statistics
        if stats is None or not stats.has_min_max:
            continue
        if stats.max < low or stats.min > high:
            return False
    return True
