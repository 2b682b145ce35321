"""Named points in the readers where a fault test pauses a run, to land a fault inside it.

A broker killed "during a records scan" proves nothing unless the kill provably fell after
the first range was read and before the last. ``$MIRROR_AUDIT_PAUSE_AT`` (``NAME=DIR``)
makes every reader that reaches the point ``NAME`` create ``DIR/reached`` and wait for
``DIR/go``: the test waits for ``reached``, kills the broker, then creates ``go``. Unset (as
in every real run), a point costs one environment lookup. Executors see the variable
through Spark's executor environment (``spark.executorEnv``/``SparkContext.environment``),
so points inside Spark tasks work in every deployment the tests use.

The points: ``snapshot.offsets`` (a cluster's log start offsets read, its ends not yet),
``records.wave`` (a records task read one wave of ranges, more to come) and
``fetch.range`` (a wire fetch task fetched one offset range).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

ENV = "MIRROR_AUDIT_PAUSE_AT"
# A forgotten ``go`` must not hang a run forever: the point gives up and the run goes on.
MAX_WAIT_SECONDS = 300.0


def pause_point(name: str) -> None:
    """Wait here while a fault test holds the point ``name`` (see the module docstring)."""
    spec = os.environ.get(ENV)
    if not spec:
        return
    point, _, directory = spec.partition("=")
    if point != name or not directory:
        return
    folder = Path(directory)
    (folder / "reached").touch()
    deadline = time.monotonic() + MAX_WAIT_SECONDS
    while not (folder / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
