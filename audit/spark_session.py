"""The one place a SparkSession is built, from the ``spark`` section of the config.

``local[*]`` is the embedded default; the same jobs run under spark-submit on a cluster,
where ``getOrCreate`` picks up the session spark-submit made.

The JVM this process starts writes its own log to stdout and stderr: log4j's lines,
which quote settings verbatim (a master URL's password), and a hundred-line Java trace
for a session that fails to start. Its output is read from a pipe and logged at debug
level, masked like every log line (``--verbose`` shows it); a session that cannot start
is one ``SparkStartError`` line.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Iterator
from typing import Any

from audit import worker_malloc
from audit.config import SparkConfig
from audit.errors import SparkStartError
from audit.logs import mask_secrets, register_secrets
from audit.redaction import redact_uri, spark_secrets

log = logging.getLogger(__name__)
# The JVM's own output, line by line (debug: shown with --verbose).
jvm_log = logging.getLogger("audit.spark.jvm")

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
    """The session of this process: the active one where there is one, else one started
    from ``cfg`` (``SparkStartError`` where Spark cannot start)."""
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
    # Before the JVM starts: its lines quote the settings, and are masked as they are logged.
    register_secrets(spark_secrets(cfg))
    try:
        _launch_jvm(wanted)
        builder = SparkSession.builder
        for key, value in wanted.items():
            builder = builder.config(key, value)
        session = builder.getOrCreate()
    except Exception as exc:  # Py4JJavaError, PySparkRuntimeError, ...: why Spark did not start
        raise SparkStartError(start_failure(cfg, exc)) from None
    session.sparkContext.setLogLevel("WARN")
    log.debug("spark session %s on %s", session.version, session.sparkContext.master)
    return session


def _launch_jvm(wanted: dict[str, str]) -> None:
    """Start the JVM as PySpark would (spark-submit with ``wanted`` as its --conf), its
    stdout and stderr into a pipe this process reads and logs line by line (``_relay``),
    unless a JVM is running already (an earlier session's, or spark-submit's: its output
    belongs to whoever started it). The reader runs before the JVM starts, so a JVM that
    writes much before it answers never blocks on a full pipe."""
    import subprocess
    import threading

    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    conf = SparkConf()  # no JVM yet: a plain mapping, handed to spark-submit as --conf
    for key, value in wanted.items():
        conf.set(key, value)
    read_end, write_end = os.pipe()
    threading.Thread(target=_relay, args=(read_end,), name="spark-jvm-output", daemon=True).start()
    try:
        gateway = launch_gateway(  # type: ignore[no-untyped-call]
            conf, popen_kwargs={"stdout": write_end, "stderr": subprocess.STDOUT}
        )
    finally:
        os.close(write_end)  # the JVM holds its own copy: the reader ends when the JVM does
    SparkContext._ensure_initialized(gateway=gateway)


def _relay(fd: int) -> None:
    with open(fd, "rb") as stream:
        for raw in stream:
            line = raw.decode("utf-8", "replace").rstrip()
            if line:
                jvm_log.debug("%s", line)


# A Java class name as the line of an exception gives it: its package dropped.
_JAVA_CLASS = re.compile(r"\b(?:[a-z_$][\w$]*\.)+([A-Z][\w$]*(?:Exception|Error))\b")
_START_HINTS = (
    ("Invalid master URL", "spark.master takes local[N], spark://HOST:PORT, yarn or k8s://URL"),
    ("ClassNotFoundException", "a jar is missing from Spark's classpath: add it with spark.jars.packages"),
    ("JAVA_GATEWAY_EXITED", "is Java 17 or later installed, and JAVA_HOME set?"),
)


def start_failure(cfg: SparkConfig, exc: BaseException) -> str:
    """Why a session did not start, in one line: the Java exception's own line (py4j puts
    it after ": " below its first line) with short class names, a hint where the cause is
    a known one, credentials hidden (the configuration's secrets, and every URL by the
    redaction rule). Never the Java stack trace."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    java = next((ln[1:].strip() for ln in lines[1:] if ln.startswith(":")), None)
    detail = _JAVA_CLASS.sub(r"\1", java or (lines[0] if lines else type(exc).__name__))
    hint = next((h for key, h in _START_HINTS if key in str(exc)), None)
    text = f"Spark could not start (spark.master {cfg.master}): {detail}"
    text += f" ({hint}; --verbose shows Spark's own log)" if hint else " (--verbose shows Spark's own log)"
    for secret in sorted(spark_secrets(cfg), key=len, reverse=True):
        text = text.replace(secret, "***")
    return mask_secrets(text)


def _submitted_conf() -> dict[str, str]:
    """The settings spark-submit passed this driver (its --master, --conf, properties
    file), or nothing when this process was not started by spark-submit."""
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
