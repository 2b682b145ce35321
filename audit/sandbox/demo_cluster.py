"""``make cluster-demo``: the demo's nightly job submitted to a Spark standalone cluster.

The demo's sandbox is prepared as ``make demo`` prepares it (traffic, mirror, faults);
a master and two workers start on loopback (``spark_cluster``); the nightly job goes to
them with ``spark-submit --master spark://127.0.0.1:PORT`` in client deploy mode, as the
README's "Running on a Spark cluster" tells users, its configuration in a file like any
user's. The executors' Python is this environment, where the package and its compiled
record reader are installed (on one host every worker sees it at the same path: the
"installed on the workers" way of shipping it). Everything it started is stopped, also on
failure.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

import audit.cli
from audit.errors import SandboxError
from audit.fsutil import atomic_write_text
from audit.paths import local_path
from audit.pipeline import new_run_dir
from audit.sandbox import demo, spark_cluster
from audit.sandbox.cluster import default_workdir

log = logging.getLogger(__name__)


def submit_command(master: str, args: list[str]) -> list[str]:
    """spark-submit of the ``mirror-audit`` entry point with ``args``, in client mode."""
    entry = Path(audit.cli.__file__).parent / "__main__.py"
    return [
        str(spark_cluster.spark_home() / "bin" / "spark-submit"),
        "--master",
        master,
        "--deploy-mode",
        "client",
        "--conf",
        f"spark.pyspark.python={sys.executable}",
        str(entry),
        *args,
    ]


def run_cluster_demo(
    out: Path | None = None, workdir: Path | None = None, output_root: Path = Path("reports")
) -> tuple[int, dict[str, Any], Path]:
    """The faulty demo, its nightly job on the cluster: (spark-submit's exit code, the
    summary, the run directory)."""
    workdir = workdir or default_workdir()
    with (
        demo.prepared(healthy=False, workdir=workdir) as state,
        spark_cluster.running(workdir / "spark-cluster") as cluster,
    ):
        cfg = demo.demo_config(state, local_path(output_root))
        run_dir = local_path(out) if out is not None else new_run_dir(cfg)
        config = workdir / "cluster-demo.yaml"
        atomic_write_text(config, yaml.safe_dump(cfg.redacted(), sort_keys=False))
        cmd = submit_command(cluster.master_url, ["nightly", "--config", str(config), "--out", str(run_dir)])
        log.info("submitting: %s", " ".join(cmd))
        proc = subprocess.run(cmd, env=spark_cluster.spark_env(), check=False, timeout=3600)
    summary_path = run_dir / "summary.json"
    if not summary_path.is_file():
        raise SandboxError(
            f"the job on the Spark cluster wrote no summary (exit {proc.returncode}); see above"
        )
    return proc.returncode, json.loads(summary_path.read_text(encoding="utf-8")), run_dir
