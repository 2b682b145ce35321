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
from dataclasses import dataclass
from typing import Any

# Rows per batch handed out: a bound on what a reader holds besides the row group.
BATCH_ROWS = 1 << 14


@dataclass(frozen=True)
class Group:
    """A row group and what its statistics say: (min, max) of each key column, None where a
    column has none. Read once per task from the footers, so pruning costs a comparison."""

    number: int  # the file's, in the order opened
    index: int
    topic: tuple[Any, Any] | None
    partition: tuple[Any, Any] | None
    offset: tuple[Any, Any] | None

    def may_hold(self, topic: str, partition: int, lo: int, hi: int) -> bool:
        """Whether the statistics leave room for the partition's rows in [lo, hi]."""
        return all(
            span is None or not (span[1] < low or span[0] > high)
            for span, low, high in (
                (self.topic, topic, topic),
                (self.partition, partition, partition),
                (self.offset, lo, hi),
            )
        )

    def within(self, lo: int, hi: int) -> bool:
        """Whether every offset lies in [lo, hi]: its rows need no filter by offset."""
        return self.offset is not None and lo <= self.offset[0] and self.offset[1] <= hi

    def one_partition(self) -> tuple[str, int] | None:
        """The one partition the statistics name, if they name exactly one."""
        if self.topic is None or self.partition is None:
            return None
        if self.topic[0] != self.topic[1] or self.partition[0] != self.partition[1]:
            return None
        return self.topic[0], self.partition[0]


class PartitionFiles:
    """The files of some data tables, by the name the comparison reads them under."""

    def __init__(self, files: dict[str, list[str]]) -> None:
        self._files = files
        self._index: dict[str, tuple[dict[tuple[str, int], list[Group]], list[Group]]] = {}
        self._open: dict[int, Any] = {}

    def batches(
        self, name: str, topic: str, partition: int, lo: int, hi: int, columns: tuple[str, ...]
    ) -> Iterator[Any]:
        """``columns`` of the partition's rows of table ``name`` with offsets in [lo, hi],
        as Arrow record batches in file and row group order."""
        import pyarrow.compute as pc

        exact, mixed = self._indexed(name)
        groups = sorted(
            [(g.number, g.index, False, g) for g in exact.get((topic, partition), [])]
            + [(g.number, g.index, True, g) for g in mixed],
            key=lambda t: t[:2],
        )
        for _, _, filtered, g in groups:
            if not g.may_hold(topic, partition, lo, hi):
                continue
            read = list(dict.fromkeys(("offset", *columns, *(("topic", "partition") if filtered else ()))))
            # A row group read whole (a batch reader's setup cost more than reading a small
            # group: 0.4 ms a partition), then handed out in batches of BATCH_ROWS.
            table = self._open[g.number].read_row_group(g.index, columns=read, use_threads=False)
            if filtered or not g.within(lo, hi):
                offsets = table.column("offset")
                keep = pc.and_(pc.greater_equal(offsets, lo), pc.less_equal(offsets, hi))
                if filtered:
                    mine = pc.and_(
                        pc.equal(table.column("topic"), topic), pc.equal(table.column("partition"), partition)
                    )
                    keep = pc.and_(keep, mine)
                table = table.filter(keep)
            for batch in table.select(list(columns)).to_batches(max_chunksize=BATCH_ROWS):
                if batch.num_rows:
                    yield batch

    def _indexed(self, name: str) -> tuple[dict[tuple[str, int], list[Group]], list[Group]]:
        """(row groups by the one partition they hold, row groups of several or unknown)."""
        import pyarrow.parquet as pq

        if name not in self._index:
            exact: dict[tuple[str, int], list[Group]] = {}
            mixed: list[Group] = []
            for path in self._files[name]:
                number = len(self._open)
                f = self._open[number] = pq.ParquetFile(path)
                names = f.schema_arrow.names
                for index in range(f.metadata.num_row_groups):
                    meta = f.metadata.row_group(index)
                    if meta.num_rows == 0:
                        continue

                    topic, partition, offset = (
                        _span(meta.column(names.index(c)).statistics)
                        for c in ("topic", "partition", "offset")
                    )
                    g = Group(number, index, topic, partition, offset)
                    key = g.one_partition()
                    if key is not None:
                        exact.setdefault(key, []).append(g)
                    else:
                        mixed.append(g)
            self._index[name] = (exact, mixed)
        return self._index[name]


def _span(stats: Any) -> tuple[Any, Any] | None:
    """(min, max) of a column chunk's statistics, None where it has none."""
    return (stats.min, stats.max) if stats is not None and stats.has_min_max else None
