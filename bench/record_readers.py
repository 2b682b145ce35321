"""Benchmark: which reader should the record scan use? The two candidates issue 4 names,
and the compiled reader, side by side in one run, in one warm Spark session, on the same
topic of both clusters.

- the batch reader (``records.reader: batches``, what ``auto`` picks where installed):
  the record scan as it ships (``scan_records``), Spark tasks fetching raw record batches
  of both clusters with kafka-python and walking them in Rust (native/src/batches.rs);
- the compiled librdkafka reader (``records.reader: native``): the same scan, librdkafka
  consuming by assignment and Rust hashing each message's record;
- confluent-kafka (``records.reader: python``): the same scan and the same chunk rows
  (framed-record xxHash3 checksum, gaps, per-record leader epochs), a Python ``Message``
  per record;
- the Spark Kafka source: spark-sql-kafka-0-10 from Maven Central (the PySpark version,
  or the newest earlier patch of its line that Maven Central holds), JVM consumers in the
  same Spark tasks, a per-record xxhash64 over (offset, timestamp, key and value with
  their null flags, headers) in Spark SQL, combined per chunk with ``bit_xor``; count,
  first and last offset, and an offset hash for the gap pattern. It does less than the
  first: no record epochs (the source has none; they would have to be read again from the
  batch headers) and no list of gap ranges, so its figure is an upper bound for a JVM
  reader;
- the batch headers of both clusters by Fetch (``segments fetch``'s reader) with the
  epoch range per chunk: what the Spark Kafka source would add to match the shipped
  scan's per-record epochs; its time is added to the source's in a combined line;
- reference: kcat -C -e -q -f '' on both clusters at once, to /dev/null.

Topic: as in bench/records.py (8 partitions, about 200-byte records with key, value and a
header, lz4 batches), --records per cluster. Each reader's records are counted and checked
against the partitions' end offsets, so neither can win by reading less.

Run: make bench-readers (.venv/bin/python bench/record_readers.py [--records 5000000]
[--rounds 2]). The last line is RESULT record-reader batches=<records/s> native=<records/s>
confluent=<records/s> spark-kafka=<records/s> ratio=<batches/native>.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import end_offsets, stop_on_sigterm
from records import produce

from audit.collect.batches.wire import fetch_batches
from audit.collect.metadata.transactions import kafka_python_settings
from audit.collect.records.native import ReaderName
from audit.collect.records.plan import RecordPlan, RecordRange
from audit.collect.records.read import scan_records
from audit.config import ClusterConfig, RecordsConfig, SparkConfig
from audit.logs import setup_logging
from audit.sandbox.cluster import SandboxOptions, running
from audit.sandbox.jars import ensure_spark_kafka_jars
from audit.sandbox.state import SandboxState
from audit.spark_session import build_spark

log = logging.getLogger("bench.record_readers")
TOPIC = "bench-readers"
CHUNK = 100_000


def _shipped(spark: Any, state: SandboxState, ends: dict[int, int], reader: ReaderName) -> int:
    """The shipped scan of both clusters with one of its readers; the records it counted."""
    from pyspark.sql import functions as F

    plan = RecordPlan(tuple(RecordRange(TOPIC, p, 0, end, "new") for p, end in ends.items()))
    clients = {c.name: {"bootstrap.servers": c.bootstrap} for c in state.clusters}
    rows = scan_records(spark, plan, clients, RecordsConfig(chunk_records=CHUNK), reader).rows
    return int(rows.agg(F.sum("record_count")).collect()[0][0])


def _spark_kafka(spark: Any, state: SandboxState, ends: dict[int, int]) -> int:
    """Chunk checksums of both clusters from the Spark Kafka source; the records counted."""
    from pyspark.sql import functions as F

    frames = []
    for cluster in state.clusters:
        df = (
            spark.read.format("kafka")
            .option("kafka.bootstrap.servers", cluster.bootstrap)
            .option("assign", json.dumps({TOPIC: sorted(ends)}))
            .option("startingOffsets", json.dumps({TOPIC: {str(p): 0 for p in ends}}))
            .option("endingOffsets", json.dumps({TOPIC: {str(p): e for p, e in ends.items()}}))
            .option("includeHeaders", "true")
            .option("kafka.isolation.level", "read_uncommitted")
            # The same fetch sizes the confluent-kafka reader uses.
            .option("kafka.max.partition.fetch.bytes", str(16 << 20))
            .option("kafka.fetch.max.bytes", str(64 << 20))
            .load()
        )
        record_hash = F.xxhash64(
            "offset", "timestamp", F.isnull("key"), "key", F.isnull("value"), "value", "headers"
        )
        frames.append(
            df.groupBy("partition", F.floor(F.col("offset") / CHUNK).alias("chunk"))
            .agg(
                F.count(F.lit(1)).alias("record_count"),
                F.min("offset").alias("first_offset"),
                F.max("offset").alias("last_offset"),
                F.bit_xor(record_hash).alias("checksum"),
                F.bit_xor(F.xxhash64("offset")).alias("offsets_hash"),
            )
            .withColumn("side", F.lit(cluster.name))
        )
    both = frames[0].unionByName(frames[1])
    return int(both.agg(F.sum("record_count")).collect()[0][0])


def _wire_epochs(spark: Any, state: SandboxState, ends: dict[int, int]) -> int:
    """What a JVM reader would still need for record epochs: every batch header of both
    clusters over the Fetch protocol (``segments fetch``), the epoch range per chunk; the
    records the batches hold."""
    from pyspark.sql import functions as F

    frames = []
    for cluster in state.clusters:
        settings = kafka_python_settings(ClusterConfig(cluster.bootstrap))
        assert isinstance(settings, dict)
        scan = fetch_batches(
            spark,
            settings,
            [(TOPIC, p, 0, end) for p, end in ends.items()],
            deep=False,
            split_offsets=1_000_000,
            max_bytes=8 << 20,
            timeout_ms=30_000,
        )
        frames.append(
            scan.rows.groupBy("partition", F.floor(F.col("base_offset") / CHUNK).alias("chunk")).agg(
                F.sum("record_count").alias("record_count"),
                F.min("partition_leader_epoch").alias("min_record_epoch"),
                F.max("partition_leader_epoch").alias("max_record_epoch"),
            )
        )
    both = frames[0].unionByName(frames[1])
    return int(both.agg(F.sum("record_count")).collect()[0][0])


def _kcat(state: SandboxState) -> None:
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if kcat is None:
        raise SystemExit("kcat is not installed: apt-get install kcat")
    procs = [
        subprocess.Popen(
            [kcat, "-C", "-b", c.bootstrap, "-t", TOPIC, "-o", "beginning", "-e", "-q", "-f", ""],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for c in state.clusters
    ]
    for p in procs:
        _, err = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"kcat failed ({p.returncode}): {err[-500:]!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=5_000_000, help="records per cluster (default 5 M)")
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds per reader; the best is reported")
    args = parser.parse_args()
    setup_logging()
    stop_on_sigterm()
    import pyspark

    version, jars = ensure_spark_kafka_jars(pyspark.__version__)
    times: dict[str, list[float]] = {
        "batches": [],
        "native": [],
        "confluent": [],
        "spark-kafka": [],
        "wire-epochs": [],
        "kcat": [],
    }
    with tempfile.TemporaryDirectory(prefix="bench-readers-") as tmp:
        root = Path(tmp)
        with running(SandboxOptions(workdir=root / "sandbox", heap_mb=1024)) as state:
            produce(state, TOPIC, args.records)
            ends = end_offsets(state.cluster("source").bootstrap, TOPIC)
            expected = 2 * sum(ends.values())
            spark = build_spark(SparkConfig(master="local[*]", conf={"spark.jars": ",".join(map(str, jars))}))
            readers: dict[str, Callable[[], int]] = {
                "batches": lambda: _shipped(spark, state, ends, "batches"),
                "native": lambda: _shipped(spark, state, ends, "native"),
                "confluent": lambda: _shipped(spark, state, ends, "python"),
                "spark-kafka": lambda: _spark_kafka(spark, state, ends),
                "wire-epochs": lambda: _wire_epochs(spark, state, ends),
            }
            for read in readers.values():  # warm: Python workers, JIT, consumer classes
                read()
            for i in range(args.rounds):
                for name, read in readers.items():
                    started = time.perf_counter()
                    counted = read()
                    times[name].append(time.perf_counter() - started)
                    if counted != expected:
                        raise SystemExit(f"{name} counted {counted:,} records, expected {expected:,}")
                started = time.perf_counter()
                _kcat(state)
                times["kcat"].append(time.perf_counter() - started)
                log.info("round %d: %s", i + 1, {k: round(v[-1], 2) for k, v in times.items()})
            spark.stop()
    best = {k: min(v) for k, v in times.items()}
    rate = {k: expected / v for k, v in best.items()}
    print(
        f"{expected:,} records (both clusters, {args.records:,} produced to each); spark-sql-kafka {version}"
    )
    for key, label in (
        ("batches", "batch reader in Spark tasks (default)"),
        ("native", "compiled librdkafka reader in Spark tasks"),
        ("confluent", "confluent-kafka in Spark tasks"),
        ("spark-kafka", "Spark Kafka source + Spark SQL xxhash64"),
        ("wire-epochs", "  + batch headers by Fetch (record epochs)"),
        ("kcat", "kcat x 2 (reference)"),
    ):
        runs = [round(x, 2) for x in times[key]]
        print(f"{label:44s} best {best[key]:6.2f}s  {rate[key]:>10,.0f} records/s  all {runs}")
    both = best["spark-kafka"] + best["wire-epochs"]
    label = "Spark Kafka source with epochs (sum)"
    print(f"{label:44s} best {both:6.2f}s  {expected / both:>10,.0f} records/s")
    print(
        f"RESULT record-reader batches={rate['batches']:.0f} native={rate['native']:.0f} "
        f"confluent={rate['confluent']:.0f} spark-kafka={rate['spark-kafka']:.0f} "
        f"ratio={rate['batches'] / rate['native']:.2f}"
    )


if __name__ == "__main__":
    main()
