"""PySpark's worker daemon, minus a fixed cost of about 0.1 s on every Python task.

Before each task a PySpark worker calls ``importlib.invalidate_caches()`` (pyspark's
``worker_util.setup_spark_files``). On Python 3.11, a ``zipimporter``'s
``invalidate_caches`` re-reads its archive's whole directory at once, and a worker's
``sys.path`` holds three archives the JVM puts there: ``pyspark.zip``, py4j's zip and
the spark-core jar (over 5,000 entries). Measured with py-spy on two cores, 84% of a
reused worker's time in a loop of trivial jobs went there: about 0.15 s a task, paid by
every Python stage of the auditor (the scans, the record checksums) and by every test.

The daemon Spark starts for the workers (``spark.python.daemon.module``, set by
``audit.spark_session``) is this module: it makes that invalidation re-read an archive
only when the archive changed on disk (size or modification time), then runs PySpark's
own daemon unchanged. Workers are forked from it, so they all inherit the change. An
archive that did change (or a new one: new ``sys.path`` entries get new importers) is
read exactly as before.

It also chooses the workers' C allocator before anything else runs
(``audit.worker_malloc``: mimalloc or jemalloc preloaded where installed, which a record
scan needs more than anything else), by re-executing itself once; nothing else differs
from ``pyspark.daemon``.
"""

from __future__ import annotations

import os
import zipimport
from typing import Any

_seen: dict[str, tuple[int, int]] = {}


def _invalidate_if_changed(original: Any) -> Any:
    def invalidate_caches(self: Any) -> None:
        try:
            st = os.stat(self.archive)
        except OSError:
            original(self)
            return
        stamp = (st.st_mtime_ns, st.st_size)
        if _seen.get(self.archive) == stamp:
            return
        original(self)
        _seen[self.archive] = stamp

    return invalidate_caches


def install() -> None:
    """Make zip importers' cache invalidation conditional on a change (idempotent)."""
    current = zipimport.zipimporter.invalidate_caches
    if getattr(current, "_audit_lazy", False):
        return
    patched = _invalidate_if_changed(current)
    patched._audit_lazy = True
    zipimport.zipimporter.invalidate_caches = patched  # type: ignore[method-assign]


if __name__ == "__main__":
    from audit.worker_malloc import reexec_with_allocator

    reexec_with_allocator()
    install()
    from pyspark import daemon

    daemon.manager()  # type: ignore[no-untyped-call]
