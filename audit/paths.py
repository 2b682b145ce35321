"""Paths as users type them: relative, ``~``, URIs and globs, made unambiguous once.

Every path a command takes (``--out``, ``--config``, ``--workdir``, snapshot directories)
and every path in a configuration file is made absolute where it enters, so nothing
downstream (Great Expectations' Data Docs, Spark, a forked broker) ever sees a relative
path and resolves it against a working directory of its own. A relative path on the
command line means the current directory; one in a configuration file means the file's
directory, so a config keeps working from wherever the cron job starts.

Paths for Hadoop (``segments scan`` arguments) are the exception: a URI (``s3a://``,
``hdfs://``, ``file:``) or a glob is Hadoop's to interpret and passes untouched (on a
cluster whose default filesystem is HDFS, ``/data/*`` is an HDFS glob), apart from a
leading ``~``, which Hadoop has no meaning for.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from pathlib import Path

from audit.errors import OutputError, UsageError

log = logging.getLogger(__name__)

# A URI scheme of two or more characters (so a Windows drive letter is not one): "s3a:",
# "hdfs:", "file:", "gs:".
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")
_GLOB_CHARS = frozenset("*?[{")


def is_uri(text: str) -> bool:
    return bool(_SCHEME.match(text))


def is_glob(text: str) -> bool:
    return any(c in _GLOB_CHARS for c in text)


def expand_user(text: str | os.PathLike[str]) -> Path:
    """``~`` and ``~user`` expanded; an unknown user is a usage error naming the path."""
    try:
        return Path(text).expanduser()
    except RuntimeError:  # pathlib: "Could not determine home directory"
        raise UsageError(
            f"{os.fspath(text)}: cannot expand '~' (no such user or no home directory)"
        ) from None


def local_path(text: str | os.PathLike[str], base: Path | None = None) -> Path:
    """An absolute local path: ``~`` expanded, a relative path taken from ``base`` (the
    current directory when None). ``..`` is folded; symbolic links are kept as given."""
    path = expand_user(text)
    if not path.is_absolute():
        path = (base if base is not None else Path.cwd()) / path
    return Path(os.path.normpath(path))


def hadoop_path(text: str, base: Path | None = None) -> str:
    """A path for Spark's Hadoop filesystem: URIs and globs untouched (but a leading ``~``),
    a plain local path made absolute (from ``base``, else the current directory)."""
    if is_uri(text):
        return text
    if is_glob(text):
        return str(expand_user(text)) if text.startswith("~") else text
    return str(local_path(text, base))


def config_path(text: str, base: Path) -> str:
    """A path written in a configuration file, relative to the file's directory ``base``.
    URIs stay as written; a relative glob is anchored at ``base`` like any relative path."""
    if is_uri(text):
        return text
    return str(local_path(text, base))


def check_writable(path: Path, what: str) -> Path:
    """Fail now, naming ``path``, if a directory could not be made there later: it is a
    file, or its nearest existing ancestor is not a writable directory. Creates nothing,
    so a run that fails before writing leaves no empty directory behind."""
    if path.exists():
        if not path.is_dir():
            raise OutputError(f"{what} {path} is not a directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise OutputError(f"{what} {path} is not writable")
        return path
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise OutputError(f"{what} {path} cannot be created: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{what} {path} cannot be created: {parent} is not writable")
    return path


def writable_directory(path: Path, what: str) -> Path:
    """Create ``path`` (and its parents) if needed and check that files can be made in it:
    a path that cannot work is an error naming it, before any work is done."""
    if path.exists() and not path.is_dir():
        raise OutputError(f"{what} {path} is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        where = exc.filename or path
        raise OutputError(f"{what} {path} cannot be created: {where}: {exc.strerror}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise OutputError(f"{what} {path} is not writable")
    return path


def others_may_write(directory: Path) -> bool:
    """True where users other than the owner (and its group) may create files in
    ``directory``: /tmp and the like, where a lock file or a summary.json can be planted."""
    try:
        return bool(directory.stat().st_mode & stat.S_IWOTH)
    except OSError:
        return False


def private_root(root: Path) -> Path | None:
    """``root`` as the place for what outlives a run (the output root's lock, the history
    its report reads, ``record-verification.json``), or None where other users may write
    there (``--out /tmp/x`` makes /tmp the root): the run then keeps no history and takes no
    lock there, and says so."""
    if others_may_write(root):
        log.warning(
            "output root %s is writable by other users: this run reads no history there and takes no "
            "lock (give --out under a directory of your own, or set output.root)",
            root,
        )
        return None
    return root


def shared_state_root(run_dir: Path) -> Path | None:
    """``private_root`` of the run directory's parent: where a run's history and state are."""
    return private_root(run_dir.parent)
