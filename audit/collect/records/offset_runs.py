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


def runs_of(offsets: Any) -> tuple[Any, Any]:
    """(starts, ends) as numpy arrays of the runs in ascending int64 offsets: an Arrow
    array, or a buffer of native-endian int64 (the walker's)."""
    import numpy as np

    a = offsets.to_numpy() if hasattr(offsets, "to_numpy") else np.frombuffer(offsets, dtype=np.int64)
    if a.size == 0:
        return a, a
    breaks = np.flatnonzero(np.diff(a) != 1)
    starts = a[np.concatenate(([0], breaks + 1))]
    ends = a[np.concatenate((breaks, [a.size - 1]))] + 1
    return starts, ends


class OffsetRuns:
    """One partition's runs as its responses come, in offset order: a run still open at the
    end of one response is extended by the next when that one starts where it ended (a
    run crosses responses and the task's ranges of the partition). The runs stay numpy
    arrays until written: a topic with a marker every few records has a run every few
    records, and a Python object each would cost more than the read."""

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self._open: Run | None = None
        self._closed: list[tuple[Any, Any]] = []

    def add(self, offsets: Any) -> None:
        starts, ends = runs_of(offsets)
        if starts.size == 0:
            return
        if self._open is not None:
            if int(starts[0]) == self._open[1]:
                starts = starts.copy()
                starts[0] = self._open[0]
            else:
                self._closed.append(([self._open[0]], [self._open[1]]))
        self._closed.append((starts[:-1], ends[:-1]))
        self._open = (int(starts[-1]), int(ends[-1]))

    def take(self, final: bool = False) -> Iterator[Any]:
        """The runs closed so far as an Arrow batch of ``record_digest_runs`` (and the open
        one, when ``final``): none when there are none."""
        import numpy as np
        import pyarrow as pa

        if final and self._open is not None:
            self._closed.append(([self._open[0]], [self._open[1]]))
            self._open = None
        closed, self._closed = self._closed, []
        if not closed:
            return
        starts = np.concatenate([np.asarray(s, dtype=np.int64) for s, _ in closed])
        ends = np.concatenate([np.asarray(e, dtype=np.int64) for _, e in closed])
        n = len(starts)
        if n == 0:
            return
        yield pa.RecordBatch.from_arrays(
            [
                pa.repeat(self.topic, n),
                pa.repeat(pa.scalar(self.partition, pa.int32()), n),
                pa.array(starts, pa.int64()),
                pa.array(ends, pa.int64()),
            ],
            schema=_schema(),
        )


@functools.cache
def _schema() -> Any:
    from audit.schemas import arrow_schema

    return arrow_schema("record_digest_runs")
