"""Where a record scan's wall time goes: the machine's CPU time during one warm scan,
sorted into the reader, Python, Spark's JVM, the brokers and idle.

The setup is ``make bench-records``' (the sandbox's two clusters, one topic of 8
partitions per cluster, about 200-byte records, lz4 batches), at one size (--records,
20 M per cluster by default). In a running Spark session (``local[*]``) one untimed scan
warms the Python workers and the JVMs; then each timed scan (--rounds) runs under
``perf record -a -e cpu-clock`` (every CPU, --frequency samples a second). Each sample is
put in one place by the process it hit and, within it, the library or thread:

- the Python workers (the children of Spark's JVM, where the reader runs): the compiled
  walk (mirror_audit_native), the Python interpreter (kafka-python's fetches, the task's
  own Python), the kernel (socket receive, page faults), libc and the allocator (copies of
  the responses), Arrow, anything else;
- Spark's JVM by thread: task threads, JIT compilers, garbage collection, the rest;
- the driver's Python; the brokers (kcat pays them too); other processes;
- idle: the CPU time no sample hit (a tickless idle CPU is not sampled, so idle is the
  cores x wall time left over, not a count of idle samples).

Each place is printed as core-seconds and as a share of cores x wall, largest first.
Needs perf (linux-perf) and root or perf_event_paranoid <= 0 for ``-a``. Run: make
bench-scan-breakdown. The last line is RESULT record-scan-breakdown with the reader's
share (walk, kafka-python, its kernel and copies) of all the CPU time the scan used, the
mean over the rounds.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from common import stop_on_sigterm
from measure import process_tree
from records import _scan, produce, write_config

from audit.config import SparkConfig
from audit.config_file import load_config
from audit.logs import setup_logging
from audit.sandbox.cluster import SandboxOptions, running
from audit.spark_session import build_spark

log = logging.getLogger("bench.scan_breakdown")

# Spark JVM thread names (perf's comm: the first 15 characters) by what they do.
JVM_THREADS = (
    ("Executor task", "Spark JVM: task threads"),
    ("C2 CompilerThre", "Spark JVM: JIT compilers"),
    ("C1 CompilerThre", "Spark JVM: JIT compilers"),
    ("GC Thread", "Spark JVM: garbage collection"),
    ("G1 ", "Spark JVM: garbage collection"),
)
READER = (
    "workers: the walk (Rust)",
    "workers: Python interpreter",
    "workers: kernel (receive, faults)",
    "workers: libc and allocator",
)


def _worker_place(dso: str) -> str:
    if "mirror_audit_native" in dso:
        return READER[0]
    if "libpython" in dso or "/python3" in dso:
        return READER[1]
    if "kernel" in dso:
        return READER[2]
    if "libc" in dso or "malloc" in dso or "ld-linux" in dso:
        return READER[3]
    if "arrow" in dso or "parquet" in dso:
        return "workers: Arrow"
    return "workers: other"


def _jvm_place(comm: str) -> str:
    for prefix, place in JVM_THREADS:
        if comm.startswith(prefix):
            return place
    return "Spark JVM: other threads"


SAMPLE = re.compile(
    r"^\s*(?P<comm>.*?)\s+(?P<pid>\d+)/\d+\s+(?P<time>[\d.]+):\s+[0-9a-f]+\s*(?P<sym>.*?)\s*\((?P<dso>[^()]*)\)$"
)


def _places(
    samples: str, window: tuple[float, float], workers: set[int], jvm: int, driver: int, brokers: set[int]
) -> tuple[Counter[str], dict[str, Counter[str]]]:
    """perf script lines (``comm pid/tid time: ip sym (dso)``) taken within ``window`` (the
    scan's start and end on CLOCK_MONOTONIC), counted by place and within each place by
    symbol."""
    counted: Counter[str] = Counter()
    symbols: dict[str, Counter[str]] = {}
    for line in samples.splitlines():
        m = SAMPLE.match(line)
        if m is None:
            continue
        pid, comm, dso = int(m["pid"]), m["comm"], m["dso"]
        if not window[0] <= float(m["time"]) <= window[1]:
            continue  # perf's own start and stop
        if pid == 0:
            continue  # idle is what no sample hit (see the docstring)
        if pid in workers or (comm.startswith("python") and pid not in (driver, jvm)):
            place = _worker_place(dso)
        elif pid == jvm:
            place = _jvm_place(comm)
        elif pid == driver:
            place = "driver Python"
        elif pid in brokers:
            place = "brokers (JVM)"
        else:
            place = "other processes"
        counted[place] += 1
        symbols.setdefault(place, Counter())[m["sym"].split("+")[0] or "?"] += 1
    return counted, symbols


def _profile(freq: int, out: Path, work: Any) -> tuple[tuple[float, float], str]:
    """The work's start and end (CLOCK_MONOTONIC, perf's clock here) and perf's samples."""
    perf = subprocess.Popen(
        ["perf", "record", "-a", "-k", "CLOCK_MONOTONIC", "-e", "cpu-clock", "-F", str(freq), "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    time.sleep(1.0)  # perf has opened its events
    if perf.poll() is not None:
        raise SystemExit(f"perf record failed: {perf.stderr.read().decode()[-400:] if perf.stderr else ''}")
    started = time.monotonic()
    try:
        work()
    finally:
        ended = time.monotonic()
        perf.send_signal(signal.SIGINT)
        perf.wait(60)
    script = subprocess.run(
        ["perf", "script", "-i", str(out), "-F", "comm,pid,tid,time,ip,sym,dso"],
        capture_output=True,
        text=True,
        check=True,
    )
    return (started, ended), script.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000_000, help="records per cluster (default 20 M)")
    parser.add_argument("--rounds", type=int, default=2, help="profiled scans (default 2); each is printed")
    parser.add_argument("--symbols", type=int, default=0, help="print the N most sampled symbols per place")
    parser.add_argument("--frequency", type=int, default=499, help="perf samples a second per CPU")
    args = parser.parse_args()
    if shutil.which("perf") is None:
        raise SystemExit("perf is not installed: apt-get install linux-perf")
    setup_logging()
    stop_on_sigterm()
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="bench-breakdown-") as tmp:
        root = Path(tmp)
        with running(SandboxOptions(workdir=root / "sandbox", heap_mb=1024)) as state:
            topic = f"bench-records-{args.records}"
            produce(state, topic, args.records)
            config = load_config(write_config(state, topic, root / "audit.yaml", root))
            spark = build_spark(SparkConfig(master="local[*]"))
            jvm = int(spark.sparkContext._gateway.proc.pid)
            chunks = root / "chunks"

            def scan() -> None:
                _scan(spark, config, topic, args.records, chunks)

            scan()  # warm: the Python workers, the JIT, the readers' first connections
            driver = os.getpid()
            workers = set(process_tree([jvm], roots=False))
            brokers = {p for p in process_tree([driver], roots=False) if p != jvm and p not in workers}
            shares: list[float] = []
            for i in range(args.rounds):
                window, samples = _profile(args.frequency, root / f"perf-{i}.data", scan)
                wall = window[1] - window[0]
                counted, symbols = _places(samples, window, workers, jvm, driver, brokers)
                per_sample = 1.0 / args.frequency
                capacity = cores * wall
                busy = sum(counted.values()) * per_sample
                rows = [(place, n * per_sample) for place, n in counted.items()]
                rows.append(("idle", max(capacity - busy, 0.0)))
                rows.sort(key=lambda r: -r[1])
                rate = 2 * args.records / wall
                print(
                    f"round {i + 1}: {2 * args.records:,} records in {wall:.2f}s ({rate:,.0f} records/s), "
                    f"{cores} cores: {capacity:.2f} core-seconds"
                )
                for place, seconds in rows:
                    print(f"  {place:40s} {seconds:7.2f}s  {100 * seconds / capacity:5.1f}%")
                    top = symbols.get(place, Counter()).most_common(args.symbols)
                    total = sum(symbols.get(place, Counter()).values())
                    for sym, n in top:
                        print(f"      {sym[:60]:60s} {100 * n / total:5.1f}% of the place")
                reader = sum(s for p, s in rows if p in READER)
                shares.append(reader / busy if busy else 0.0)
                print(f"  the reader's share of the CPU time used: {100 * shares[-1]:.1f}%")
            spark.stop()
    mean = sum(shares) / len(shares)
    print(f"RESULT record-scan-breakdown reader_share={mean:.2f} records={args.records}")


if __name__ == "__main__":
    main()
