"""The jobs, each declared once: where its snapshot pair comes from, whether it holds the
output root's lock, which profile it runs (and so its invariants, gating invariants and
figures), whether it answers GO / NO-GO, and which engine computes it by default.

``audit.pipeline`` runs a job from its declaration; no stage below it asks which job it
is part of. A job's name is what summary.json's ``run.job``, the metrics' ``job_kind``
label and the output lock's holder say (the drained readiness check is a readiness check
there: alert rules and dashboards select on it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from audit.compare.engines import EngineName
from audit.config import AuditConfig
from audit.profiles import Profile, failback_profile, failover_verify_profile, profile_of


@dataclass(frozen=True, kw_only=True)
class Job:
    """A job's declaration, by named fields only (three booleans by position read as
    nothing at the call site)."""

    name: str
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
    # Writes Great Expectations' Data Docs only where the configuration asks
    # (``output.readiness_data_docs``): a check whose answer is wanted in seconds.
    data_docs_on_request: bool = False

    def writes_data_docs(self, cfg: AuditConfig) -> bool:
        """Whether this run writes Great Expectations' Data Docs."""
        return not self.data_docs_on_request or cfg.output.readiness_data_docs

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


AUDIT = Job(name="audit", takes_lock=True, answers_go=False, scans_data=False, engine="spark", profile=_mode)
NIGHTLY = Job(
    name="nightly", takes_lock=True, answers_go=False, scans_data=True, engine="spark", profile=_mode
)
# Readiness never waits behind a nightly (no lock); it reports the nightly's data-level
# results. ``readiness --wait-drained`` is the same job on the snapshots it polled until
# the mirror was drained (summary.json, metrics and alert rules say "readiness").
READINESS = Job(
    name="readiness",
    takes_lock=False,
    answers_go=True,
    scans_data=False,
    engine="local",
    profile=_mode,
    reads_nightly_data=True,
    data_docs_on_request=True,
)
FAILOVER_VERIFY = Job(
    name="failover verify",
    takes_lock=True,
    answers_go=True,
    scans_data=False,
    engine="local",
    profile=_verify,
)
FAILBACK_READINESS = Job(
    name="failback readiness",
    takes_lock=True,
    answers_go=True,
    scans_data=False,
    engine="local",
    profile=_failback,
)

JOBS = (AUDIT, NIGHTLY, READINESS, FAILOVER_VERIFY, FAILBACK_READINESS)


@dataclass(frozen=True, kw_only=True)
class JobRequest:
    """One run of a job as a caller asked for it: the job, its configuration, where it
    writes (None: a new directory under the output root) and on which engine, and what
    it reads instead of the live clusters: both snapshot directories (``audit``, offline
    ``readiness``; failover verify may take the destination alone), the readiness run
    ``before`` a failover, and whether a nightly's records scan reads every record."""

    job: Job
    cfg: AuditConfig
    out: Path | None
    engine: EngineName
    source: Path | None = None
    destination: Path | None = None
    before: Path | None = None
    full_records: bool = False

    @property
    def snapshots(self) -> tuple[Path, Path] | None:
        """Both snapshot directories, where the job reads them instead of the clusters."""
        if self.source is None or self.destination is None:
            return None
        return self.source, self.destination
