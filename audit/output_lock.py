"""One writer per output root: the lock that keeps overlapping runs apart.

A nightly job run from cron can outlast its interval. Two jobs writing under the same
output root would interleave what the root keeps between runs: the run directories'
``summary.json`` files (the history the report's trend reads) and
``record-verification.json`` (read, updated and written back by the records scan). So every
job that writes a run or that file under an output root first takes an exclusive
``flock`` on ``<output root>/.mirror-audit.lock`` (nightly, audit, records scan, failover
verify, failback readiness) and holds it to the end.

``readiness`` never takes it: it writes only its own run directory and never
``record-verification.json``, and a pre-failover check must never wait behind a long
nightly.

The kernel drops a ``flock`` when its holder exits, however it exits, so a lock file left
by a crashed run is harmless: the next run takes it. The file's content (written once the
lock is held) only names the holder for the message a second run prints.

The lock file is opened without following a symbolic link (``O_NOFOLLOW``) and used only
when it is a regular file of one link owned by the user running the job; it is never
truncated: its holder's name is written over a fixed-size block of spaces, and blanked
again on release. So a link planted where the lock file goes cannot make a run empty or
overwrite another file.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import socket
import stat
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from audit.errors import OutputError

log = logging.getLogger(__name__)

LOCK_FILE = ".mirror-audit.lock"
# The block the holder's name is written over (padded with spaces; never truncated).
_BLOCK = 1024
_POLL_SECONDS = 0.5
# A holder writes its name right after taking the lock: how long a second run waits to read
# it before it names an unknown holder.
_NAME_WAIT_SECONDS = 0.5


@contextlib.contextmanager
def output_lock(root: Path, wait_seconds: float = 0.0, job: str = "mirror-audit") -> Iterator[Path]:
    """Hold the output root's lock for the block; the lock file's path is yielded.

    Held by another process: wait up to ``wait_seconds`` (``output.lock_wait_seconds``;
    0 fails at once), then an ``OutputError`` (exit 2) naming the root and the holder.
    Not reentrant: a process takes it once per job.
    """
    path = root / LOCK_FILE
    fd = _open_lock_file(path, root)
    try:
        _acquire(fd, path, root, wait_seconds)
        _write_holder(fd, job)
        try:
            yield path
        finally:
            # Blanked before the unlock: a later reader never takes a finished run for the holder.
            with contextlib.suppress(OSError):
                os.pwrite(fd, b" " * _BLOCK, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _open_lock_file(path: Path, root: Path) -> int:
    """The lock file opened (created if needed) without truncating it and without following
    a symbolic link; refused (exit 2, naming it) unless it is a regular file of one link
    owned by this user: the job writes into it."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OutputError(
                f"output root {root}: the lock file {path} is a symbolic link: remove it (a run never "
                "writes through a link)"
            ) from None
        raise OutputError(
            f"output root {root}: the lock file {path} cannot be opened: {exc.strerror or exc}"
        ) from None
    st = os.fstat(fd)
    problem = None
    if not stat.S_ISREG(st.st_mode):
        problem = "is not a regular file"
    elif st.st_nlink != 1:
        problem = f"has {st.st_nlink} hard links"
    elif st.st_uid != os.geteuid():
        problem = f"belongs to another user (uid {st.st_uid})"
    if problem is not None:
        os.close(fd)
        raise OutputError(
            f"output root {root}: the lock file {path} {problem}: remove it, or use another output root"
        )
    return fd


def _acquire(fd: int, path: Path, root: Path, wait_seconds: float) -> None:
    deadline = time.monotonic() + max(0.0, wait_seconds)
    logged = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        except OSError as exc:  # e.g. a filesystem without flock support
            raise OutputError(f"output root {root}: {path} cannot be locked: {exc.strerror or exc}") from None
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise OutputError(_held_message(root, read_holder(path), wait_seconds))
        if not logged:
            log.info(
                "%s: waiting up to %.0fs for %s to finish", root, wait_seconds, _describe(read_holder(path))
            )
            logged = True
        time.sleep(min(_POLL_SECONDS, remaining))


def _write_holder(fd: int, job: str) -> None:
    """Name this process in the lock file: pid, start time, host, job and ``argv[0:2]``
    (the program and its command; never the full command line)."""
    holder = {
        "pid": os.getpid(),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "host": socket.gethostname(),
        "job": job,
        "argv": sys.argv[0:2],
    }
    data = (json.dumps(holder) + "\n").encode("utf-8")[:_BLOCK].ljust(_BLOCK, b" ")
    try:
        os.pwrite(fd, data, 0)
    except OSError as exc:  # a full disk, a read-only lock file: the lock holds all the same
        log.debug("the lock file cannot name its holder: %s", exc)


def read_holder(path: Path) -> dict[str, Any]:
    """Who holds the lock, as its holder wrote it; {} when it has not written yet (it took
    the lock an instant ago) or the content is unreadable."""
    deadline = time.monotonic() + _NAME_WAIT_SECONDS
    while True:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and not _dead_here(data):
                return data
        except (OSError, ValueError):
            pass
        if time.monotonic() >= deadline:
            return {}
        time.sleep(0.05)


def _dead_here(holder: dict[str, Any]) -> bool:
    """A holder on this host that no longer runs: the content of a crashed run, read in the
    instant before the new holder overwrote it."""
    if holder.get("host") != socket.gethostname() or not isinstance(holder.get("pid"), int):
        return False
    try:
        os.kill(holder["pid"], 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, someone else's
        return False
    return False


def _describe(holder: dict[str, Any]) -> str:
    if not holder.get("pid"):
        return "another mirror-audit run (pid unknown)"
    where = "" if holder.get("host") in (None, socket.gethostname()) else f" on {holder['host']}"
    job = f"{holder['job']}, " if holder.get("job") else ""
    started = holder.get("started_at", "?")
    return f"another mirror-audit run ({job}pid {holder['pid']}{where}, started {started})"


def _held_message(root: Path, holder: dict[str, Any], wait_seconds: float) -> str:
    waited = f" (waited {wait_seconds:g}s, output.lock_wait_seconds)" if wait_seconds > 0 else ""
    return (
        f"{_describe(holder)} holds the output root {root}{waited}: wait for it, or use another "
        "output root (output.root, or --out in another directory)"
    )
