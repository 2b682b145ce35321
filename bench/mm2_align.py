"""Benchmark: matching mode mm2's records in the nightly's compare stage, the partitions
streamed through the aligner against the row-per-record query, side by side in one run, at
two sizes for the marginal rate.

Mode mm2's records scan keeps a digest per record of both sides (bench/mm2_records.py
measures the reading); the compare stage then matches them (audit/compare/mm2_records.py).
Row by row, that is shuffles and windows over a row per record; aligned, each partition's
two sides are read back in offset order by a Spark task and streamed through the aligner
(audit/compare/mm2_alignment.py, native/src/align.rs), a row per partition out. This
measures both over the same digests, without brokers: 8 partitions of random 64-bit
digests on each side, a file per partition and side as the scan's tasks write them, the
replica a copy of the source with what MirrorMaker 2 leaves behind (a skipped run, a replay
after a restart, strangers), synced at its first and last record.

- ours: ``mm2_record_partitions`` as the pipeline computes it (``RECORDS``: aligned, the
  pairs only for partitions the aligner cannot answer; here it answers all of them);
- baseline: the same table matched row by row (``ROW_BY_ROW``, the query alone, as the
  nightly computed it before).

Both on one running Spark session (``local[*]``, warmed by one untimed run of each), result
written. The two answers are compared once per size, column by column. Rates are records
per second over both sides (2 x --records); the marginal rate between --records and
--large is what each pays per record once its fixed cost is paid.

Run: make bench-mm2-align. The last line is RESULT mm2-record-match-marginal ours=<records/s>
baseline=<records/s> ratio=<ours/baseline>.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

from common import stop_on_sigterm
from measure import Measured, best_of, in_session, print_rates, size_arguments

from audit.compare.engines import SparkTables
from audit.compare.mm2_records import RECORDS, ROW_BY_ROW
from audit.compare.sql import Comparison
from audit.config import SparkConfig
from audit.logs import setup_logging
from audit.schemas import arrow_schema, columns, row_of
from audit.spark_session import build_spark

log = logging.getLogger("bench.mm2_align")

PARTITIONS = 8
LABELS = {"aligned": "aligned (pipeline, Spark)", "rows": "row by row (query, Spark)"}


def generate(root: Path, records: int) -> dict[str, Any]:
    """The digests of both sides as ``record_digests`` Parquet files under ``root`` and the
    metadata the query needs (returned as rows by table)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(58)
    per = records // PARTITIONS
    meta: dict[str, list[tuple[Any, ...]]] = {k: [] for k in ("src_p", "dst_p", "syncs", "src_r", "dst_r")}
    src_tables: list[Any] = []
    dst_tables: list[Any] = []
    for p in range(PARTITIONS):
        src = rng.integers(-(2**62), 2**62, size=per, dtype=np.int64)
        a, b = per // 3, 2 * per // 3
        strangers = rng.integers(-(2**62), 2**62, size=10, dtype=np.int64)
        # Skipped 100 records at a third, replayed 500 at two thirds, ten strangers at the end.
        dst = np.concatenate([src[:a], src[a + 100 : b], src[b - 500 : b], src[b:], strangers])
        for side, digests, tables, name in (
            ("src", src, src_tables, "t"),
            ("dst", dst, dst_tables, "source.t"),
        ):
            n = len(digests)
            tables.append(
                pa.table(
                    {
                        "topic": pa.array([name] * n, pa.string()),
                        "partition": pa.array(np.full(n, p, dtype=np.int32)),
                        "offset": pa.array(np.arange(n, dtype=np.int64)),
                        "digest": pa.array(digests),
                    }
                ).cast(arrow_schema("record_digests"))
            )
            meta[f"{side}_p"].append(
                row_of(
                    "partitions",
                    topic=name,
                    partition=p,
                    log_start_offset=0,
                    high_watermark=n,
                    last_stable_offset=n,
                )
            )
            meta[f"{side}_r"].append(
                row_of(
                    "record_digest_ranges",
                    topic=name,
                    partition=p,
                    start_offset=0,
                    end_offset=n,
                    read_to=n,
                    complete=True,
                    isolation="read_uncommitted",
                    compacted=False,
                )
            )
        last = (per - 1, len(dst) - 11)
        for i, (u, d) in enumerate(((0, 0), last)):
            meta["syncs"].append(
                row_of(
                    "mm2_offset_syncs",
                    topic="t",
                    partition=p,
                    upstream_offset=u,
                    downstream_offset=d,
                    record_partition=0,
                    record_offset=i,
                )
            )
    # A file per partition and side, as the scan's tasks write theirs: Spark reads them in
    # parallel.
    for side, tables in (("src", src_tables), ("dst", dst_tables)):
        (root / side).mkdir(parents=True, exist_ok=True)
        for p, table in enumerate(tables):
            pq.write_table(table, root / side / f"part-{p}.parquet")
    return meta


def spark_tables(spark: Any, root: Path, meta: dict[str, Any]) -> SparkTables:
    tables = SparkTables(spark)
    tables.put("src_partitions", "partitions", meta["src_p"])
    tables.put("dst_partitions", "partitions", meta["dst_p"])
    tables.put("topic_names", "topic_names", [("t", "source.t")])
    tables.put("topic_scope", "topic_scope", [("t", True, False)])
    tables.put("offset_syncs", "mm2_offset_syncs", meta["syncs"])
    tables.put("src_record_digest_cuts", "record_digest_cuts", [])
    tables.put("src_record_alignments", "record_alignments", [])  # no scan matched as it read: digests only
    tables.put("src_record_digest_ranges", "record_digest_ranges", meta["src_r"])
    tables.put("dst_record_digest_ranges", "record_digest_ranges", meta["dst_r"])
    tables.put(
        "run_params", "run_params", [tuple(0 if c.type == "int64" else False for c in columns("run_params"))]
    )
    tables.reopen("src_record_digests", root / "src")
    tables.reopen("dst_record_digests", root / "dst")
    return tables


def query(
    spark: Any, root: Path, meta: dict[str, Any], out: Path, comparison: Comparison
) -> list[dict[str, Any]]:
    tables = spark_tables(spark, root, meta)
    tables.compute(comparison, out / "mm2_record_partitions.parquet")
    return tables.rows("SELECT * FROM {mm2_record_partitions} ORDER BY partition")


def _discard(_: object) -> None:
    """What a timed side returns is not the measurement."""


def _measure(spark: Any, root: Path, n: int, rounds: int) -> dict[str, Measured]:
    data = root / f"n{n}"
    meta = generate(data, n)
    got = query(spark, data, meta, data, RECORDS)  # warms
    want = query(spark, data, meta, data, ROW_BY_ROW)
    aligned = sum(1 for g in got if g.pop("matching") == "aligned")
    for w in want:
        w.pop("matching")
    log.info("%d records a side: %d of %d partitions aligned", n, aligned, len(got))
    if got != want or aligned != len(got):
        raise SystemExit(f"the aligned comparison answered differently: {got} against {want}")
    return best_of(
        {
            "aligned": lambda: in_session(lambda: _discard(query(spark, data, meta, data, RECORDS))),
            "rows": lambda: in_session(lambda: _discard(query(spark, data, meta, data, ROW_BY_ROW))),
        },
        rounds,
        f"{n:,} records a side",
    )


def main() -> None:
    args = size_arguments(__doc__.splitlines()[0], 2_000_000, 8_000_000)
    setup_logging()
    stop_on_sigterm()
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-mm2-align-") as tmp:
        spark = build_spark(SparkConfig(master="local[*]"))
        for n in (args.records, args.large):
            results[n] = _measure(spark, Path(tmp), n, args.rounds)
    margin = print_rates(results, LABELS, args.records, args.large)
    print(
        f"RESULT mm2-record-match-marginal ours={margin['aligned']:.0f} baseline={margin['rows']:.0f} "
        f"ratio={margin['aligned'] / margin['rows']:.2f}"
    )


if __name__ == "__main__":
    main()
