"""``make cluster-demo``: the demo's nightly job submitted to a Spark standalone cluster.

The demo's sandbox is prepared as ``make demo`` prepares it (traffic, mirror, faults);
a master and two workers start on loopback (``spark_cluster``); the nightly job goes to
them with ``spark-submit --master spark://127.0.0.1:PORT`` in client deploy mode, as the
docs/operations.md's "Running on a Spark cluster" tells users, its configuration in a file like any
user's. The package and its compiled record reader reach the executors installed on the
workers: a virtual environment where the wheels are installed (from a checkout, built
first), at one path every worker sees, named by ``spark.pyspark.python``. Measured against
shipping a packed environment with ``--archives`` (docs/benchmarks.md): the same results,
the archive costing each job its upload and unpacking per executor. Everything it started
is stopped, also on failure.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from audit.errors import SandboxError
from audit.fsutil import atomic_write_text
from audit.paths import local_path
from audit.run_dirs import new_run_dir
from audit.sandbox import demo, spark_cluster
from audit.sandbox.cluster import default_workdir

log = logging.getLogger(__name__)


def submit_command(master: str, python: str, args: list[str]) -> list[str]:
    """spark-submit of the ``mirror-audit`` entry point of ``python``'s environment with
    ``args``, in client mode, driver and executors on that interpreter."""
    entry = subprocess.run(
        [
            python,
            "-c",
            "import audit.cli, pathlib; print(pathlib.Path(audit.cli.__file__).parent / '__main__.py')",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
    ).stdout.strip()
    return [
        str(spark_cluster.spark_home() / "bin" / "spark-submit"),
        "--master",
        master,
        "--deploy-mode",
        "client",
        "--conf",
        f"spark.pyspark.python={python}",
        "--conf",
        f"spark.pyspark.driver.python={python}",
        entry,
        *args,
    ]


def worker_python(directory: Path) -> str:
    """The interpreter of an environment where the package is installed from its wheel:
    this one when it is, else one built in ``directory`` from this checkout's wheels (the
    project's and the record reader's, ``native/``)."""
    package = Path(__file__).resolve().parents[1]  # the installed or checked-out audit/
    if "site-packages" in package.parts:
        return sys.executable
    checkout = package.parent
    wheels, venv = directory / "wheels", directory / "venv"
    shutil.rmtree(directory, ignore_errors=True)
    log.info("building the wheels and the workers' environment in %s", directory)
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(wheels), str(checkout)])
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "-w",
            str(wheels),
            str(checkout / "native"),
        ]
    )
    _run([sys.executable, "-m", "venv", str(venv)])
    _run([str(venv / "bin" / "pip"), "install", "--quiet", *map(str, sorted(wheels.glob("*.whl")))])
    return str(venv / "bin" / "python")


def _run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SandboxError(f"{cmd[0]} {cmd[1] if len(cmd) > 1 else ''} failed: {proc.stderr.strip()[-500:]}")


def run_cluster_demo(
    out: Path | None = None, workdir: Path | None = None, output_root: Path = Path("reports")
) -> tuple[int, dict[str, Any], Path]:
    """The faulty demo, its nightly job on the cluster: (spark-submit's exit code, the
    summary, the run directory)."""
    workdir = workdir or default_workdir()
    python = worker_python(workdir / "spark-env")
    with (
        demo.prepared(healthy=False, workdir=workdir) as state,
        spark_cluster.running(workdir / "spark-cluster") as cluster,
    ):
        cfg = demo.demo_config(state, local_path(output_root))
        run_dir = local_path(out) if out is not None else new_run_dir(cfg)
        config = workdir / "cluster-demo.yaml"
        atomic_write_text(config, yaml.safe_dump(cfg.redacted(), sort_keys=False))
        cmd = submit_command(
            cluster.master_url, python, ["nightly", "--config", str(config), "--out", str(run_dir)]
        )
        log.info("submitting: %s", " ".join(cmd))
        env = {k: v for k, v in spark_cluster.spark_env().items() if k != "PYTHONPATH"}
        proc = subprocess.run(cmd, env=env, check=False, timeout=3600, cwd=workdir)
    summary_path = run_dir / "summary.json"
    if not summary_path.is_file():
        raise SandboxError(
            f"the job on the Spark cluster wrote no summary (exit {proc.returncode}); see above"
        )
    return proc.returncode, json.loads(summary_path.read_text(encoding="utf-8")), run_dir
