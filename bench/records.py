"""Benchmark: the record-level scan against raw consumption by kcat, side by side in one
run, with the peak memory of each, at two topic sizes.

The sandbox's two clusters (real Kafka from Maven Central) each get the same topic, as an
offset-preserving mirror would leave it: 8 partitions, --records records of about 200
bytes (key, value, one header), lz4 batches. Then, interleaved for --rounds rounds:

- ours, the scan (the RESULT line): in a Spark session that is already running, as in
  the nightly job (``local[*]``, warmed by one untimed scan), both clusters read in Spark
  tasks with the reader records.reader: auto resolves to (the batch reader where the
  compiled package is installed: raw record batches fetched and walked in Rust), chunk
  checksums, gaps and record epochs, ``record_chunks`` written: issue 4's scan, what
  kcat's consumption is set against;
- ours, the same scan with the compiled librdkafka reader (records.reader: native), the
  reader before the batch reader (issue 35), for before and after in one run;
- ours, the whole records step in the same session (``collect_records``: the scan, then the
  chunks compared, the history written), for the record;
- ours, a fresh ``mirror-audit records scan --full`` process (Spark session start and the
  first jobs' warm-up included), for the record;
- baseline: kcat -C -e -q -f '' on both clusters at once (two processes), every
  partition from the beginning to the end, to /dev/null.

Rates are records per second over both clusters (2 x --records); CPU per record is the CPU
time (user and system) of the side's process tree over its records, every process's
utime and stime sampled from /proc every 50 ms (getrusage cannot see the running session's
JVM and Python workers, which live on, nor the CLI's JVM, which its Python does not reap);
the brokers' CPU is in no side's.
Peak memory is the largest resident set of the whole process tree (the driver, its JVM and Python workers for
a fresh ours; the session's JVM and Python workers in the running session; both kcat
processes for the baseline), sampled every 50 ms. The same is then done with --large
records (20 M), to show whether memory grows with the topic, and for the marginal rate of
each side: 2 x (N2 - N1) / (t2 - t1), what a scan pays per record once its fixed cost
(Spark's jobs, the readers' connections) is paid.

Run: make bench-records (installs kcat with apt-get where it is missing). The last lines are
RESULT record-scan-marginal (records/s at the margin) and RESULT record-scan (at --records),
each ours=<records/s> baseline=<records/s> ratio=<ours/baseline>.
"""

from __future__ import annotations

import logging
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import end_offsets, stop_on_sigterm
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from measure import Measured, best_of, in_session, print_rates, print_results, run_commands, size_arguments

from audit.collect.records.collect import collect_records
from audit.collect.records.plan import RecordPlan, RecordRange
from audit.collect.records.read import scan_records
from audit.config import AuditConfig, SparkConfig
from audit.config_file import load_config
from audit.logs import setup_logging
from audit.sandbox.cluster import SandboxOptions, running
from audit.sandbox.state import SandboxState
from audit.spark_session import build_spark

log = logging.getLogger("bench.records")


def produce(state: SandboxState, topic: str, records: int, replica: str | None = None) -> None:
    """``records`` records in 8 partitions of ``topic`` on each cluster (``replica`` the
    destination's name for it, as MirrorMaker 2 names its copy), the same at every offset."""
    rnd = random.Random(7)
    pool = [bytes(rnd.getrandbits(8) for _ in range(80)).hex().encode() for _ in range(1024)]
    t0 = int(time.time() * 1000) - 3_600_000
    for cluster in state.clusters:
        name = replica if replica is not None and cluster.name == "destination" else topic
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(name, num_partitions=8, replication_factor=1)])[name].result(timeout=60)
        p = Producer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "linger.ms": 20,
                "batch.size": 1 << 20,
                "compression.type": "lz4",
                "queue.buffering.max.kbytes": 1 << 20,
                # A retried first batch (the new topic's leader not known yet) must not
                # land after later ones: both clusters need the same record at each offset,
                # as an offset-preserving mirror leaves them, or every run narrows a
                # "divergence" the benchmark made itself.
                "enable.idempotence": True,
            }
        )
        started = time.perf_counter()
        for i in range(records):
            while True:
                try:
                    p.produce(
                        name,
                        pool[i & 1023],
                        b"key-%d" % (i & 65535),
                        partition=i & 7,
                        timestamp=t0 + i // 8,
                        headers=[("source", b"bench")],
                    )
                    break
                except BufferError:
                    p.poll(0.05)
            if i & 8191 == 0:
                p.poll(0)
        if p.flush(300):
            raise SystemExit(f"{cluster.name}: producing timed out")
        _check_end_offsets(cluster.bootstrap, name, records)
        log.info("%s: %d records in %.1fs", cluster.name, records, time.perf_counter() - started)


def _check_end_offsets(bootstrap: str, topic: str, records: int) -> None:
    """Every partition holds exactly the records sent to it (partition i & 7 of record i)."""
    ends = list(end_offsets(bootstrap, topic).values())
    expected = [len(range(p, records, 8)) for p in range(8)]
    if ends != expected:
        raise SystemExit(f"{bootstrap}: {topic} holds {ends} records per partition, not {expected}")


def _check_no_divergence(run: Path) -> None:
    """The clusters hold the same records, so the scan must find them equal: a run that
    narrowed a mismatch measured more than the scan (and something is wrong)."""
    import pyarrow.parquet as pq

    found = pq.read_table(run / "destination" / "record_divergences.parquet").num_rows
    if found:
        raise SystemExit(f"the scan found {found} mismatching chunks between identical topics: see {run}")


def _scan(spark: Any, cfg: AuditConfig, topic: str, records: int, out: Path, reader: Any = None) -> None:
    """The scan as ``collect_records`` runs it: every partition of both clusters read and
    checksummed, both sides' ``record_chunks`` written; checked to hold every record."""
    import pyarrow.parquet as pq

    ends = end_offsets(cfg.cluster("source").bootstrap_servers, topic)
    plan = RecordPlan(tuple(RecordRange(topic, p, 0, end, "new") for p, end in ends.items()))
    clients = {side: cfg.cluster(side).client_settings() for side in ("source", "destination")}
    rows = scan_records(spark, plan, clients, cfg.records, reader).rows
    rows.write.partitionBy("side").mode("overwrite").parquet(str(out))
    counted = sum(pq.read_table(out, columns=["record_count"]).column("record_count").to_pylist())
    if counted != 2 * records:
        raise SystemExit(f"the scan counted {counted:,} records, expected {2 * records:,}")


def write_config(state: SandboxState, topic: str, path: Path, root: Path) -> Path:
    """The benchmark's configuration: both sandbox clusters, ``topic`` only, 100,000-offset
    chunks, ranges split every 1 M offsets, Spark on every core, runs under ``root``."""
    path.write_text(
        f"source:\n  bootstrap_servers: {state.cluster('source').bootstrap}\n"
        f"destination:\n  bootstrap_servers: {state.cluster('destination').bootstrap}\n"
        f"scope:\n  topics:\n    include: ['{topic}']\n"
        "records:\n  chunk_records: 100000\n  split_records: 1000000\n"
        "spark:\n  master: local[*]\n"
        f"output:\n  root: {root / 'reports'}\n"
    )
    return path


def _measure(state: SandboxState, root: Path, records: int, rounds: int) -> dict[str, Measured]:
    topic = f"bench-records-{records}"
    produce(state, topic, records)
    cfg = write_config(state, topic, root / f"audit-{records}.yaml", root)
    run = root / "reports" / f"run-{records}"
    snap = subprocess.run(
        [sys.executable, "-m", "audit.cli", "snapshot", "--config", str(cfg), "--out", str(run)],
        capture_output=True,
        text=True,
        check=False,
    )
    if snap.returncode != 0:
        raise SystemExit(f"snapshot failed: {snap.stderr[-800:]}")

    def scan_cmd(config_file: Path) -> list[str]:
        cli = [sys.executable, "-m", "audit.cli"]
        return [*cli, "records", "scan", "--config", str(config_file), "--run", str(run)]

    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if kcat is None:
        raise SystemExit("kcat is not installed: make bench-records installs it (apt-get install kcat)")
    base_cmds = [
        [kcat, "-C", "-b", c.bootstrap, "-t", topic, "-o", "beginning", "-e", "-q", "-f", ""]
        for c in state.clusters
    ]
    config = load_config(cfg)
    spark = build_spark(SparkConfig(master="local[*]"))
    chunks = root / f"chunks-{records}"

    def scan() -> None:
        _scan(spark, config, topic, records, chunks)

    def scan_native() -> None:
        _scan(spark, config, topic, records, chunks, "native")

    def step() -> None:
        collect_records(spark, config, run / "source", run / "destination", root / "reports", full=True)
        _check_no_divergence(run)

    def fresh(cmd: list[str]) -> Measured:
        measured = run_commands([[*cmd, "--full"]])
        _check_no_divergence(run)
        return measured

    scan()  # warm the session: Python workers, JIT, the readers' first connections
    scan_native()
    sides: dict[str, Callable[[], Measured]] = {
        "scan": lambda: in_session(scan),
        "scan-native": lambda: in_session(scan_native),
        "step": lambda: in_session(step),
        "cli": lambda: fresh(scan_cmd(cfg)),
        "kcat": lambda: run_commands(base_cmds),
    }
    return best_of(sides, rounds, f"{records} records")


LABELS = {
    "scan": "records scan (running session)",
    "scan-native": "the same, librdkafka reader",
    "step": "scan + compare (running session)",
    "cli": "mirror-audit records scan (CLI)",
    "kcat": "kcat x 2 (both clusters)",
}


def main() -> None:
    args = size_arguments(__doc__.splitlines()[0], 5_000_000, 20_000_000)
    setup_logging()
    stop_on_sigterm()
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-records-") as tmp:
        root = Path(tmp)
        with running(SandboxOptions(workdir=root / "sandbox", heap_mb=1024)) as state:
            for n in (args.records, args.large):
                results[n] = _measure(state, root, n, args.rounds)
    margin = print_rates(results, LABELS, args.records, args.large)
    print_results("record-scan", margin, results, args.records)


if __name__ == "__main__":
    main()
