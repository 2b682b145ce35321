"""Expected errors and the exit codes they map to.

Every failure a user can cause or fix (bad config, unreachable cluster, corrupt input,
missing Java) is an ``AuditError``: the CLI turns it into one line on stderr and exit code
2, without a traceback. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import os
from enum import IntEnum


class ExitCode(IntEnum):
    """The process exit codes of every command (docs/usage.md, "Exit codes": one place, three values)."""

    OK = 0  # pass (warnings allowed), GO
    FAILED = 1  # an invariant failed, NO-GO
    ERROR = 2  # usage, configuration, connection or input error


class AuditError(Exception):
    """An expected error: the message alone tells the user what is wrong and what to do."""


class ConfigError(AuditError):
    """The configuration file is missing, malformed or has an unknown or mistyped key."""


class ClusterError(AuditError):
    """A cluster could not be reached, refused a call, or timed out."""


class InputError(AuditError):
    """An input file (snapshot, segment, run directory) is missing, corrupt or malformed."""


class OutputError(AuditError):
    """An output path (run directory, output root, snapshot directory) cannot be written."""


class SandboxError(AuditError):
    """The local sandbox could not be fetched, started, inspected or stopped."""


class JavaError(AuditError):
    """No usable Java on this machine: none installed, or older than Java 17."""


class UsageError(AuditError):
    """The command line is incomplete or contradictory."""


class SparkStartError(AuditError):
    """Spark could not start its session (a master URL it refuses, a jar missing for a
    filesystem its settings name, no Java): the one line says why, credentials hidden."""


class UnexpectedError(AuditError):
    """A failure no other class here names (a bug, or a library's own exception: the JVM's,
    DuckDB's, an HTTP client's), raised by the Python API in its place so that a caller
    catches one type. Its message is the original's type and first line, redacted; its
    ``__cause__`` is the original, unless the original's text holds a secret. The command
    line still reports it as what it is, a bug, with its traceback."""


def os_error_message(exc: OSError) -> str:
    """One line for an ``OSError``: the path and why; without a path (a full disk or a
    read-only filesystem met deep in a library that names no file, such as pyarrow), the
    cause alone. Run jobs name their run directory themselves (``audit.run_dirs``)."""
    if exc.filename is None:
        return f"{os.strerror(exc.errno or 0)} (writing output: free space or make it writable)"
    where = exc.filename if exc.filename2 is None else f"{exc.filename} -> {exc.filename2}"
    return f"{where}: {exc.strerror or exc}"
