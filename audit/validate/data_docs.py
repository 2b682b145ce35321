"""Great Expectations' Data Docs, written in a process of their own when a job started one.

Since each check is evaluated by the validator (``audit.validate.evaluate``), GX is only
needed to write its validation results and Data Docs from the counts. Its import is about
2.5 s of pure Python: on a thread of this process it held the interpreter's lock through
the compare and the validate stage once a readiness check's snapshot was taken (the
largest part of readiness's time, docs/benchmarks.md). A job that will validate starts
this process first (``start``): GX imports there, on the other core, while the job takes
its snapshots; the validate stage hands it the suites and their outcomes (plain values,
pickled over a pipe) and waits for the docs. Without a started process (the Python API,
tests, a suite GX must evaluate itself) the docs are written in this process, as before.

A failure in the process is the run's failure, as it would be here: a suite GX refuses is
a ``ConfigError`` naming the suite; anything else, or the process ending, an
``OutputError`` saying the Data Docs could not be written. The run is never reported
complete without its docs.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from audit.errors import ConfigError, OutputError

if TYPE_CHECKING:
    from audit.validate.results import CheckOutcome
    from audit.validate.suites import SuiteFile

log = logging.getLogger(__name__)

Records = list[tuple["SuiteFile", list["CheckOutcome"]]]

_started: list[DocsProcess] = []  # at most one per process, reused by later jobs
_job_wants: list[bool] = [False]  # the running job started (or reused) it: its docs go there


class DocsProcess:
    """A child interpreter holding Great Expectations, writing Data Docs on request."""

    def __init__(self) -> None:
        ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: no Spark, no threads
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(child,), name="gx-data-docs", daemon=True)
        self._proc.start()
        child.close()

    def alive(self) -> bool:
        return self._proc.is_alive()

    def write(self, docs_dir: Path, records: Records) -> None:
        """Data Docs of ``records`` under ``docs_dir``, written by the process; returns
        when they are on disk."""
        try:
            self._conn.send((str(docs_dir.absolute()), records))
            while not self._conn.poll(1.0):
                if not self._proc.is_alive():
                    raise EOFError(f"it ended with exit code {self._proc.exitcode}")
            kind, message = self._conn.recv()
        except (EOFError, OSError) as exc:
            self.stop()
            raise OutputError(
                f"Data Docs could not be written: the process writing them failed ({exc})"
            ) from None
        if kind == "config":
            raise ConfigError(message)
        if kind == "oserror":  # as GX's own write would have raised it here: the run
            raise OSError(*message)  # directory's handling names the directory and the cause
        if kind != "ok":
            raise OutputError(f"Data Docs could not be written under {docs_dir}: {message}")

    def stop(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._conn.send(None)
        self._proc.join(timeout=5)
        if self._proc.is_alive():
            self._proc.kill()
        if self in _started:
            _started.remove(self)


def start() -> None:
    """Start the process (once): called by a job before its snapshots, so that GX imports
    on the other core meanwhile. Where GX is already imported here, nothing to gain."""
    if not _started and "great_expectations" not in sys.modules:
        _started.append(DocsProcess())
    _job_wants[0] = bool(_started)


def write(docs_dir: Path, records: Records, tables: Any) -> None:
    """Data Docs of the suites' outcomes: by the process the running job started, else in
    this process (a job that started none, as an offline audit, never uses one another job
    left running)."""
    wanted, _job_wants[0] = _job_wants[0], False
    if wanted and _started and _started[0].alive():
        _started[0].write(docs_dir, records)
        return
    from audit.validate.gx import GxRunner

    GxRunner(docs_dir, tables).write_docs(records)


def _serve(conn: Any) -> None:
    """The child: import GX once, then write each run's Data Docs it is sent (None: stop)."""
    logging.getLogger().setLevel(logging.ERROR)  # what goes wrong is sent back, not printed
    try:
        from audit.validate.gx import GxRunner

        GxRunner.import_gx()
    except Exception as exc:  # reported at the first request
        failure: str | None = f"Great Expectations could not be imported: {exc}"
    else:
        failure = None
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        if request is None:
            return
        if failure is not None:
            conn.send(("error", failure))
            continue
        docs_dir, records = request
        try:
            GxRunner(Path(docs_dir), None).write_docs(records)
        except ConfigError as exc:
            conn.send(("config", str(exc)))
        except OSError as exc:  # a full disk, a read-only one: the parent raises it again
            conn.send(("oserror", (exc.errno, exc.strerror, exc.filename)))
        except Exception as exc:
            conn.send(
                ("error", f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}")
            )
        else:
            conn.send(("ok", None))
