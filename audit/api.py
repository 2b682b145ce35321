"""The Python API: the jobs ``mirror-audit`` runs, as functions that return typed results.

For a caller that schedules the auditor from Python (an Airflow task, a failover runbook,
a notebook) rather than through the command line. The command line is a thin layer over
this module: each of its job commands calls one function here and prints the result.

    from audit import api

    cfg = api.load_config("conf/audit.yaml")
    result = api.readiness(cfg)
    if result.readiness != "GO":
        raise SystemExit(result.exit_code)   # the CLI's exit code: 0, 1 (NO-GO)
    print(result.figures["expected_loss_records"], result.report)

What each function returns is what the run wrote to its ``summary.json``, typed: the
verdict, the GO / NO-GO of a job that gives one, the coverage (what could not be checked,
never counted as passed), the figures (``None`` where unknown, the reason in
``unknown_figures``), and the paths. ``Result.summary`` is the whole summary.json.

Errors: every failure a user can cause or fix raises an ``AuditError`` subclass
(``ConfigError``, ``ClusterError``, ``InputError``, ``OutputError``, ``UsageError``), whose
message names the problem and what to do: what the CLI prints as its one line with exit
code 2. Anything else is a bug.

Secrets: every function registers its configuration's secrets (client passwords, Spark
settings, URI credentials) with the process's log mask before anything is logged, whoever
set up the logging handlers; ``load_config`` does so as it loads.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from audit.config import AuditConfig
from audit.errors import (
    AuditError,
    ClusterError,
    ConfigError,
    ExitCode,
    InputError,
    OutputError,
    UsageError,
)
from audit.jobs import AUDIT, DRAINED_READINESS, FAILBACK_READINESS, FAILOVER_VERIFY, NIGHTLY, READINESS

if TYPE_CHECKING:
    from audit.compare.engines import EngineName
    from audit.drain import DrainStatus
    from audit.pipeline import RunOutcome

__all__ = [
    "AuditError",
    "ClusterError",
    "ConfigError",
    "Coverage",
    "InputError",
    "InvariantOutcome",
    "NotDrained",
    "OutputError",
    "Result",
    "UsageError",
    "audit",
    "failback_readiness",
    "failover_verify",
    "load_config",
    "nightly",
    "readiness",
    "readiness_when_drained",
]

Verdict = Literal["PASS", "WARN", "FAIL"]
Answer = Literal["GO", "NO-GO"]
ConfigLike = AuditConfig | str | os.PathLike[str] | None

# How long ``readiness_when_drained`` waits by default, in seconds.
DRAIN_TIMEOUT = 600.0


def load_config(path: str | os.PathLike[str] | None) -> AuditConfig:
    """Read, expand (``${ENV}``) and validate a YAML configuration; ``None`` gives the
    defaults. Its secrets are registered with the log mask. Raises ``ConfigError``."""
    from audit.config_file import load_config as read
    from audit.logs import mask_config

    cfg = read(path)
    mask_config(cfg)
    return cfg


def _config(cfg: ConfigLike) -> AuditConfig:
    return cfg if isinstance(cfg, AuditConfig) else load_config(cfg)


@dataclass(frozen=True)
class InvariantOutcome:
    """One invariant of a run: ``pass`` only when every in-scope row was checked and held."""

    id: str
    status: Literal["pass", "warn", "fail", "skipped"]
    violations: int
    evaluated: int
    unchecked: int
    statement: str


@dataclass(frozen=True)
class Coverage:
    """What the run could not check (missing inputs), by invariant: never counted as passed."""

    complete: bool
    unchecked_rows: int
    gaps: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class Result:
    """A finished run: what its summary.json says, typed, and where its files are."""

    job: str
    verdict: Verdict
    # GO / NO-GO for the jobs that answer one (readiness, failover verify, failback readiness).
    readiness: Answer | None
    coverage: Coverage
    invariants: Mapping[str, InvariantOutcome]
    # The job's figures (expected loss, reprocessing, records lost at the stop, ...): None
    # where unknown, never 0; the reason for each unknown one in ``unknown_figures``.
    figures: Mapping[str, int | None]
    unknown_figures: Mapping[str, Any]
    # The CLI's exit code: 1 for FAIL and for NO-GO, else 0 (WARN included).
    exit_code: int
    run_dir: Path
    report: Path
    summary: Mapping[str, Any] = field(repr=False)

    @property
    def outcome(self) -> str:
        """One word: the GO / NO-GO of a job that answers one, else the verdict."""
        return self.readiness or self.verdict

    @property
    def summary_path(self) -> Path:
        return self.run_dir / "summary.json"

    def to_json(self) -> dict[str, Any]:
        """What ``--output json`` prints: the outcome, exit code and paths, then summary.json."""
        return {
            "outcome": self.outcome,
            "exit_code": self.exit_code,
            "job": self.job,
            "verdict": self.verdict,
            "readiness": self.readiness,
            "run_dir": str(self.run_dir),
            "report": str(self.report),
            "summary": dict(self.summary),
        }


@dataclass(frozen=True)
class NotDrained:
    """``readiness_when_drained`` timed out: no readiness run, what still lags. Exit code 1
    (a NO-GO for now), told apart from a NO-GO or a WARN by ``outcome``."""

    status: DrainStatus
    run_dir: Path

    exit_code = int(ExitCode.FAILED)
    outcome = "not drained"

    def to_json(self) -> dict[str, Any]:
        s = self.status
        return {
            "outcome": self.outcome,
            "exit_code": self.exit_code,
            "job": DRAINED_READINESS.name,
            "run_dir": str(self.run_dir),
            "drain": {
                "elapsed_seconds": round(s.elapsed_seconds, 1),
                "polls": s.polls,
                "partitions": s.partitions,
                "drained_partitions": s.drained_partitions,
                "unknown_partitions": s.unknown_partitions,
                "lag_records": s.lag_records,
                "open_transactions": s.open_transactions,
                "source_quiet": s.source_quiet,
                "lagging": [
                    {
                        "topic": lag.topic,
                        "partition": lag.partition,
                        "lag_records": lag.lag_records,
                        "open_transaction": lag.open_transaction,
                    }
                    for lag in s.lagging
                ],
            },
        }


def result_of(outcome: RunOutcome) -> Result:
    """A pipeline run's outcome as the API's ``Result``."""
    summary = outcome.summary
    cov = summary["coverage"]
    return Result(
        job=str(summary["run"]["job"]),
        verdict=summary["verdict"],
        readiness=summary.get("readiness"),
        coverage=Coverage(bool(cov["complete"]), int(cov["unchecked_rows"]), tuple(cov["gaps"])),
        invariants={
            k: InvariantOutcome(
                k, v["status"], int(v["violations"]), int(v["evaluated"]), int(v["unchecked"]), v["statement"]
            )
            for k, v in summary["invariants"].items()
        },
        figures=dict(outcome.figures.values),
        unknown_figures=dict(outcome.figures.unknown),
        exit_code=int(outcome.exit_code),
        run_dir=outcome.run_dir,
        report=outcome.report,
        summary=summary,
    )


def _told(cfg: AuditConfig, job: str, out: Path | None, run: Callable[[], RunOutcome]) -> Result:
    """Run a job; a run that ends in an error (an ``AuditError``: exit 2) is a notice too
    (``notify``), its message masked, before the error goes on to the caller."""
    try:
        return result_of(run())
    except AuditError as exc:
        _notify_unfinished(cfg, job, out, "ERROR", str(exc))
        raise


def _notify_unfinished(cfg: AuditConfig, job: str, out: Path | None, outcome: str, error: str | None) -> None:
    """The notice of a run without a summary. Its state is kept in the output root the run
    would have had, where that is the user's own (``notices.state_root``); never raises."""
    from audit.logs import mask_secrets
    from audit.paths import local_path
    from audit.report.notices import notify_unfinished

    if not cfg.notify.webhooks:
        return
    try:
        root: Path | None = local_path(out).parent if out is not None else local_path(cfg.output.root)
    except AuditError:  # a path that cannot be expanded: no state kept, the caller's error stands
        root = None
    notify_unfinished(cfg, job, root, outcome, None if error is None else mask_secrets(error))


def _snapshot_pair(source: Path | None, destination: Path | None) -> tuple[Path, Path] | None:
    """Both snapshot directories, or neither (live clusters); one alone is a usage error."""
    if source is None and destination is None:
        return None
    if source is None or destination is None:
        raise UsageError("give both --source DIR and --destination DIR (snapshot directories)")
    return source, destination


def audit(
    source: Path,
    destination: Path,
    config: ConfigLike = None,
    *,
    out: Path,
    engine: EngineName = "spark",
) -> Result:
    """Audit two snapshot directories into the run directory ``out`` (under the output
    root's lock): the verdict, no GO / NO-GO."""
    from audit.pipeline import audit_offline

    cfg = _config(config)
    return _told(cfg, AUDIT.name, out, lambda: audit_offline(source, destination, cfg, out, engine=engine))


def nightly(
    config: ConfigLike, *, out: Path | None = None, engine: EngineName = "spark", full_records: bool = False
) -> Result:
    """Snapshot both clusters (destination first), audit and report, keeping history in the
    output root (whose lock it holds throughout); the batch and record scans the
    configuration enables run too (``full_records``: every record, not only the new ones)."""
    from audit.pipeline import nightly as run

    cfg = _config(config)
    return _told(cfg, NIGHTLY.name, out, lambda: run(cfg, out, engine=engine, full_records=full_records))


def readiness(
    config: ConfigLike,
    *,
    source: Path | None = None,
    destination: Path | None = None,
    out: Path | None = None,
    engine: EngineName = "local",
) -> Result:
    """The pre-failover GO / NO-GO with expected loss and reprocessing: of the live clusters
    (``config`` names them), or of two snapshot directories. GO only over full coverage.
    Never waits for the output root's lock."""
    from audit.pipeline import audit_offline
    from audit.pipeline import nightly as run

    cfg = _config(config)
    pair = _snapshot_pair(source, destination)
    if pair is not None:
        return _told(
            cfg, READINESS.name, out, lambda: audit_offline(*pair, cfg, out, readiness=True, engine=engine)
        )
    if cfg.source is None or cfg.destination is None:
        raise UsageError(
            "readiness needs --config FILE naming both clusters (live) or --source DIR --destination DIR"
        )
    return _told(cfg, READINESS.name, out, lambda: run(cfg, out, readiness=True, engine=engine))


def readiness_when_drained(
    config: ConfigLike,
    *,
    timeout: float = DRAIN_TIMEOUT,
    poll_interval: float = 2.0,
    out: Path | None = None,
    engine: EngineName = "local",
    progress: Callable[[DrainStatus], None] | None = None,
) -> Result | NotDrained:
    """The last step before a planned failover: poll the live clusters until every in-scope
    partition has zero lag and the source is quiet, then the readiness check on that state;
    ``NotDrained`` (what still lags) when ``timeout`` passes first. ``progress`` is called
    with each poll's status."""
    from audit.drain import drained_readiness
    from audit.run_dirs import run_directory

    if config is None:
        raise UsageError("--wait-drained polls the live clusters: give --config FILE")
    cfg = _config(config)
    try:
        with run_directory(cfg, out, lock_as=None) as run_dir:
            status, outcome = drained_readiness(cfg, run_dir, timeout, poll_interval, progress, engine)
    except AuditError as exc:
        _notify_unfinished(cfg, DRAINED_READINESS.name, out, "ERROR", str(exc))
        raise
    if outcome is None:
        _notify_unfinished(cfg, DRAINED_READINESS.name, run_dir, "not drained", None)
        return NotDrained(status, run_dir)
    return result_of(outcome)


def _offset_preserving(cfg: AuditConfig) -> AuditConfig:
    if cfg.mode != "cluster-mirroring":
        raise UsageError(
            f"the failover checks follow an offset-preserving mirror's stop: mode is {cfg.mode}, "
            "they need mode cluster-mirroring"
        )
    return cfg


def failover_verify(
    config: ConfigLike,
    before: Path,
    *,
    out: Path | None = None,
    source: Path | None = None,
    destination: Path | None = None,
    engine: EngineName = "local",
) -> Result:
    """After the mirror's stop: the destination against the readiness run ``before`` took,
    records lost per partition against the prediction and where each group resumes. Live
    (``config``), or snapshot directories (the destination, and the source where read)."""
    from audit.failover_jobs import failover_verify as run

    if config is None and destination is None:
        raise UsageError("give --config FILE (live clusters) or --destination DIR [--source DIR] (snapshots)")
    cfg = _offset_preserving(_config(config))
    return _told(cfg, FAILOVER_VERIFY.name, out, lambda: run(cfg, before, out, source, destination, engine))


def failback_readiness(
    config: ConfigLike,
    *,
    out: Path | None = None,
    source: Path | None = None,
    destination: Path | None = None,
    engine: EngineName = "local",
) -> Result:
    """Before mirroring back: GO / NO-GO, and per partition what mirroring back would
    truncate on the old source (``source``: the cluster the original mirror read from)."""
    from audit.failover_jobs import failback_readiness as run

    if config is None and (source is None or destination is None):
        raise UsageError("give --config FILE (live clusters) or --source DIR --destination DIR (snapshots)")
    cfg = _offset_preserving(_config(config))
    return _told(cfg, FAILBACK_READINESS.name, out, lambda: run(cfg, out, source, destination, engine))
