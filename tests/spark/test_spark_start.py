"""A Spark session that cannot start (issue 53): one line and exit 2, never the JVM's
100-line trace, never the password Spark's own log line quotes. Each case is a fresh
``mirror-audit`` process: the JVM it starts is its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli import run_cli
from tests.output_roots import snapshot_pair


@pytest.mark.parametrize(
    ("spark_section", "expected"),
    [
        ("  master: 'spark://auditor:PW-MARK-53@spark-master.example:7077'\n", "Invalid master URL"),
        (
            "  conf:\n    spark.eventLog.enabled: 'true'\n"
            "    spark.eventLog.dir: 's3a://AKIA-MARK-53:PW-MARK-53@bucket/events'\n",
            "S3AFileSystem not found",
        ),
    ],
    ids=["bad-master-url", "event-log-dir-without-its-jar"],
)
def test_a_spark_start_failure_is_one_line_exit_2_without_the_secret(
    tmp_path: Path, spark_section: str, expected: str
) -> None:
    config = tmp_path / "audit.yaml"
    config.write_text("spark:\n" + spark_section)
    src, dst = snapshot_pair(tmp_path / "snap")
    proc = run_cli(
        "audit", "--source", str(src), "--destination", str(dst), "--out", str(tmp_path / "run"),
        "--engine", "spark", "--config", str(config),
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output[-3000:]
    assert "MARK-53" not in output
    assert "Traceback" not in output and "\tat " not in output
    # The JVM's own log (log4j's banner, its ERROR line) stays out of the terminal.
    assert "log4j" not in output and "ERROR SparkContext" not in output
    (line,) = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
    assert "Spark could not start" in line and expected in line
