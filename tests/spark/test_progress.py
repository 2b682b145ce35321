"""Progress of a long Spark stage (audit/progress.py), on the suite's Spark session: a log
line every N seconds off a terminal, a line rewritten in place on one, both counting the
tasks of the jobs started inside the block and no others."""

from __future__ import annotations

import io
import logging
import re
import time
from typing import Any

import pytest

from audit.progress import PROGRESS_EVERY, spark_progress


def _slow_job(spark: Any, tasks: int = 4, seconds: float = 0.6) -> None:
    def slow(rows: Any) -> Any:
        time.sleep(seconds)
        return rows

    spark.sparkContext.parallelize(range(tasks), tasks).mapPartitions(slow).count()


@pytest.fixture
def every() -> Any:
    saved = PROGRESS_EVERY[0]
    PROGRESS_EVERY[0] = 0.2
    yield
    PROGRESS_EVERY[0] = saved


def test_off_a_terminal_progress_is_a_log_line_every_n_seconds(
    spark: Any, every: None, caplog: pytest.LogCaptureFixture
) -> None:
    _slow_job(spark, tasks=2, seconds=0.1)  # a job outside the block: never counted
    with (
        caplog.at_level(logging.INFO, logger="audit.progress"),
        spark_progress(spark, "records scan", io.StringIO()),
    ):
        _slow_job(spark)
    lines = [r.getMessage() for r in caplog.records if r.name == "audit.progress"]
    assert lines, "no progress line while the job ran"
    pattern = (
        r"records scan: (\d+)/(\d+) tasks done( \(\d+%\))?, \d+ running, [\d.]+ tasks/s, \d+:\d\d elapsed"
    )
    # Before Spark has planned the job's stage (slow on a loaded machine) the line says so.
    starting = r"records scan: starting, \d+:\d\d elapsed"
    counting = [re.fullmatch(pattern, line) for line in lines if not re.fullmatch(starting, line)]
    assert counting, f"no line counted the job's tasks: {lines}"
    for match in counting:
        assert match, lines
        assert int(match[1]) <= int(match[2]) == 4, match[0]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_line_is_rewritten_in_place_and_cleared_at_the_end(spark: Any) -> None:
    out = _Terminal()
    sc = spark.sparkContext
    sc.setJobGroup("callers-group", "the caller's")
    try:
        with spark_progress(spark, "batch scan", out):
            _slow_job(spark, tasks=2, seconds=1.2)
        assert sc.getLocalProperty("spark.jobGroup.id") == "callers-group"  # restored
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    text = out.getvalue()
    assert "\r\x1b[Kbatch scan: " in text and "/2 tasks done" in text, text
    assert text.endswith("\r\x1b[K"), text[-80:]
    assert "\n" not in text
