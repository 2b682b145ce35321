"""A Spark standalone cluster on loopback: one master and its workers, started from the
pyspark package's own ``spark-class`` (pip's pyspark ships no start-master.sh), so the
nightly job can be submitted the way it is on a real cluster: ``spark-submit --master
spark://127.0.0.1:PORT`` in client deploy mode, its Python tasks in executor processes
that are not the driver.

Processes are recorded by pid and /proc start time like the brokers, and stopped even when
the caller fails (``running``).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import os
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from audit.errors import SandboxError
from audit.java_runtime import find_java
from audit.sandbox.broker_config import free_ports
from audit.sandbox.processes import start_process, stop_process

log = logging.getLogger(__name__)

MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"


@dataclass(frozen=True)
class SparkCluster:
    master_url: str
    ui_url: str
    processes: tuple[tuple[int, int], ...]  # (pid, start ticks), master first
    workdir: str


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def spark_env() -> dict[str, str]:
    """The environment spark-class and spark-submit need: this pyspark as SPARK_HOME, the
    sandbox's Java, loopback, and this interpreter for Python on both sides."""
    java = Path(find_java()).resolve()
    return {
        **os.environ,
        "SPARK_HOME": str(spark_home()),
        "JAVA_HOME": str(java.parent.parent),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_NO_DAEMONIZE": "1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }


def start(
    workdir: Path, workers: int = 2, cores: int = 1, memory_mb: int = 1024, timeout: float = 90
) -> SparkCluster:
    """A master and ``workers`` workers, each with ``cores`` cores, registered and alive."""
    workdir.mkdir(parents=True, exist_ok=True)
    port, ui_port, *worker_ui = free_ports(2 + workers)
    spark_class = str(spark_home() / "bin" / "spark-class")
    env = spark_env()
    started: list[tuple[int, int]] = []
    try:
        started.append(
            start_process(
                [
                    spark_class,
                    MASTER,
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--webui-port",
                    str(ui_port),
                ],
                workdir / "master.log",
                env,
            )
        )
        master_url = f"spark://127.0.0.1:{port}"
        ui_url = f"http://127.0.0.1:{ui_port}"
        for i in range(workers):
            wdir = workdir / f"worker-{i + 1}"
            wdir.mkdir(exist_ok=True)
            started.append(
                start_process(
                    [
                        spark_class,
                        WORKER,
                        "--host",
                        "127.0.0.1",
                        "--cores",
                        str(cores),
                        "--memory",
                        f"{memory_mb}m",
                        "--webui-port",
                        str(worker_ui[i]),
                        "--work-dir",
                        str(wdir),
                        master_url,
                    ],
                    workdir / f"worker-{i + 1}.log",
                    env,
                )
            )
        cluster = SparkCluster(master_url, ui_url, tuple(started), str(workdir))
        _wait_workers(cluster, workers, timeout)
    except BaseException:
        for pid, ticks in reversed(started):
            stop_process(pid, ticks, 20)
        raise
    log.info("spark standalone cluster up: %s, %d workers (logs in %s)", master_url, workers, workdir)
    return cluster


def _wait_workers(cluster: SparkCluster, workers: int, timeout: float) -> None:
    """Until the master's status page lists ``workers`` ALIVE workers. A page that does not
    answer, or answers with what is not its JSON yet (an empty body while the master's web
    server starts, seen on a busy machine), is a master not up yet, until the timeout."""
    deadline = time.monotonic() + timeout
    alive = 0
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{cluster.ui_url}/json/", timeout=5) as resp:
                status = json.load(resp)
            alive = sum(1 for w in status.get("workers", []) if w.get("state") == "ALIVE")
            if alive >= workers:
                return
        except (OSError, ValueError, http.client.HTTPException):
            pass
        time.sleep(0.5)
    raise SandboxError(
        f"the Spark standalone master saw {alive} of {workers} workers within {timeout:.0f}s; "
        f"see the logs in {cluster.workdir}"
    )


def stop(cluster: SparkCluster, timeout: float = 30) -> None:
    """Workers first, then the master: each by pid and start time."""
    for pid, ticks in reversed(cluster.processes):
        stop_process(pid, ticks, timeout)


@contextlib.contextmanager
def running(workdir: Path, workers: int = 2) -> Iterator[SparkCluster]:
    cluster = start(workdir, workers)
    try:
        yield cluster
    finally:
        stop(cluster)
