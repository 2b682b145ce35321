"""The runs of offsets holding records that mode mm2's scan keeps as it reads
(audit/collect/records/offset_runs.py, ``record_digest_runs``), against the runs the compare
stage found from every digest before (``mm2_source_reads``, audit/compare/mm2_reads.py),
which still serves a snapshot of a scan that did not keep them."""

from __future__ import annotations

import array
import itertools
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit.collect.records.offset_runs import OffsetRuns, runs_of
from audit.compare.engines import LocalTables
from audit.compare.mm2_reads import SOURCE_READS
from audit.schemas import row_of
from tests.invariant_scenarios import RecordScale


def _reference(offsets: list[int]) -> list[tuple[int, int]]:
    """Consecutive offsets, one run each: the plain way."""
    out: list[tuple[int, int]] = []
    for o in offsets:
        if out and out[-1][1] == o:
            out[-1] = (out[-1][0], o + 1)
        else:
            out.append((o, o + 1))
    return out


def _responses(offsets: list[int], cuts: list[int]) -> list[bytes]:
    """The offsets as a scan's responses, cut where ``cuts`` say (an empty response too)."""
    bounds = sorted({0, len(offsets), *(c % (len(offsets) + 1) for c in cuts)})
    return [array.array("q", offsets[a:b]).tobytes() for a, b in itertools.pairwise(bounds)] + [b""]


held = st.lists(st.booleans(), min_size=0, max_size=60)  # which offsets hold a record


@settings(deadline=None)  # the first example imports numpy and pyarrow
@given(present=held, cuts=st.lists(st.integers(0, 60), max_size=6))
def test_runs_cross_responses_as_if_read_at_once(present: list[bool], cuts: list[int]) -> None:
    offsets = [o + 5 for o, p in enumerate(present) if p]
    runs = OffsetRuns("t", 0)
    got: list[tuple[int, int]] = []
    for response in _responses(offsets, cuts):
        runs.add(response)
        got += [(a, b) for batch in runs.take() for a, b in zip(*_columns(batch), strict=True)]
    got += [(a, b) for batch in runs.take(final=True) for a, b in zip(*_columns(batch), strict=True)]
    assert got == _reference(offsets)
    starts, ends = runs_of(array.array("q", offsets).tobytes())
    assert list(zip(starts.tolist(), ends.tolist(), strict=True)) == _reference(offsets)


def _columns(batch: Any) -> tuple[list[int], list[int]]:
    return batch.column("start_offset").to_pylist(), batch.column("end_offset").to_pylist()


def _source_reads(tables: LocalTables, out: Path) -> list[dict[str, Any]]:
    tables.compute(SOURCE_READS, out)
    return tables.rows(
        "SELECT kind, start_offset, end_offset FROM {mm2_source_reads} ORDER BY kind, start_offset"
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(present=held, cuts=st.lists(st.integers(0, 60), max_size=6))
def test_the_scans_runs_give_the_source_reads_its_digests_gave(
    present: list[bool], cuts: list[int], tmp_path_factory: pytest.TempPathFactory
) -> None:
    n = len(present)
    offsets = [o for o, p in enumerate(present) if p]
    runs = OffsetRuns("orders", 0)
    kept = []
    for response in _responses(offsets, cuts):
        runs.add(response)
        kept += list(runs.take())
    kept += list(runs.take(final=True))
    scanned = [
        row_of("record_digest_runs", topic="orders", partition=0, start_offset=a, end_offset=b)
        for batch in kept
        for a, b in zip(*_columns(batch), strict=True)
    ]
    digests = [row_of("record_digests", topic="orders", partition=0, offset=o, digest=o) for o in offsets]
    out = tmp_path_factory.mktemp("reads") / "mm2_source_reads.parquet"
    answers = []
    # A scan of this version (its runs and its digests), and one of a version that kept
    # only digests: the same rows.
    for with_runs in (True, False):
        tables = LocalTables()
        tables.put(
            "src_partitions",
            "partitions",
            [
                row_of(
                    "partitions",
                    topic="orders",
                    partition=0,
                    topic_id="id",
                    log_start_offset=0,
                    high_watermark=n,
                )
            ],
        )
        tables.put(
            "src_record_digest_ranges",
            "record_digest_ranges",
            [
                row_of(
                    "record_digest_ranges",
                    topic="orders",
                    partition=0,
                    start_offset=0,
                    end_offset=n,
                    read_to=n,
                    complete=True,
                    isolation="read_uncommitted",
                    compacted=False,
                )
            ],
        )
        # As compare/run.py registers them: the digests stand in for the runs only in a
        # snapshot without them.
        tables.put("src_digests_without_runs", "record_digests", [] if with_runs else digests)
        tables.put("src_record_digest_runs", "record_digest_runs", scanned if with_runs else [])
        tables.put("offset_syncs", "mm2_offset_syncs", [])
        tables.put("previous_syncs", "previous_syncs", [])
        tables.put("previous_source_reads", "previous_source_reads", [])
        tables.put("src_partition_traits", "partition_traits", [])
        answers.append(_source_reads(tables, out))
    assert answers[0] == answers[1]
    records = [(r["start_offset"], r["end_offset"]) for r in answers[0] if r["kind"] == "records"]
    assert records == _reference(offsets)


@pytest.mark.parametrize("kept_runs", [True, False])
def test_the_digests_are_read_for_the_runs_only_in_a_snapshot_without_them(
    tmp_path: Path, kept_runs: bool
) -> None:
    import pyarrow.parquet as pq

    from audit.compare.run import mm2_inputs
    from audit.schemas import arrow_schema

    source, destination = tmp_path / "source", tmp_path / "destination"
    for directory in (source, destination):
        directory.mkdir()
    digests = [{"topic": "orders", "partition": 0, "offset": o, "digest": o} for o in (0, 1, 3)]
    pq.write_table(
        pa.Table.from_pylist(digests, schema=arrow_schema("record_digests")),
        source / "record_digests.parquet",
    )
    if kept_runs:
        runs = [
            {"topic": "orders", "partition": 0, "start_offset": a, "end_offset": b}
            for a, b in ((0, 2), (3, 4))
        ]
        pq.write_table(
            pa.Table.from_pylist(runs, schema=arrow_schema("record_digest_runs")),
            source / "record_digest_runs.parquet",
        )
    tables = RecordScale()
    mm2_inputs(tables, source, destination)
    without = tables.rows("SELECT count(*) AS n FROM {src_digests_without_runs}")[0]["n"]
    kept = tables.rows("SELECT count(*) AS n FROM {src_record_digest_runs}")[0]["n"]
    assert (without, kept) == ((0, 2) if kept_runs else (3, 0))
