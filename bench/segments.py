"""Benchmark: the segment scan against Kafka's own kafka-dump-log, and the deep CRC scan
against `cat`, side by side in one run.

A sandbox broker (real Kafka from Maven Central) writes at least --size-gb of segments:
8 partitions, 1 KiB random values, producer batch.size --batch-bytes (16 KiB, the Java
producer's default), no compression. Then, interleaved for --rounds rounds on the same
files (all in the page cache after the first round):

- header scan, ours:  `segments scan` (listing, planning, the Spark scan of every batch
                      header, batches/markers/issues tables written) in a Spark session
                      that is already running, as in the nightly job; baseline:
                      kafka-dump-log --files (all segments, output to /dev/null), a JVM
                      that reads every batch and checks its CRC;
- deep CRC scan, ours: the same with --deep (every byte read, CRC-32C recomputed);
                      baseline: cat of the same files to /dev/null.

With --cold, every file is dropped from the page cache (fsync, then
posix_fadvise DONTNEED: no root needed) before each timed run of each side, so all sides
read from the disk, as a nightly audit of older segments or of a backup copy does.

Once, for the record: the whole `mirror-audit segments scan` command in a fresh process
(Spark session start included); and the floors under any run, whatever the data (ours over
one empty segment; the two Spark-written tables, 1 row each), beside the time each target
allows. Rates are MB of segment per second; the best round of each side is reported.

Run: .venv/bin/python bench/segments.py [--size-gb 2] [--batch-bytes 16384] [--cold]. The
last line is RESULT segment-scan ours=<MB/s> baseline=<MB/s> ratio=<ours/baseline>; the line
before it is RESULT segment-deep-crc ours=<MB/s> baseline=<MB/s> ratio=<ours/baseline>.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import stop_on_sigterm
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from audit.collect.batches.collect import write_batch_scan
from audit.collect.batches.segments import ScanOptions, scan_segments
from audit.config import SparkConfig
from audit.logs import setup_logging
from audit.sandbox.cluster import SandboxOptions, running
from audit.sandbox.jars import find_java, resource_path
from audit.sandbox.processes import dump_log_class
from audit.sandbox.state import SandboxState
from audit.spark_session import build_spark

log = logging.getLogger("bench.segments")
TOPIC = "bench-segments"


def _produce(state: SandboxState, size_gb: float, batch_bytes: int) -> list[Path]:
    bootstrap = state.cluster("source").bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=8, replication_factor=1)])[TOPIC].result(timeout=60)
    pool = [os.urandom(1024) for _ in range(256)]
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "batch.size": batch_bytes,
            "linger.ms": 5,
            "compression.type": "none",
            "queue.buffering.max.kbytes": 1 << 20,
        }
    )
    records = int(size_gb * (1 << 20))
    started = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(TOPIC, pool[i & 255], partition=i & 7)
                break
            except BufferError:
                producer.poll(0.05)
        if i & 4095 == 0:
            producer.poll(0)
    producer.flush(300)
    log.info("produced %d records in %.1fs", records, time.perf_counter() - started)
    data = Path(state.cluster("source").node(1).node_dir) / "data"
    return sorted(data.glob(f"{TOPIC}-*/*.log"))


def _evict(files: list[Path]) -> None:
    """Drop the files' pages from the page cache (clean pages only, hence the fsync)."""
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _timed(cmd: list[str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:3]} failed: {proc.stderr[-500:]!r}")
    return elapsed


def _floors(spark: Any, root: Path, rounds: int = 5) -> dict[str, float]:
    """What a run costs whatever the data, in the warm session: ours over one empty segment
    file (every step and table, no batch), and the least any Spark scan must do: its two
    Spark-written tables, batches from a stage of Python tasks (where a scan's parsing
    runs) and markers, one row each, nothing scanned (the issues and partitions tables are
    small and written by pyarrow). Printed beside the time the targets allow, so a run
    shows whether a target is reachable at this size at all."""
    empty = root / "empty" / f"{TOPIC}-0"
    empty.mkdir(parents=True)
    (empty / "00000000000000000000.log").touch()
    found: dict[str, list[float]] = {"empty": [], "parquet": []}
    for i in range(rounds):
        out = root / "floors" / str(i)
        started = time.perf_counter()
        write_batch_scan(spark, scan_segments(spark, [str(empty.parent)], ScanOptions()), out, "source", {})
        found["empty"].append(time.perf_counter() - started)
        started = time.perf_counter()
        stage = spark.range(1).mapInArrow(lambda batches: batches, "id long")
        stage.write.mode("overwrite").parquet(str(root / "floors" / f"batches-{i}"))
        spark.range(1).write.mode("overwrite").parquet(str(root / "floors" / f"markers-{i}"))
        found["parquet"].append(time.perf_counter() - started)
    shutil.rmtree(root / "floors", ignore_errors=True)
    return {k: min(v) for k, v in found.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-gb", type=float, default=2.0, help="GiB of segments to write (default 2)")
    parser.add_argument("--batch-bytes", type=int, default=16384, help="producer batch.size (default 16384)")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per side; the best is reported")
    parser.add_argument(
        "--cold", action="store_true", help="evict the segments from the page cache before every timed run"
    )
    args = parser.parse_args()
    setup_logging()
    stop_on_sigterm()
    with tempfile.TemporaryDirectory(prefix="bench-segments-") as tmp:
        root = Path(tmp)
        with running(SandboxOptions(workdir=root / "sandbox", heap_mb=1024)) as state:
            files = _produce(state, args.size_gb, args.batch_bytes)
            data_dir = files[0].parent.parent
            mb = sum(f.stat().st_size for f in files) / 1e6
            dump_log = [
                find_java(),
                "-Xmx512m",
                f"-Dlog4j2.configurationFile={resource_path('log4j2.properties')}",
                "-cp",
                f"{state.jars}/*",
                dump_log_class(state.jars),
                "--files",
                ",".join(map(str, files)),
            ]
            spark = build_spark(SparkConfig(master="local[*]"))

            def cold() -> None:
                if args.cold:
                    _evict(files)

            def ours(deep: bool) -> tuple[float, int]:
                cold()
                out = root / "scans" / f"{'deep' if deep else 'headers'}-{time.monotonic_ns()}"
                started = time.perf_counter()
                scanned = scan_segments(spark, [str(data_dir)], ScanOptions(deep=deep))
                note = write_batch_scan(spark, scanned, out, "source", {"read": "files"})
                elapsed = time.perf_counter() - started
                shutil.rmtree(out.parent, ignore_errors=True)
                return elapsed, int(note["batches"])

            ours(False)  # Python workers and JIT warm, as in a running nightly session
            floors = _floors(spark, root)
            times: dict[str, list[float]] = {"ours": [], "dump-log": [], "deep": [], "cat": []}
            batches = 0
            for i in range(args.rounds):
                t, batches = ours(False)
                times["ours"].append(t)
                cold()
                times["dump-log"].append(_timed(dump_log))
                times["deep"].append(ours(True)[0])
                cold()
                times["cat"].append(_timed(["cat", *map(str, files)]))
                log.info("round %d: %s", i + 1, {k: round(v[-1], 2) for k, v in times.items()})
            spark.stop()
            cold()
            started = time.perf_counter()
            cmd = [sys.executable, "-m", "audit.cli", "segments", "scan", str(data_dir)]
            proc = subprocess.run(
                [*cmd, "--out", str(root / "cli"), "--role", "source"],
                capture_output=True,
                text=True,
                check=False,
            )
            cli = time.perf_counter() - started
            if proc.returncode != 0:
                raise SystemExit(f"mirror-audit segments scan failed: {proc.stderr[-800:]}")

    best = {k: min(v) for k, v in times.items()}
    rate = {k: mb / v for k, v in best.items()}
    cache = "evicted from the page cache before every run" if args.cold else "in the page cache"
    print(
        f"segments: {len(files)} files, {mb:,.0f} MB, {batches:,} batches (batch.size {args.batch_bytes}),",
        cache,
    )
    for key, label in (
        ("ours", "header scan, ours (warm Spark session)"),
        ("dump-log", "kafka-dump-log --files"),
        ("deep", "deep CRC scan, ours (warm session)"),
        ("cat", "cat > /dev/null"),
    ):
        runs = [round(x, 2) for x in times[key]]
        print(f"{label:40s} best {best[key]:6.2f}s  {rate[key]:8.0f} MB/s  all {runs}")
    label = "mirror-audit segments scan (fresh CLI)"
    print(f"{label:40s}      {cli:6.2f}s  {mb / cli:8.0f} MB/s  (Spark session start included)")
    print(
        f"{'ours on one empty segment (fixed cost)':40s} best {floors['empty']:6.2f}s   "
        "listing, planning, the Spark stage, every table written, no batch"
    )
    print(
        f"{'two 1-row Parquet writes (Spark floor)':40s} best {floors['parquet']:6.2f}s   "
        "batches from a Python-task stage, then markers; nothing scanned"
    )
    print(
        f"{'time the targets allow':40s} header scan {best['dump-log'] / 10:.2f}s (kafka-dump-log / 10), "
        f"deep scan {best['cat'] * 2:.2f}s (cat x 2)"
    )
    print(
        f"RESULT segment-deep-crc ours={rate['deep']:.0f} baseline={rate['cat']:.0f} "
        f"ratio={rate['deep'] / rate['cat']:.2f}"
    )
    print(
        f"RESULT segment-scan ours={rate['ours']:.0f} baseline={rate['dump-log']:.0f} "
        f"ratio={rate['ours'] / rate['dump-log']:.2f}"
    )


if __name__ == "__main__":
    main()
