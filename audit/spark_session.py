"""The one place a SparkSession is built, from the ``spark`` section of the config.

``local[*]`` is the embedded default; the same jobs run under spark-submit on a cluster,
where ``getOrCreate`` picks up the session spark-submit made.
"""

from __future__ import annotations

import logging
from typing import Any

from audit.config import SparkConfig

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
    if cfg.master.startswith("local"):
        import sys

        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # Python tasks (the batch and record scans) run in this interpreter's environment,
        # where this package and its dependencies are installed, not in whatever python3
        # is first on the PATH.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        # Spark's 200 shuffle partitions are for clusters; on one machine a few per core do.
        defaults["spark.sql.shuffle.partitions"] = str(max(2, 2 * (os.cpu_count() or 1)))
    builder = SparkSession.builder.master(cfg.master).appName(cfg.app_name)
    for key, value in {**defaults, **cfg.conf}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    log.debug("spark session %s on %s", session.version, cfg.master)
    return session
