"""The jobs, each declared once: where its snapshot pair comes from, whether it holds the
output root's lock, which profile it runs (and so its invariants, gating invariants and
figures), whether it answers GO / NO-GO, and which engine computes it by default.

``audit.pipeline`` runs a job from its declaration; no stage below it asks which job it
is part of. A job's name is what summary.json's ``run.job``, the metrics' ``job_kind``
label and the output lock's holder say (the drained readiness check is a readiness check
there: alert rules and dashboards select on it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from audit.compare.engines import EngineName
from audit.config import AuditConfig
from audit.profiles import Profile, failback_profile, failover_verify_profile, profile_of


@dataclass(frozen=True)
class Job:
    name: str
    # Where its snapshot pair comes from, as a person reads it (docs, --help).
    snapshots: str
    # Holds the output root's lock for the whole run: every job that writes beside other
    # runs (history, record-verification.json) does; readiness never waits behind a nightly.
    takes_lock: bool
    # Answers GO / NO-GO over its gating invariants (exit 1 on NO-GO), and readiness
    # figures at summary.json's top level (or under the profile's ``figures_key``).
    answers_go: bool
    # Runs the batch and record scans its configuration enables (they take minutes).
    scans_data: bool
    engine: EngineName
    # Its profile, given the configuration and (failover verify) the readiness run before.
    profile: Callable[[AuditConfig, Path | None], Profile]
    # Reports the latest nightly run's results of the data-level invariants it leaves to
    # Spark, with their age (audit.validate.nightly_data): a pre-failover check.
    reads_nightly_data: bool = False

    @property
    def lock_name(self) -> str | None:
        """The holder's name written into the lock file, or None: no lock taken."""
        return self.name if self.takes_lock else None


def _mode(cfg: AuditConfig, _before: Path | None) -> Profile:
    return profile_of(cfg)


def _verify(_cfg: AuditConfig, before: Path | None) -> Profile:
    assert before is not None, "failover verify compares against a readiness run"
    return failover_verify_profile(before)


def _failback(_cfg: AuditConfig, _before: Path | None) -> Profile:
    return failback_profile()


AUDIT = Job("audit", "two snapshot directories given", True, False, False, "spark", _mode)
NIGHTLY = Job("nightly", "both clusters, live (destination first)", True, False, True, "spark", _mode)
READINESS = Job(
    "readiness",
    "both clusters live, or two snapshot directories given",
    False,
    True,
    False,
    "local",
    _mode,
    True,
)
DRAINED_READINESS = dataclasses.replace(
    READINESS, snapshots="both clusters live, polled until the mirror is drained"
)
FAILOVER_VERIFY = Job(
    "failover verify",
    "the destination live after the stop (with the mirror's state); the source live, else the readiness "
    "run's source snapshot; or two snapshot directories given",
    True,
    True,
    False,
    "local",
    _verify,
)
FAILBACK_READINESS = Job(
    "failback readiness",
    "both clusters live (with the mirror's state recorded at the stop), or two snapshot directories given",
    True,
    True,
    False,
    "local",
    _failback,
)

JOBS = (AUDIT, NIGHTLY, READINESS, DRAINED_READINESS, FAILOVER_VERIFY, FAILBACK_READINESS)
