"""Benchmark: matching mode mm2's records, the streaming aligner against the row-per-record
query it would replace, side by side in one run, at two sizes for the marginal rate.

Mode mm2's records scan keeps a digest per record of both sides (bench/mm2_records.py
measures the reading); the nightly then matches them in Spark with the query of
audit/compare/mm2_records.py: shuffles and windows over a row per record. The aligner of
issue 58 (native/src/align.rs) is to match them as they are read instead, so its cost adds
to the scan's. This measures both over the same digests, without brokers: 8 partitions of
random 64-bit digests on each side, the replica a copy of the source with what MirrorMaker
2 leaves behind (a skipped run, a replay after a restart, strangers), synced at its first
and last record.

- ours: the aligner over each partition's digests as the scan's tasks would hold them,
  pushed 10,000 records at a time, side by side, two partitions at once (2 threads: the
  aligner releases the GIL), in a process of its own (this script with --align), the
  digests read from the same Parquet files;
- baseline: the query on a running Spark session (``local[*]``, warmed by one untimed run),
  as the nightly's compare stage runs it, result written.

Both answers are compared once per size: the aligner's must be the query's, partition by
partition. Rates are records per second over both sides (2 x --records); the marginal rate
between --records and --large is what each pays per record once its fixed cost is paid.

Run: make bench-mm2-align. The last line is RESULT mm2-record-match-marginal ours=<records/s>
baseline=<records/s> ratio=<ours/baseline>.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from common import stop_on_sigterm
from measure import Measured, best_of, in_session, print_rates, run_commands, size_arguments

from audit.compare.engines import SparkTables
from audit.compare.mm2_records import ALIGNED_COLUMNS, RECORDS
from audit.config import SparkConfig
from audit.logs import setup_logging
from audit.schemas import arrow_schema, columns
from audit.spark_session import build_spark

log = logging.getLogger("bench.mm2_align")

PARTITIONS = 8
PUSH = 10_000
LABELS = {"align": "aligner (own process, 2 threads)", "query": "row-per-record query (Spark)"}


def _row(table: str, **values: Any) -> tuple[Any, ...]:
    return tuple(values.get(c.name) for c in columns(table))


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
                _row(
                    "partitions",
                    topic=name,
                    partition=p,
                    log_start_offset=0,
                    high_watermark=n,
                    last_stable_offset=n,
                )
            )
            meta[f"{side}_r"].append(
                _row(
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
                _row(
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
    tables.put("src_record_digest_ranges", "record_digest_ranges", meta["src_r"])
    tables.put("dst_record_digest_ranges", "record_digest_ranges", meta["dst_r"])
    tables.put(
        "run_params", "run_params", [tuple(0 if c.type == "int64" else False for c in columns("run_params"))]
    )
    tables.reopen("src_record_digests", root / "src")
    tables.reopen("dst_record_digests", root / "dst")
    return tables


def align(root: Path, ranges: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The aligner over every partition, two at a time; the answers by partition."""
    import mirror_audit_native
    import pyarrow.dataset as ds

    sides = {side: ds.dataset(root / side, format="parquet") for side in ("src", "dst")}

    def one(r: dict[str, Any]) -> dict[str, Any]:
        aligner = mirror_audit_native.Aligner(
            r["end_u"],
            r["end_d"],
            r["src_read_start"],
            r["dst_read_start"],
            first_sync=(r["first_sync_u"], r["first_sync_d"]),
        )
        read = {}
        for side, dataset in sides.items():
            t = dataset.to_table(columns=["offset", "digest"], filter=ds.field("partition") == r["partition"])
            t = t.sort_by("offset")  # in offset order, as the walker hands them out
            read[side] = (t.column("offset").to_numpy(), t.column("digest").to_numpy())
        at = 0
        while at < max(len(read["src"][0]), len(read["dst"][0])):
            for side, push in (("src", aligner.push_src), ("dst", aligner.push_dst)):
                offsets, digests = read[side]
                if at < len(offsets):
                    push(offsets[at : at + PUSH].tobytes(), digests[at : at + PUSH].tobytes())
            at += PUSH
        return {"partition": r["partition"], **aligner.finish()}

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(one, ranges))


def query(spark: Any, root: Path, meta: dict[str, Any], out: Path) -> list[dict[str, Any]]:
    tables = spark_tables(spark, root, meta)
    tables.compute(RECORDS, out / "mm2_record_partitions.parquet")
    return tables.rows("SELECT * FROM {mm2_record_partitions}")


def _discard(_: object) -> None:
    """What a timed side returns is not the measurement."""


def _measure(spark: Any, root: Path, n: int, rounds: int) -> dict[str, Measured]:
    data = root / f"n{n}"
    meta = generate(data, n)
    ranges_sql = next(s.sql for s in RECORDS.steps if s.name == "mm2_record_ranges")
    ranges = spark_tables(spark, data, meta).rows(ranges_sql)
    (data / "ranges.json").write_text(json.dumps(ranges))
    want = {
        r["partition"]: {k: r[k] for k in ALIGNED_COLUMNS} for r in query(spark, data, meta, data)
    }  # warms
    cmd = [sys.executable, __file__, "--align", str(data)]
    got = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    equal = sum(
        1 for g in got if g["fallback"] is None and {k: g[k] for k in ALIGNED_COLUMNS} == want[g["partition"]]
    )
    log.info(
        "%d records a side: the aligner's answer is the query's on %d of %d partitions", n, equal, len(want)
    )
    if equal != len(want):
        raise SystemExit(f"the aligner answered differently: {got} against {want}")
    return best_of(
        {
            "align": lambda: run_commands([cmd]),
            "query": lambda: in_session(lambda: _discard(query(spark, data, meta, data))),
        },
        rounds,
        f"{n:,} records a side",
    )


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--align":
        root = Path(sys.argv[2])
        print(json.dumps(align(root, json.loads((root / "ranges.json").read_text()))))
        return
    args = size_arguments(__doc__.splitlines()[0], 500_000, 2_000_000)
    setup_logging()
    stop_on_sigterm()
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-mm2-align-") as tmp:
        spark = build_spark(SparkConfig(master="local[*]"))
        for n in (args.records, args.large):
            results[n] = _measure(spark, Path(tmp), n, args.rounds)
    margin = print_rates(results, LABELS, args.records, args.large)
    print(
        f"RESULT mm2-record-match-marginal ours={margin['align']:.0f} baseline={margin['query']:.0f} "
        f"ratio={margin['align'] / margin['query']:.2f}"
    )


if __name__ == "__main__":
    main()
