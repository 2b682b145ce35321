"""Expected errors and the exit codes they map to.

Every failure a user can cause or fix (bad config, unreachable cluster, corrupt input,
missing Java) is an ``AuditError``: the CLI turns it into one line on stderr and exit code
2, without a traceback. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """The process exit codes of every command (DESIGN.md: one place, three values)."""

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


class UsageError(AuditError):
    """The command line is incomplete or contradictory."""


class SparkStartError(AuditError):
    """Spark could not start its session (a master URL it refuses, a jar missing for a
    filesystem its settings name, no Java): the one line says why, credentials hidden."""
