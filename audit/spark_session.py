"""The one place a SparkSession is built, from the ``spark`` section of the config.

``local[*]`` is the embedded default; the same jobs run under spark-submit on a cluster,
where ``getOrCreate`` picks up the session spark-submit made.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from audit import worker_malloc
from audit.config import SparkConfig
from audit.redaction import redact_uri

log = logging.getLogger(__name__)

# Quiet, reproducible defaults for an auditor: no UI port opened on an operator's host,
# session time zone fixed so timestamps in reports do not depend on the machine; Python
# workers forked from this package's daemon, which spares each task a re-read of the
# zip archives on the workers' path (``audit.spark_daemon``).
_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.python.daemon.module": "audit.spark_daemon",
}


def build_spark(cfg: SparkConfig) -> Any:
    import os

    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        # Whoever made the session (spark-submit, a notebook, the test fixture) owns its
        # settings: getOrCreate would overwrite their SQL confs with ours.
        return active
    # The embedded default binds Spark to loopback (no hostname lookup warning, no open port
    # on the host's network); a cluster master keeps whatever spark-submit set.
    defaults = dict(_DEFAULTS)
    if cfg.master.startswith("local") and "PYSPARK_GATEWAY_PORT" not in os.environ:
        import sys

        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # Python tasks (the batch and record scans) run in this interpreter's environment,
        # where this package and its dependencies are installed, not in whatever python3
        # is first on the PATH.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        # Spark's 200 shuffle partitions are for clusters; on one machine a few per core do.
        defaults["spark.sql.shuffle.partitions"] = str(max(2, 2 * (os.cpu_count() or 1)))
    # The workers' allocator is chosen by their daemon on each executor (audit.worker_malloc).
    defaults[f"spark.executorEnv.{worker_malloc.ENV}"] = cfg.worker_malloc
    wanted = {"spark.master": cfg.master, "spark.app.name": cfg.app_name, **defaults, **cfg.conf}
    given = _submitted_conf()
    if given:
        # Under spark-submit its --master, --conf and spark-defaults.conf win over the
        # configuration file's spark section, as with any Spark application.
        log.debug("spark-submit set %s; the spark section fills in the rest", ", ".join(sorted(given)))
        wanted = {k: v for k, v in wanted.items() if k not in given}
    builder = SparkSession.builder
    for key, value in wanted.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    log.debug("spark session %s on %s", session.version, session.sparkContext.master)
    return session


def _submitted_conf() -> dict[str, str]:
    """The settings spark-submit passed this driver (its --master, --conf, properties
    file), or nothing when this process was not started by spark-submit."""
    import os

    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # spark-submit's PythonRunner sets it
        return {}
    from pyspark import SparkConf, SparkContext

    # SparkConf reads the JVM's spark.* properties only once the gateway is up.
    SparkContext._ensure_initialized()
    return dict(SparkConf().getAll())


def run_info(session: Any) -> dict[str, Any]:
    """What summary.json's run section says of the Spark application: its master and how
    many executors ran tasks (from Spark's status store, which the listener bus keeps
    with the UI off; in local mode the driver is the one executor)."""
    sc = session.sparkContext
    try:
        summaries = sc._jvm.scala.jdk.javaapi.CollectionConverters.asJava(
            sc._jsc.sc().statusStore().executorList(False)
        )
        ran = [e for e in summaries if e.totalTasks() > 0]
        executors: int | None = len([e for e in ran if e.id() != "driver"]) or len(ran)
    except Exception:  # a private API: its absence costs the figure, not the run
        log.debug("executor summaries unavailable", exc_info=True)
        executors = None
    return {"spark_master": redact_uri(sc.master), "spark_executors_ran_tasks": executors}


@contextlib.contextmanager
def sql_conf(spark: Any, key: str, value: str) -> Iterator[None]:
    """A SQL setting for a block, where whoever made the session has not set it already;
    unset again after (the session may be a notebook's or spark-submit's)."""
    if spark.conf.get(key, None) is not None:
        yield
        return
    spark.conf.set(key, value)
    try:
        yield
    finally:
        spark.conf.unset(key)
