"""A job's run directory: claimed new, and never left looking complete when writing fails.

A run directory is complete when its ``summary.json`` exists (it is written last), and the
history and the report's trend read only those. Two things could break that promise:

- ``--out`` pointing at an earlier run: the new run would overwrite its tables one by one
  and, if it then failed, leave the old ``summary.json`` over half of the new files. So a
  run directory must be new or empty; the only entries it may already hold are the snapshot
  directories the run audits (``snapshot --out RUN`` then ``audit --source RUN/source
  --destination RUN/destination --out RUN`` gives the nightly job's layout).
- The filesystem refusing a write mid-run (a full disk, a quota, a filesystem remounted
  read-only after an I/O error), raised from deep inside pyarrow, DuckDB, Spark or Great
  Expectations, often without a path and not always as an ``OSError``. That is the
  operator's to fix, so it becomes an ``OutputError`` (exit 2, one line naming the path and
  the cause) and what the run wrote is removed, which also gives the space back.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from audit.config import AuditConfig
from audit.errors import AuditError, OutputError
from audit.output_lock import output_lock
from audit.paths import check_writable, local_path, private_root, writable_directory
from audit.report.metrics import check_textfile

log = logging.getLogger(__name__)

# The filesystem refusing a write, whatever is written: always the output's problem.
WRITE_REFUSED = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)
# Permissions: the output's problem only where the path is known to be under the output
# (the same errno reading an input is an input problem).
_ACCESS_DENIED = (errno.EACCES, errno.EPERM)
# How the JVM (Spark) and DuckDB report the same, in their messages: no errno reaches Python.
_REFUSED_TEXTS = tuple(os.strerror(e) for e in WRITE_REFUSED)


def write_failure(exc: BaseException, under: Path) -> str | None:
    """Why ``exc`` is the filesystem refusing a write under ``under`` ("No space left on
    device", naming the file where it is known), or None when it is something else. The
    exception's causes are looked at too: Spark and DuckDB wrap the error they met."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        cause = _refused(current, under)
        if cause is not None:
            return cause
        current = current.__cause__ or current.__context__
    return None


def _refused(exc: BaseException, under: Path) -> str | None:
    if isinstance(exc, OSError) and exc.errno is not None:
        where = f" ({exc.filename})" if exc.filename else ""
        if exc.errno in WRITE_REFUSED:
            return f"{os.strerror(exc.errno)}{where}"
        if exc.errno in _ACCESS_DENIED and exc.filename and _is_under(exc.filename, under):
            return f"{os.strerror(exc.errno)}{where}"
        return None
    text = str(exc)
    return next((t for t in _REFUSED_TEXTS if t in text), None)


def _is_under(filename: object, directory: Path) -> bool:
    if not isinstance(filename, str | bytes | os.PathLike):
        return False
    try:
        Path(os.fsdecode(filename)).resolve().relative_to(directory.resolve())
    except (ValueError, OSError):
        return False
    return True


@contextlib.contextmanager
def write_errors(path: Path, what: str) -> Iterator[None]:
    """Turn the filesystem refusing a write under ``path`` into an ``OutputError`` naming
    ``what`` and ``path`` and the cause; every other error passes untouched."""
    try:
        yield
    except AuditError:
        raise
    except Exception as exc:
        cause = write_failure(exc, path)
        if cause is None:
            raise
        raise OutputError(f"{what} {path} cannot be written: {cause}") from exc


@dataclass(frozen=True)
class RunDirClaim:
    """A run directory as a job found it: whether it existed, and the entries it held (the
    snapshot directories the run audits), which a failed run leaves in place."""

    path: Path
    existed: bool
    kept: frozenset[str]

    @contextlib.contextmanager
    def writing(self) -> Iterator[Path]:
        """The block that writes the run: a write the filesystem refuses becomes an
        ``OutputError`` naming the run directory, and what the run wrote is removed."""
        try:
            with write_errors(self.path, "run directory"):
                yield self.path
        except OutputError:
            self.remove_partial()
            raise
        except BaseException:
            # Reserved but never written (a cluster that did not answer): not left behind.
            if not self.existed:
                with contextlib.suppress(OSError):
                    self.path.rmdir()
            raise

    def remove_partial(self) -> None:
        """Remove what this run wrote: the directory if the run made it, else the entries it
        added. Best effort (a read-only filesystem keeps them): a directory without
        ``summary.json`` is an unfinished run to every reader either way."""
        if not self.existed:
            shutil.rmtree(self.path, ignore_errors=True)
        elif self.path.is_dir():
            for entry in self.path.iterdir():
                if entry.name not in self.kept:
                    if entry.is_dir() and not entry.is_symlink():
                        shutil.rmtree(entry, ignore_errors=True)
                    else:
                        with contextlib.suppress(OSError):
                            entry.unlink()
        if self.path.exists() and set(os.listdir(self.path)) - self.kept:
            log.warning("unfinished run left in %s (no summary.json): remove it", self.path)


def reserve(path: Path) -> None:
    """Make ``path`` for this run alone (its parents as needed): an ``OutputError`` when
    another run made it first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir()
    except FileExistsError:
        raise OutputError(
            f"run directory {path} was just made by another run: give another directory"
        ) from None


def claim_run_dir(path: Path, inputs: Iterable[Path] = ()) -> RunDirClaim:
    """Check that ``path`` can take a new run: it does not exist, or it is empty apart from
    ``inputs`` (absolute paths of the snapshot directories the run reads) directly inside it.
    Anything else (an earlier run, finished or not) is an ``OutputError`` naming it: runs are
    never written over one another. A new directory is reserved at once, by an exclusive
    ``mkdir``: two runs given the same new ``--out`` cannot both take it."""
    if not path.exists():
        reserve(path)
        return RunDirClaim(path, False, frozenset())
    if not path.is_dir():
        raise OutputError(f"run directory {path} is not a directory")
    allowed = {p.name for p in inputs if p.parent == path}
    names = {entry.name for entry in path.iterdir()}
    extra = sorted(names - allowed)
    if extra:
        shown = ", ".join(extra[:4]) + (", ..." if len(extra) > 4 else "")
        raise OutputError(
            f"run directory {path} is not empty (it holds {shown}): give a new or empty directory "
            "(a run never writes over another one)"
        )
    return RunDirClaim(path, True, frozenset(names))


def new_run_dir(cfg: AuditConfig) -> Path:
    """A new timestamped run directory under ``output.root``, made here by an exclusive
    ``mkdir`` (a readiness and a nightly started in the same second get one each); absolute:
    a relative root is taken from the current directory when no configuration file anchored it."""
    root = writable_directory(local_path(cfg.output.root), "output root (output.root)")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for n in range(1, 1000):
        run_dir = root / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            run_dir.mkdir()  # exclusive: two runs started within the same second get two names
        except FileExistsError:
            continue
        except OSError as exc:
            raise OutputError(f"run directory {run_dir} cannot be created: {exc.strerror}") from None
        return run_dir
    raise OutputError(f"output root {root}: no free run directory name for {stamp}")


@contextlib.contextmanager
def run_directory(
    cfg: AuditConfig,
    out: Path | None,
    lock_as: str | None,
    inputs: Iterable[Path | None] = (),
) -> Iterator[Path]:
    """The run directory a job writes (``out``, else a new one under ``output.root``),
    claimed for the block: new or empty apart from the snapshot directories in ``inputs``,
    and removed again if the filesystem refuses a write (``audit.run_dirs``).

    ``lock_as`` names the job holding the output root's lock (``audit.output_lock``) for the
    whole block; None takes no lock: ``readiness``, which writes only its own run directory
    and never ``record-verification.json``, must never wait behind a long nightly. The run
    directory is chosen once the lock is held, so a run that waited gets a name of its own.
    """
    run_dir = check_writable(local_path(out), "run directory") if out is not None else None
    check_textfile(cfg.output)  # a wrong metrics textfile is found before the work, not after it
    with contextlib.ExitStack() as stack:
        if lock_as is not None:
            root = _lock_root(cfg, run_dir)
            if root is not None:
                stack.enter_context(output_lock(root, cfg.output.lock_wait_seconds, lock_as))
        if run_dir is None:
            claim = RunDirClaim(new_run_dir(cfg), False, frozenset())  # reserved by its mkdir
        else:
            claim = claim_run_dir(run_dir, [local_path(p) for p in inputs if p is not None])
        yield stack.enter_context(claim.writing())


def _output_root(cfg: AuditConfig, run_dir: Path | None) -> Path:
    """Where a run's history and ``record-verification.json`` live: the run directory's
    parent (``--out``), else ``output.root``; made here, since it holds the lock file."""
    if run_dir is not None:
        return writable_directory(run_dir.parent, "output root")
    return writable_directory(local_path(cfg.output.root), "output root (output.root)")


def _lock_root(cfg: AuditConfig, run_dir: Path | None) -> Path | None:
    """The output root whose lock a job takes; None where other users may write it (the
    lock and the history are then not kept there: ``paths.private_root``)."""
    return private_root(_output_root(cfg, run_dir))
