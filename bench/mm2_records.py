"""Benchmark: mode mm2's records scan against raw consumption by kcat over both clusters, side
by side in one run, at two topic sizes for the marginal rate.

MirrorMaker 2's copies sit at offsets of the target's choosing, so its records scan reads
each side on its own and keeps a content digest per record (audit/collect/records/digests.py)
where mode cluster-mirroring's keeps a checksum per chunk (bench/records.py). Setup: the
sandbox's source gets ``bench-mm2-N`` (8 partitions, N records of about 200 bytes with a key
and a header, lz4 batches, as bench/records.py produces them) and its destination the same
records as ``source.bench-mm2-N``, the replica MirrorMaker 2 names so, and the snapshot
offset syncs pairing each partition's first and last offsets, as a MirrorMaker 2 that
copied them would have left. How the copy got there does not change what the scan costs; a
real MirrorMaker 2 copying millions of records would make the setup minutes longer and
measure nothing more. Then, interleaved for --rounds rounds:

- ours (the RESULT lines): ``collect_digests`` in a Spark session that is already running,
  as in the nightly job (``local[*]``, warmed by one untimed scan): both sides of every
  in-scope partition read by the batch reader and matched as they are read (a digest per
  record, aligned), ``record_alignments``, ``record_digest_ranges`` and the runs written;
  checked to have matched every record of both sides, none missing, and to have kept no
  digest (nothing needed them);
- baseline: kcat -C -e -q -f '' on both topics at once (two processes), every partition from
  the beginning to the end, to /dev/null.

Rates are records per second over both clusters (2 x --records); the marginal rate of a side
is 2 x (N2 - N1) / (t2 - t1) between --records and --large, what a scan pays per record once
its fixed cost (Spark's jobs, the readers' connections) is paid. CPU and peak memory are
measured as bench/records.py measures them (bench/measure.py).

Run: make bench-mm2-records (installs kcat with apt-get where it is missing). The last lines
are RESULT mm2-record-scan-marginal and RESULT mm2-record-scan, each ours=<records/s>
baseline=<records/s> ratio=<ours/baseline>.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import stop_on_sigterm
from measure import Measured, best_of, in_session, print_rates, print_results, run_commands, size_arguments
from records import produce

from audit.collect.records.digests import collect_digests
from audit.config import SparkConfig
from audit.config_file import load_config
from audit.logs import setup_logging
from audit.sandbox.cluster import SandboxOptions, running
from audit.sandbox.state import SandboxState
from audit.snapshot import Mm2OffsetSyncRecord, write_table
from audit.spark_session import build_spark

log = logging.getLogger("bench.mm2_records")

REPLICA_PREFIX = "source."  # MirrorMaker 2's default replication policy, source alias "source"


def write_config(state: SandboxState, topic: str, path: Path, root: Path) -> Path:
    """Mode mm2 over both sandbox clusters, ``topic`` only, records read, ranges split every
    1 M offsets, Spark on every core."""
    path.write_text(
        "mode: mm2\n"
        f"source:\n  bootstrap_servers: {state.cluster('source').bootstrap}\n"
        f"destination:\n  bootstrap_servers: {state.cluster('destination').bootstrap}\n"
        f"scope:\n  topics:\n    include: ['{topic}']\n"
        "records:\n  enabled: true\n  chunk_records: 100000\n  split_records: 1000000\n"
        "spark:\n  master: local[*]\n"
        f"output:\n  root: {root / 'reports'}\n"
    )
    return path


def _add_syncs(source: Path, topic: str, records: int) -> None:
    """Offset syncs at each partition's first and last offset (records are dealt round
    robin over 8 partitions, the same at each offset on both sides)."""
    per = records // 8
    syncs = tuple(
        Mm2OffsetSyncRecord(topic, p, o, o, 0, 2 * p + i, None)
        for p in range(8)
        for i, o in enumerate((0, per - 1))
    )
    write_table(source, "mm2_offset_syncs", syncs)


def _check_matched(run: Path, records: int) -> None:
    """Every record of both sides matched as read, none missing, no digest kept: a scan that
    stopped short, or fell back, measured something else."""
    import pyarrow.dataset as ds

    rows = (
        ds.dataset(str(run / "source" / "record_alignments.parquet"), format="parquet").to_table().to_pylist()
    )
    src = sum(r["compared_src_records"] or 0 for r in rows)
    dst = sum(r["compared_dst_records"] or 0 for r in rows)
    odd = [r for r in rows if r["fallback"] is not None or r["missing_records"] or r["digests_kept"]]
    if (src, dst) != (records, records) or odd:
        raise SystemExit(f"the scan matched {src:,} and {dst:,} records of {records:,} a side: {odd[:2]}")


def _measure(state: SandboxState, root: Path, records: int, rounds: int, spark: Any) -> dict[str, Measured]:
    topic = f"bench-mm2-{records}"
    produce(state, topic, records, replica=REPLICA_PREFIX + topic)
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
    _add_syncs(run / "source", topic, records)
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if kcat is None:
        raise SystemExit("kcat is not installed: make bench-mm2-records installs it (apt-get install kcat)")
    base_cmds = [
        [kcat, "-C", "-b", c.bootstrap, "-t", t, "-o", "beginning", "-e", "-q", "-f", ""]
        for c, t in zip(state.clusters, (topic, REPLICA_PREFIX + topic), strict=True)
    ]
    config = load_config(cfg)

    def scan() -> None:
        collect_digests(spark, config, run / "source", run / "destination", None)  # every record, each round
        _check_matched(run, records)

    scan()  # warm the session: Python workers, JIT, the reader's first connections
    sides: dict[str, Callable[[], Measured]] = {
        "scan": lambda: in_session(scan),
        "kcat": lambda: run_commands(base_cmds),
    }
    return best_of(sides, rounds, f"{records} records")


LABELS = {"scan": "mm2 records scan (running session)", "kcat": "kcat x 2 (both clusters)"}


def main() -> None:
    args = size_arguments(__doc__.splitlines()[0], 2_000_000, 8_000_000)
    setup_logging()
    stop_on_sigterm()
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-mm2-records-") as tmp:
        root = Path(tmp)
        spark = build_spark(SparkConfig(master="local[*]"))
        with running(SandboxOptions(workdir=root / "sandbox", heap_mb=1024)) as state:
            for n in (args.records, args.large):
                results[n] = _measure(state, root, n, args.rounds, spark)
    margin = print_rates(results, LABELS, args.records, args.large)
    print_results("mm2-record-scan", margin, results, args.records)


if __name__ == "__main__":
    main()
