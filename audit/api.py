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

Errors: every function raises only ``AuditError`` subclasses. A failure a user can cause
or fix is a ``ConfigError``, ``ClusterError``, ``InputError`` (an argument of the wrong
type or an unknown engine too), ``OutputError``, ``SparkStartError`` or ``UsageError``,
whose message names the problem and what to do: what the CLI prints as its one line with
exit code 2. Anything else (a bug, or a library's own exception) is an
``UnexpectedError``: its message the original's first line, redacted; the original its
``__cause__``, unless its text holds a secret.

Secrets: every function registers its configuration's secrets (client passwords, Spark
settings, URI credentials) with the process's log mask before anything is logged, whoever
set up the logging handlers; ``load_config`` does so as it loads.
"""

from __future__ import annotations

import functools
import numbers
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeVar

from audit.config import AuditConfig
from audit.errors import (
    AuditError,
    ClusterError,
    ConfigError,
    ExitCode,
    InputError,
    OutputError,
    SparkStartError,
    UnexpectedError,
    UsageError,
    os_error_message,
)
from audit.jobs import AUDIT, FAILBACK_READINESS, FAILOVER_VERIFY, NIGHTLY, READINESS, JobRequest

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
    "SparkStartError",
    "UnexpectedError",
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
# A path argument: a string or a Path (any os.PathLike).
PathArg = str | os.PathLike[str]

# How long ``readiness_when_drained`` waits by default, in seconds.
DRAIN_TIMEOUT = 600.0

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _only_audit_errors(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Every public function's guard: an ``AuditError`` goes on as it is, anything else
    becomes one (``_translated``), so a caller catches one type and never meets a
    library's exception (``BadStatusLine``, ``Py4JJavaError``, DuckDB's) with a password
    in its text. An original that holds a secret is raised from outside the handler, so
    it is kept neither as ``__cause__`` nor as ``__context__``."""

    @functools.wraps(fn)
    def guarded(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        error: AuditError | None = None
        try:
            return fn(*args, **kwargs)
        except AuditError:
            raise
        except Exception as exc:
            error, keep = _translated(exc)
            if keep:
                raise error from exc
        assert error is not None
        raise error

    return guarded


def _translated(exc: Exception) -> tuple[AuditError, bool]:
    """The ``AuditError`` the API raises for ``exc``, and whether ``exc`` may be its cause.
    An ``OSError`` naming a path (or a full or read-only disk) is the user's to fix: an
    ``InputError`` (``OutputError`` for a refused write) with the CLI's one line. Anything
    else is an ``UnexpectedError``: the type and first line, masked and redacted."""
    from audit.logs import mask_secrets
    from audit.run_dirs import WRITE_REFUSED

    error: AuditError
    if isinstance(exc, OSError) and (exc.filename is not None or exc.errno in WRITE_REFUSED):
        kind = OutputError if exc.errno in WRITE_REFUSED else InputError
        error = kind(mask_secrets(os_error_message(exc)))
    else:
        error = UnexpectedError(
            mask_secrets(
                f"internal error (a bug, or a failure not translated): {type(exc).__name__}: {_line(exc)}"
            )
        )
    return error, not _holds_secret(exc)


def _line(exc: BaseException) -> str:
    """An exception's one line: py4j's Java exception line (after ": ", below py4j's own
    "An error occurred while calling ..."), else the first line of its text."""
    try:
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    except Exception:  # a py4j error whose JVM is gone cannot even say its own text
        return "(its text could not be read)"
    java = next((ln[1:].strip() for ln in lines[1:] if ln.startswith(":")), None)
    return (java or (lines[0] if lines else ""))[:500]


def _holds_secret(exc: BaseException) -> bool:
    """Whether the text of ``exc`` or of any exception it chains to holds a registered
    secret or a URL the redaction rule would change (credentials, a query, a fragment);
    text that cannot be read counts as holding one."""
    import traceback

    from audit.logs import mask_secrets

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        try:
            text = "".join(traceback.format_exception_only(type(current), current))
        except Exception:
            return True
        if mask_secrets(text) != text:
            return True
        current = current.__cause__ or current.__context__
    return False


def _path(value: object, name: str) -> Path:
    """A path argument: a ``str`` or any ``os.PathLike``, as a ``Path``."""
    if isinstance(value, str | os.PathLike) and not isinstance(value, bytes):
        return Path(os.fspath(value))
    raise InputError(f"{name} must be a path (str or pathlib.Path), not {type(value).__name__}")


def _optional_path(value: object, name: str) -> Path | None:
    return None if value is None else _path(value, name)


def _engine(value: object) -> EngineName:
    """The engine argument, one of ``compare.engines.ENGINES``: anything else is refused
    before any work (an unknown name once ran Spark, which starts a JVM)."""
    from audit.compare.engines import ENGINES

    for name in ENGINES:
        if value == name and isinstance(value, str):
            return name
    allowed = ", ".join(repr(e) for e in ENGINES)
    raise InputError(f"engine {value!r} is not one of {allowed}")


def _seconds(value: object, name: str, least: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not float(value) >= least:
        raise InputError(f"{name} must be a number of seconds of at least {least:g}, not {value!r}")
    return float(value)


@_only_audit_errors
def load_config(path: str | os.PathLike[str] | None) -> AuditConfig:
    """Read, expand (``${ENV}``) and validate a YAML configuration; ``None`` gives the
    defaults. Its secrets are registered with the log mask. Raises ``ConfigError``."""
    from audit.config_file import load_config as read
    from audit.logs import mask_config

    cfg = read(_optional_path(path, "config"))
    mask_config(cfg)
    return cfg


def _config(cfg: ConfigLike) -> AuditConfig:
    if isinstance(cfg, AuditConfig):
        from audit.logs import mask_config

        mask_config(cfg)  # before anything can log or raise with its secrets
        return cfg
    if cfg is not None and not isinstance(cfg, str | os.PathLike):
        raise InputError(f"config must be an AuditConfig, a path or None, not {type(cfg).__name__}")
    return load_config(cfg)


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
            "job": READINESS.name,
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


def _run(request: JobRequest) -> RunOutcome:
    """The pipeline entry point of a request: the failover jobs their own; the others the
    snapshot directories given, or the live clusters."""
    from audit import failover_jobs, pipeline

    r = request
    if r.job is FAILOVER_VERIFY:
        assert r.before is not None, "failover verify compares against a readiness run"
        return failover_jobs.failover_verify(r.cfg, r.before, r.out, r.source, r.destination, r.engine)
    if r.job is FAILBACK_READINESS:
        return failover_jobs.failback_readiness(r.cfg, r.out, r.source, r.destination, r.engine)
    if r.snapshots is not None:
        return pipeline.audit_offline(*r.snapshots, r.cfg, r.out, job=r.job, engine=r.engine)
    return pipeline.nightly(r.cfg, r.out, job=r.job, engine=r.engine, full_records=r.full_records)


def _told(request: JobRequest) -> Result:
    """Run a job; a run that ends in an error (an ``AuditError``: exit 2) is a notice too
    (``notify``), its message masked, before the error goes on to the caller."""
    try:
        return result_of(_run(request))
    except Exception as exc:  # told as the caller will be told: an AuditError's one line
        error = exc if isinstance(exc, AuditError) else _translated(exc)[0]
        _notify_unfinished(request.cfg, request.job.name, request.out, "ERROR", str(error))
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


@_only_audit_errors
def audit(
    source: PathArg,
    destination: PathArg,
    config: ConfigLike = None,
    *,
    out: PathArg,
    engine: EngineName = "spark",
) -> Result:
    """Audit two snapshot directories into the run directory ``out`` (under the output
    root's lock): the verdict, no GO / NO-GO."""
    src, dst = _path(source, "source"), _path(destination, "destination")
    run_dir, chosen = _path(out, "out"), _engine(engine)
    cfg = _config(config)
    return _told(JobRequest(job=AUDIT, cfg=cfg, out=run_dir, engine=chosen, source=src, destination=dst))


@_only_audit_errors
def nightly(
    config: ConfigLike,
    *,
    out: PathArg | None = None,
    engine: EngineName = "spark",
    full_records: bool = False,
) -> Result:
    """Snapshot both clusters (destination first), audit and report, keeping history in the
    output root (whose lock it holds throughout); the batch and record scans the
    configuration enables run too (``full_records``: every record, not only the new ones)."""
    run_dir, chosen = _optional_path(out, "out"), _engine(engine)
    if not isinstance(full_records, bool):
        raise InputError(f"full_records must be True or False, not {full_records!r}")
    cfg = _config(config)
    return _told(JobRequest(job=NIGHTLY, cfg=cfg, out=run_dir, engine=chosen, full_records=full_records))


@_only_audit_errors
def readiness(
    config: ConfigLike,
    *,
    source: PathArg | None = None,
    destination: PathArg | None = None,
    out: PathArg | None = None,
    engine: EngineName = "local",
) -> Result:
    """The pre-failover GO / NO-GO with expected loss and reprocessing: of the live clusters
    (``config`` names them), or of two snapshot directories. GO only over full coverage.
    Never waits for the output root's lock."""
    run_dir, chosen = _optional_path(out, "out"), _engine(engine)
    pair = _snapshot_pair(_optional_path(source, "source"), _optional_path(destination, "destination"))
    cfg = _config(config)
    if pair is None and (cfg.source is None or cfg.destination is None):
        raise UsageError(
            "readiness needs --config FILE naming both clusters (live) or --source DIR --destination DIR"
        )
    src, dst = pair if pair is not None else (None, None)
    return _told(JobRequest(job=READINESS, cfg=cfg, out=run_dir, engine=chosen, source=src, destination=dst))


@_only_audit_errors
def readiness_when_drained(
    config: ConfigLike,
    *,
    timeout: float = DRAIN_TIMEOUT,
    poll_interval: float = 2.0,
    out: PathArg | None = None,
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
    wait, every = _seconds(timeout, "timeout"), _seconds(poll_interval, "poll_interval", least=0.001)
    run_dir, chosen = _optional_path(out, "out"), _engine(engine)
    if progress is not None and not callable(progress):
        raise InputError(f"progress must be a callable or None, not {type(progress).__name__}")
    cfg = _config(config)
    try:
        with run_directory(cfg, run_dir, lock_as=None) as made:
            status, outcome = drained_readiness(cfg, made, wait, every, progress, chosen)
    except Exception as exc:  # told as the caller will be told: an AuditError's one line
        error = exc if isinstance(exc, AuditError) else _translated(exc)[0]
        _notify_unfinished(cfg, READINESS.name, run_dir, "ERROR", str(error))
        raise
    if outcome is None:
        _notify_unfinished(cfg, READINESS.name, made, "not drained", None)
        return NotDrained(status, made)
    return result_of(outcome)


def _offset_preserving(cfg: AuditConfig) -> AuditConfig:
    if cfg.mode != "cluster-mirroring":
        raise UsageError(
            f"the failover checks follow an offset-preserving mirror's stop: mode is {cfg.mode}, "
            "they need mode cluster-mirroring"
        )
    return cfg


@_only_audit_errors
def failover_verify(
    config: ConfigLike,
    before: PathArg,
    *,
    out: PathArg | None = None,
    source: PathArg | None = None,
    destination: PathArg | None = None,
    engine: EngineName = "local",
) -> Result:
    """After the mirror's stop: the destination against the readiness run ``before`` took,
    records lost per partition against the prediction and where each group resumes. Live
    (``config``), or snapshot directories (the destination, and the source where read)."""
    before_dir, run_dir, chosen = _path(before, "before"), _optional_path(out, "out"), _engine(engine)
    src, dst = _optional_path(source, "source"), _optional_path(destination, "destination")
    if config is None and dst is None:
        raise UsageError("give --config FILE (live clusters) or --destination DIR [--source DIR] (snapshots)")
    cfg = _offset_preserving(_config(config))
    request = JobRequest(
        job=FAILOVER_VERIFY,
        cfg=cfg,
        out=run_dir,
        engine=chosen,
        source=src,
        destination=dst,
        before=before_dir,
    )
    return _told(request)


@_only_audit_errors
def failback_readiness(
    config: ConfigLike,
    *,
    out: PathArg | None = None,
    source: PathArg | None = None,
    destination: PathArg | None = None,
    engine: EngineName = "local",
) -> Result:
    """Before mirroring back: GO / NO-GO, and per partition what mirroring back would
    truncate on the old source (``source``: the cluster the original mirror read from)."""
    run_dir, chosen = _optional_path(out, "out"), _engine(engine)
    src, dst = _optional_path(source, "source"), _optional_path(destination, "destination")
    if config is None and (src is None or dst is None):
        raise UsageError("give --config FILE (live clusters) or --source DIR --destination DIR (snapshots)")
    cfg = _offset_preserving(_config(config))
    return _told(
        JobRequest(job=FAILBACK_READINESS, cfg=cfg, out=run_dir, engine=chosen, source=src, destination=dst)
    )
