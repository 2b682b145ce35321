"""Which C allocator the Spark Python workers run with (``spark.worker_malloc``).

Why it matters: a record scan is bound by librdkafka's per-message allocations, not by
the bytes. librdkafka's fetch thread allocates every message and the task's thread frees
it (and allocates and frees the parsed headers), so with glibc's malloc the two threads
meet on the fetch thread's arena lock: measured with perf, a third of the compiled
reader's CPU went to ``_int_free``, ``_int_malloc`` and the futex of that lock, and with
``glibc.malloc.arena_max=1`` (one lock for all) a record cost twice as much (930 to
1,950 ns). An allocator with per-thread heaps and lock-free remote frees removes that:
the same reader took 590 ns a record under mimalloc and 650 under jemalloc
(docs/benchmarks.md, "Record scan").

How: the worker daemon (``audit.spark_daemon``) is the first Python process of each
executor's workers; before it starts it re-executes itself once with the allocator in
``LD_PRELOAD``, and every worker it forks inherits it. So the choice is made where the
tasks run, from the libraries installed there, and the driver, the JVM and the auditor's
in-process paths keep the system allocator. ``auto`` (the default) takes mimalloc, else
jemalloc, where the dynamic linker can find them (Debian: ``libmimalloc2.0``,
``libjemalloc2``), and the system allocator otherwise; ``system`` never preloads; a path
names a shared library to preload.
"""

from __future__ import annotations

import ctypes.util
import logging
import os
import sys
from collections.abc import Callable, Mapping

log = logging.getLogger(__name__)

# What build_spark passes to the executors (spark.executorEnv) and the daemon reads.
ENV = "MIRROR_AUDIT_WORKER_MALLOC"
# Set in the re-executed daemon: it never re-executes twice.
DONE = "MIRROR_AUDIT_WORKER_MALLOC_DONE"
AUTO = "auto"
SYSTEM = "system"
# In order of preference: the lower cost per record measured first.
CANDIDATES = ("mimalloc", "jemalloc")


def check(setting: str) -> str | None:
    """Why a ``spark.worker_malloc`` value is not usable, or None: ``auto``, ``system``
    or an absolute path (a relative one would resolve on each executor differently)."""
    if setting in (AUTO, SYSTEM):
        return None
    if not os.path.isabs(setting):
        return (
            "must be auto, system or an absolute path to a shared library"
            " (e.g. /usr/lib/x86_64-linux-gnu/libmimalloc.so.2)"
        )
    return None


def resolve(setting: str, find: Callable[[str], str | None] = ctypes.util.find_library) -> str | None:
    """The library to preload for ``setting``, or None for the system allocator. A path
    that does not exist on this machine is not preloaded (the dynamic linker would print
    an error in every worker): logged and skipped."""
    if setting == SYSTEM:
        return None
    if setting == AUTO:
        for name in CANDIDATES:
            found = find(name)
            if found:
                return found
        return None
    if not os.path.exists(setting):
        log.warning("spark.worker_malloc %s is not here: the workers keep the system allocator", setting)
        return None
    return setting


# mimalloc's options for the workers: keep the memory a worker freed for its next
# allocations instead of handing it back to the system within milliseconds. A wire scan
# allocates each Fetch response (megabytes) on kafka-python's IO thread and frees it on the
# task's, a few milliseconds later; returned and asked for again, every page of it faulted
# in zeroed anew. Mode mm2's scan took 404 ns of CPU a record with mimalloc's defaults and
# 288 with these (make bench-mm2-records, docs/benchmarks.md "The receive path"). A worker
# then holds at most what it once used at the same time. allow_decommit and reset_delay
# are mimalloc 2.0's names, purge_delay (-1: never) 2.1's and later; a setting already in
# the environment wins.
MIMALLOC_OPTIONS = {
    "MIMALLOC_ALLOW_DECOMMIT": "0",
    "MIMALLOC_RESET_DELAY": "1000000",
    "MIMALLOC_PURGE_DELAY": "-1",
}


def preloaded_env(env: Mapping[str, str], library: str) -> dict[str, str]:
    """``env`` with ``library`` first in ``LD_PRELOAD`` (anything already there is kept),
    and for mimalloc its options (``MIMALLOC_OPTIONS``) where ``env`` sets none of them."""
    out = dict(env)
    rest = env.get("LD_PRELOAD", "").strip()
    out["LD_PRELOAD"] = f"{library} {rest}".strip()
    out[DONE] = library
    if "mimalloc" in os.path.basename(library):
        for name, value in MIMALLOC_OPTIONS.items():
            out.setdefault(name, value)
    return out


def reexec_with_allocator() -> None:
    """Called first thing in the worker daemon: re-executes the daemon (same pid, same
    arguments, same file descriptors, so Spark sees nothing) with the allocator preloaded,
    once. Returns when nothing is to be preloaded, or when it already is."""
    if os.environ.get(DONE) is not None or not sys.platform.startswith("linux"):
        return
    library = resolve(os.environ.get(ENV, AUTO))
    if library is None:
        return
    argv = [sys.executable, *sys.orig_argv[1:]]
    try:
        os.execve(sys.executable, argv, preloaded_env(os.environ, library))
    except OSError as exc:  # the daemon still works, with the system allocator
        log.warning("could not restart the Spark worker daemon with %s preloaded: %s", library, exc)
