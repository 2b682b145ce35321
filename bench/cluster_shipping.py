"""Benchmark: how the package and its compiled record reader reach Spark executors.

A Spark standalone master and two workers on loopback (``audit.sandbox.spark_cluster``),
the same job submitted twice per round with spark-submit in client mode: a deep segment
scan (``segments scan --deep``: Python tasks on the executors, each reading batches with
the compiled reader and recomputing every CRC-32C) of a small log tree.

- ours:     the wheels installed into a virtual environment every worker sees at one path,
            named by spark.pyspark.python (what ``make cluster-demo`` does);
- baseline: that environment packed with venv-pack and shipped with the job through
            --archives, spark.pyspark.python=./environment/bin/python (what YARN and
            Kubernetes users do when nothing is installed on the workers).

Both write the same batches table (checked). Run: make bench-cluster (or .venv/bin/python
bench/cluster_shipping.py [--rounds N]). The last line is
RESULT cluster-shipping ours=<s> baseline=<s> ratio=<ours/baseline> (median seconds per job).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from audit.sandbox import spark_cluster
from audit.sandbox.demo_cluster import submit_command, worker_python
from tests.spark.test_batch_audit import source_tree

log = logging.getLogger("bench.cluster_shipping")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        root = Path(tmp)
        python = worker_python(root / "env")
        started = time.monotonic()
        env_dir = Path(python).parent.parent
        subprocess.run([str(env_dir / "bin" / "pip"), "install", "--quiet", "venv-pack"], check=True)
        archive = root / "audit-env.tar.gz"
        subprocess.run(
            [str(env_dir / "bin" / "venv-pack"), "-p", str(env_dir), "-o", str(archive), "-q"], check=True
        )
        log.info(
            "packed %s (%.0f MB) in %.0fs",
            archive.name,
            archive.stat().st_size / 1e6,
            time.monotonic() - started,
        )
        tree = source_tree(root / "logs")
        env = {k: v for k, v in spark_cluster.spark_env().items() if k != "PYTHONPATH"}
        times: dict[str, list[float]] = {"installed": [], "archives": []}
        rows: dict[str, int] = {}
        with spark_cluster.running(root / "cluster") as cluster:
            for rnd in range(args.rounds):
                for way, taken in times.items():
                    out = root / f"{way}-{rnd}"
                    job = ["segments", "scan", str(tree), "--deep", "--out", str(out), "--role", "source"]
                    cmd = submit_command(cluster.master_url, python, job)
                    if way == "archives":
                        at = cmd.index("--conf")
                        cmd[at:at] = ["--archives", f"{archive}#environment"]
                        cmd[cmd.index(f"spark.pyspark.python={python}")] = (
                            "spark.pyspark.python=./environment/bin/python"
                        )
                    t = time.monotonic()
                    subprocess.run(cmd, env=env, check=True, capture_output=True, cwd=root)
                    taken.append(time.monotonic() - t)
                    rows[way] = pq.read_table(out / "batches.parquet").num_rows
                    log.info("%s round %d: %.1fs, %d batches", way, rnd, taken[-1], rows[way])
        assert rows["installed"] == rows["archives"] > 0, rows
        ours, base = statistics.median(times["installed"]), statistics.median(times["archives"])
        print(f"installed: {times['installed']}\narchives:  {times['archives']}")
        print(f"RESULT cluster-shipping ours={ours:.1f} baseline={base:.1f} ratio={ours / base:.2f}")


if __name__ == "__main__":
    main()
