"""Progress of a long Spark stage (a records scan, a segments scan or fetch) a person can follow.

A records scan over a few billion records runs for minutes to hours; without this the log
says nothing between "started" and "done". The figures come from Spark's status tracker:
the tasks of every job the stage started (each task a group of offset ranges or of segment
splits), done of total, the rate and the time elapsed. On a terminal the line is rewritten
in place about twice a second; elsewhere (a CI log, a CronJob's log collector, a Python
caller) it is an INFO log line every ``PROGRESS_EVERY`` seconds (``--progress-every``),
so a log shows the run is alive and how far along it is.
"""

from __future__ import annotations

import itertools
import logging
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

log = logging.getLogger(__name__)

# Seconds between two progress lines when stderr is not a terminal (0: none).
PROGRESS_EVERY = [30.0]
_TTY_EVERY = 0.5
_groups = itertools.count(1)


def set_progress_every(seconds: float) -> None:
    PROGRESS_EVERY[0] = seconds


@dataclass(frozen=True)
class Progress:
    """Tasks of a stage's Spark jobs: done, running and known so far (a stage that runs
    several jobs, such as the narrowing of mismatching chunks, adds each job's tasks as
    the job starts)."""

    done: int
    running: int
    total: int
    elapsed: float

    def line(self, what: str) -> str:
        if not self.total:
            return f"{what}: starting, {_clock(self.elapsed)} elapsed"
        rate = self.done / self.elapsed if self.elapsed > 0 else 0.0
        pct = f" ({100 * self.done // self.total}%)"
        return (
            f"{what}: {self.done}/{self.total} tasks done{pct}, {self.running} running, "
            f"{rate:.2f} tasks/s, {_clock(self.elapsed)} elapsed"
        )


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def poll(tracker: Any, group: str, elapsed: float) -> Progress:
    """The tasks of every job started under the job group ``group`` (finished stages too)."""
    done = running = total = 0
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        for stage_id in job.stageIds if job is not None else ():
            stage = tracker.getStageInfo(stage_id)
            if stage is None:
                continue
            done += stage.numCompletedTasks
            running += stage.numActiveTasks
            total += stage.numTasks
    return Progress(done, running, total, elapsed)


@contextmanager
def spark_progress(spark: Any, what: str, out: TextIO | None = None) -> Iterator[None]:
    """Show the progress of the Spark jobs run inside the block, named ``what``.

    The jobs are tagged with a job group of their own (restored after); a daemon thread
    polls the status tracker. Nothing is shown for a block that ends within a poll."""
    sc = spark.sparkContext
    group = f"mirror-audit-progress-{next(_groups)}"
    previous = sc.getLocalProperty("spark.jobGroup.id")
    previous_description = sc.getLocalProperty("spark.job.description")
    sc.setJobGroup(group, what)
    stream = sys.stderr if out is None else out
    tty = stream.isatty()
    every = _TTY_EVERY if tty else PROGRESS_EVERY[0]
    stop = threading.Event()
    start = time.monotonic()
    shown = [False]

    def run() -> None:
        tracker = sc.statusTracker()
        while not stop.wait(every):
            try:
                progress = poll(tracker, group, time.monotonic() - start)
            except Exception:  # the tracker is gone with a stopping context: nothing to show
                log.debug("progress poll failed", exc_info=True)
                return
            if tty:
                stream.write("\r\033[K" + progress.line(what))
                stream.flush()
                shown[0] = True
            else:
                log.info("%s", progress.line(what))

    thread = threading.Thread(target=run, name=f"progress {what}", daemon=True)
    if every > 0:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        if thread.is_alive():
            thread.join(timeout=5)
        if shown[0]:
            stream.write("\r\033[K")
            stream.flush()
        if previous is None:
            sc.setLocalProperty("spark.jobGroup.id", None)
            sc.setLocalProperty("spark.job.description", None)
        else:
            sc.setJobGroup(previous, previous_description or "")
