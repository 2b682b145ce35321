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

The segments are then grown to --large-gb and every side measured again: the marginal rate,
(MB2 - MB1) / (t2 - t1) between the two sizes of one run, is what a nightly job over
terabytes pays per MB once its fixed cost is paid (at 2 GB, Spark's 0.7 s start of a run
weighs on the ratio; at the margin it does not).

Run: .venv/bin/python bench/segments.py [--size-gb 2] [--large-gb 16] [--batch-bytes 16384]
[--cold]. The last lines are RESULT segment-deep-marginal and segment-scan-marginal (MB/s at
the margin, ours against cat and kafka-dump-log), then RESULT segment-deep-crc and
segment-scan (the rates at --size-gb), each ours=<MB/s> baseline=<MB/s> ratio=<ours/baseline>.
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
from audit.java_runtime import find_java
from audit.logs import setup_logging
from audit.sandbox.cluster import SandboxOptions, running
from audit.sandbox.jars import resource_path
from audit.sandbox.processes import dump_log_class
from audit.sandbox.state import SandboxState
from audit.spark_session import build_spark

log = logging.getLogger("bench.segments")
TOPIC = "bench-segments"


def _produce(state: SandboxState, size_gb: float, batch_bytes: int) -> list[Path]:
    bootstrap = state.cluster("source").bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    if TOPIC not in admin.list_topics(timeout=30).topics:  # the second size grows the first's topic
        new = NewTopic(TOPIC, num_partitions=8, replication_factor=1)
        admin.create_topics([new])[TOPIC].result(timeout=60)
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


def _marginal(small: tuple[float, float], large: tuple[float, float]) -> float:
    """MB/s between two sizes measured in one run: (MB2 - MB1) / (t2 - t1), the rate at the
    margin, free of whatever each run costs whatever its size."""
    (mb1, t1), (mb2, t2) = small, large
    return (mb2 - mb1) / (t2 - t1) if t2 > t1 else float("inf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-gb", type=float, default=2.0, help="GiB of segments to write (default 2)")
    parser.add_argument(
        "--large-gb",
        type=float,
        default=16.0,
        help="then grow the segments to this many GiB and measure again, for the marginal rates "
        "(default 16; 0: the small size only)",
    )
    parser.add_argument("--batch-bytes", type=int, default=16384, help="producer batch.size (default 16384)")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per side; the best is reported")
    parser.add_argument(
        "--cold", action="store_true", help="evict the segments from the page cache before every timed run"
    )
    args = parser.parse_args()
    if args.large_gb and args.large_gb <= args.size_gb:
        parser.error("--large-gb must exceed --size-gb (or be 0)")
    setup_logging()
    stop_on_sigterm()
    sizes: list[tuple[float, dict[str, float], int, int]] = []  # (MB, best seconds, files, batches)
    with tempfile.TemporaryDirectory(prefix="bench-segments-") as tmp:
        root = Path(tmp)
        with running(SandboxOptions(workdir=root / "sandbox", heap_mb=1024)) as state:
            spark = build_spark(SparkConfig(master="local[*]"))
            produced = 0.0
            files: list[Path] = []
            floors: dict[str, float] = {}
            for size_gb in (args.size_gb, args.large_gb) if args.large_gb else (args.size_gb,):
                files = _produce(state, size_gb - produced, args.batch_bytes)
                produced = size_gb
                best, batches = _measure_size(spark, state, root, files, args.rounds, args.cold)
                mb = sum(f.stat().st_size for f in files) / 1e6
                sizes.append((mb, best, len(files), batches))
                if len(sizes) == 1:
                    floors = _floors(spark, root)
            spark.stop()
            if args.cold:
                _evict(files)
            started = time.perf_counter()
            data_dir = files[0].parent.parent
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

    cache = "evicted from the page cache before every run" if args.cold else "in the page cache"
    for mb, best, n_files, batches in sizes:
        print(
            f"segments: {n_files} files, {mb:,.0f} MB, {batches:,} batches (batch.size {args.batch_bytes}),",
            cache,
        )
        for key, label in LABELS.items():
            print(f"  {label:40s} best {best[key]:7.2f}s  {mb / best[key]:8.0f} MB/s")
    mb, best = sizes[0][0], sizes[0][1]
    rate = {k: mb / v for k, v in best.items()}
    label = "mirror-audit segments scan (fresh CLI)"
    total_mb = sizes[-1][0]
    print(f"{label:40s}      {cli:6.2f}s  {total_mb / cli:8.0f} MB/s  (Spark session start included)")
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
    if len(sizes) == 2:
        (mb1, b1, _, _), (mb2, b2, _, _) = sizes
        margin = {k: _marginal((mb1, b1[k]), (mb2, b2[k])) for k in LABELS}
        print(f"marginal rates between {mb1:,.0f} and {mb2:,.0f} MB (MB/s):")
        for key, label in LABELS.items():
            print(f"  {label:40s} {margin[key]:8.0f} MB/s")
        print(
            f"RESULT segment-deep-marginal ours={margin['deep']:.0f} baseline={margin['cat']:.0f} "
            f"ratio={margin['deep'] / margin['cat']:.2f}"
        )
        print(
            f"RESULT segment-scan-marginal ours={margin['ours']:.0f} baseline={margin['dump-log']:.0f} "
            f"ratio={margin['ours'] / margin['dump-log']:.2f}"
        )
    print(
        f"RESULT segment-deep-crc ours={rate['deep']:.0f} baseline={rate['cat']:.0f} "
        f"ratio={rate['deep'] / rate['cat']:.2f}"
    )
    print(
        f"RESULT segment-scan ours={rate['ours']:.0f} baseline={rate['dump-log']:.0f} "
        f"ratio={rate['ours'] / rate['dump-log']:.2f}"
    )


LABELS = {
    "ours": "header scan, ours (warm Spark session)",
    "dump-log": "kafka-dump-log --files",
    "deep": "deep CRC scan, ours (warm session)",
    "cat": "cat > /dev/null",
}


def _measure_size(
    spark: Any, state: SandboxState, root: Path, files: list[Path], rounds: int, cold_cache: bool
) -> tuple[dict[str, float], int]:
    """Every side, interleaved for ``rounds`` rounds over ``files``: the best time of each,
    and the number of batches."""
    data_dir = files[0].parent.parent
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

    def cold() -> None:
        if cold_cache:
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
    times: dict[str, list[float]] = {k: [] for k in LABELS}
    batches = 0
    for i in range(rounds):
        t, batches = ours(False)
        times["ours"].append(t)
        cold()
        times["dump-log"].append(_timed(dump_log))
        times["deep"].append(ours(True)[0])
        cold()
        times["cat"].append(_timed(["cat", *map(str, files)]))
        log.info("%d files, round %d: %s", len(files), i + 1, {k: round(v[-1], 2) for k, v in times.items()})
    return {k: min(v) for k, v in times.items()}, batches


if __name__ == "__main__":
    main()
