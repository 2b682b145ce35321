"""Atomic file and directory writes: a reader never sees half-written output.

Everything the tool writes for someone else to read (snapshots, run directories, state
files) goes to a temporary sibling first and is renamed into place only when complete.

File modes follow one rule, the process umask, as for the Parquet files the engines write:
a temporary file or directory made private by ``mkstemp``/``mkdtemp`` is given the mode the
umask allows (0666/0777 less the umask) before it is renamed into place, so a report,
summary.json and the data beside them are readable by the same people.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` via a temp file in the same directory, then rename."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fchmod(fh.fileno(), 0o666 & ~current_umask())
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return target


def current_umask() -> int:
    """The process umask: from /proc (Linux), which reads it without changing it (other
    threads, the JVM's among them, create files meanwhile); elsewhere set and put back."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def private_dir_as_umask(path: Path) -> Path:
    """A directory made 0700 by ``mkdtemp`` given the mode the umask allows."""
    os.chmod(path, 0o777 & ~current_umask())
    return path


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def json_loads(text: str) -> Any:
    """``json.loads`` for a file the auditor did not necessarily write itself: NaN and
    Infinity (Python's extension of JSON) refused, and nesting deeper than the interpreter
    can parse a ``ValueError`` like any other malformed JSON (the callers' one-line input
    error), not a RecursionError."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("nested too deeply to be read") from None


def atomic_write_json(path: str | os.PathLike[str], data: Any) -> Path:
    return atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temp directory that becomes ``path`` only if the block completes.

    An existing ``path`` is replaced as a whole at the end; on error the temp directory is
    removed and ``path`` is left as it was.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = private_dir_as_umask(
        Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
    )
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    replace_path(tmp, target)


def replace_path(src: Path, target: Path) -> None:
    """Move ``src`` (a complete file or directory) to ``target``, replacing whatever is
    there: the old one is renamed aside first, so ``target`` is never half of each."""
    old: Path | None = None
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        os.replace(target, old)
    os.replace(src, target)
    if old is not None:
        if old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.unlink(missing_ok=True)
