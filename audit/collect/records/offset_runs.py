"""The runs of consecutive offsets holding records that mode mm2's scan read of a partition
(``record_digest_runs``): a row per stretch between markers, aborted records or offsets
compacted away, not per record.

Why the scan keeps them: MM2-SKIP-1 tells a gap's lost records from its markers by which
offsets a scan found holding records (``mm2_source_reads``, audit/compare/mm2_reads.py).
Numbering every digest by offset over a window to find these runs cost a sort of every
source record in the compare stage; the scan has the offsets in hand, ascending, a
response at a time, and folds them into runs as it reads (a few nanoseconds a record).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

Run = tuple[int, int]  # [start, end) of offsets that all hold records


def runs_of(offsets: Any) -> list[Run]:
    """The runs in ascending int64 offsets: an Arrow array, or a buffer of native-endian
    int64 (the walker's)."""
    import numpy as np

    a = offsets.to_numpy() if hasattr(offsets, "to_numpy") else np.frombuffer(offsets, dtype=np.int64)
    if a.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(a) != 1)
    starts = a[np.concatenate(([0], breaks + 1))]
    ends = a[np.concatenate((breaks, [a.size - 1]))] + 1
    return list(zip(starts.tolist(), ends.tolist(), strict=True))


class OffsetRuns:
    """One partition's runs as its responses come, in offset order: a run still open at the
    end of one response is extended by the next when that one starts where it ended (a
    run crosses responses and the task's ranges of the partition)."""

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self._open: Run | None = None
        self._closed: list[Run] = []

    def add(self, offsets: Any) -> None:
        found = runs_of(offsets)
        if not found:
            return
        first = found[0]
        if self._open is not None and first[0] == self._open[1]:
            found[0] = (self._open[0], first[1])
        elif self._open is not None:
            self._closed.append(self._open)
        self._closed.extend(found[:-1])
        self._open = found[-1]

    def take(self, final: bool = False) -> Iterator[Any]:
        """The runs closed so far as an Arrow batch of ``record_digest_runs`` (and the open
        one, when ``final``): none when there are none."""
        import pyarrow as pa

        if final and self._open is not None:
            self._closed.append(self._open)
            self._open = None
        runs, self._closed = self._closed, []
        if not runs:
            return
        n = len(runs)
        yield pa.RecordBatch.from_arrays(
            [
                pa.repeat(self.topic, n),
                pa.repeat(pa.scalar(self.partition, pa.int32()), n),
                pa.array([r[0] for r in runs], pa.int64()),
                pa.array([r[1] for r in runs], pa.int64()),
            ],
            schema=_schema(),
        )


@functools.cache
def _schema() -> Any:
    from audit.schemas import arrow_schema

    return arrow_schema("record_digest_runs")
