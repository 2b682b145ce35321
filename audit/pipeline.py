"""The jobs: collect -> compare -> validate -> report, each stage reading the previous one's files.

The mode's profile (``audit.profiles``) says what each stage does for the configured mode;
the engine (``audit.compare.engines``) says who computes the comparison tables.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from audit.compare.engines import EngineName
from audit.compare.run import Compared, check_data_offsets, check_offsets, check_scope
from audit.config import AuditConfig
from audit.errors import ExitCode
from audit.jobs import AUDIT, NIGHTLY, Job
from audit.logs import mask_config
from audit.paths import local_path, shared_state_root, writable_directory
from audit.profiles import Profile, profile_of
from audit.run_dirs import run_directory
from audit.snapshot import SnapshotPair, read_pair
from audit.validate.figures import MAX_LAG_SECONDS, MIN_EPOCH_HEADROOM, TOTAL_LAG

if TYPE_CHECKING:
    from audit.validate.readiness import Figures
    from audit.validate.suites import SuiteFile

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunOutcome:
    run_dir: Path
    summary: dict[str, Any]
    report: Path
    # The job's figures: its own (readiness, failover verify, failback readiness), else the
    # loss and reprocessing every run computes; None where unknown, with the reason.
    figures: Figures

    @property
    def exit_code(self) -> int:
        """1 for FAIL, and for NO-GO (a failure, or a gating invariant it could not verify)."""
        failed = self.summary["verdict"] == "FAIL" or self.summary.get("readiness") == "NO-GO"
        return ExitCode.FAILED if failed else ExitCode.OK


def compare_snapshots(
    source: Path,
    destination: Path,
    run_dir: Path,
    cfg: AuditConfig,
    engine: EngineName = "spark",
    prof: Profile | None = None,
) -> Compared:
    """The compare stage alone: the profile's (by default the mode's) comparison tables of
    two snapshot directories, computed by ``engine`` into ``run_dir/compare``."""
    return compare_pair(read_pair(local_path(source), local_path(destination)), run_dir, cfg, engine, prof)


def compare_pair(
    pair: SnapshotPair,
    run_dir: Path,
    cfg: AuditConfig,
    engine: EngineName = "spark",
    prof: Profile | None = None,
) -> Compared:
    """``compare_snapshots`` of a pair whose manifests were read already."""
    from audit.compare.engines import open_tables
    from audit.compare.run import run_compare

    prof = prof or profile_of(cfg)
    tables = open_tables(engine, cfg.spark, pair)
    data_level = prof.data_level if tables.data_level else None
    return run_compare(tables, prof.comparisons, prof.inputs, pair, run_dir, cfg, data_level)


def audit_snapshots(
    source: Path,
    destination: Path,
    run_dir: Path,
    cfg: AuditConfig,
    job: Job = AUDIT,
    engine: EngineName | None = None,
    prof: Profile | None = None,
    run_extra: dict[str, Any] | None = None,
    clock: StageClock | None = None,
    suites: list[SuiteFile] | None = None,
) -> RunOutcome:
    """``job``'s stages after its snapshots: audit two snapshot directories into
    ``run_dir`` (summary.json is written last).

    ``engine`` computes the comparison tables (the job's by default): Spark, or "local"
    (DuckDB in this process) for readiness, where an answer is needed before a JVM could
    start. Both run the same queries, the same suites judge both, and both write the same
    files. ``prof`` is the job's profile (given where it needs the readiness run before);
    ``run_extra`` adds to summary.json's run section; ``clock`` is the job's, when stages
    (the snapshot) ran before this one; ``suites`` the job's, when it read them before its
    first stage (read here otherwise).

    Longer than most functions here on purpose: it is the job's stages in order, a line or
    a few each, and split up they would hand a dozen values from one part to the next.
    """
    mask_config(cfg)
    from audit.report.data import collect_report_data
    from audit.report.details import invariant_details
    from audit.report.summary import build_summary
    from audit.validate import gating
    from audit.validate.readiness import figures as compute_figures
    from audit.validate.run import mode_suites, run_validation
    from audit.validate.violations import write_violation_keys

    clock = clock or StageClock()
    prof = prof or job.profile(cfg, None)
    engine = engine or job.engine
    suites = suites if suites is not None else mode_suites(cfg, prof.suite_patterns)
    source, destination, run_dir = local_path(source), local_path(destination), local_path(run_dir)
    pair = read_pair(source, destination)
    src_manifest, dst_manifest = pair.src_manifest, pair.dst_manifest
    # Earlier runs of this pair, read once: what changed, since when, and the source the
    # newest of them saw (MM2-SKIP-2 compares topic ids with it).
    history = _history(run_dir, cfg, (src_manifest.get("cluster_id"), dst_manifest.get("cluster_id")))
    pair = replace(
        pair,
        previous_source=_previous_source(run_dir, history),
        previous_source_reads=_previous_compared(run_dir, history, "mm2_source_reads"),
        previous_syncs=_previous_compared(run_dir, history, "mm2_syncs"),
    )
    writable_directory(run_dir, "run directory")
    check_scope(prof.inputs, cfg, pair)
    for directory in (source, destination):
        check_offsets(pair, directory)
        check_data_offsets(directory)  # their statistics only: cheap, whatever the engine
    compared = compare_pair(pair, run_dir, cfg, engine, prof)
    if job.scans_data and cfg.records.enabled and prof.describe_findings is not None:
        prof.describe_findings(compared, cfg)
    clock.done("compare")
    docs = job.writes_data_docs(cfg)
    results = run_validation(compared, run_dir, cfg, suites, prof.catalogue, data_docs=docs)
    untracked = write_violation_keys(compared.tables, results, run_dir)
    clock.done("validate")
    # The loss and reprocessing figures are cheap aggregates: every run has them (metrics,
    # the trend); a readiness check also answers with them at the top level.
    loss = compute_figures(compared, prof.figures)
    job_queries = (
        prof.job_figures if prof.job_figures is not None else (prof.figures if job.answers_go else None)
    )
    figures = None
    if job_queries is not None:
        figures = loss if job_queries is prof.figures else compute_figures(compared, job_queries)
    plan = _failover_plan(prof, compared, run_dir, cfg) if job.answers_go else None
    data = collect_report_data(compared, prof.slices, results)
    lag = compute_figures(compared, (prof.slices.total_lag,))
    clock.done("figures")
    run_info = {
        "job": job.name,
        "started_at": clock.started_at,
        "engine": engine,
        "source": str(source),
        "destination": str(destination),
        "source_cluster_id": src_manifest.get("cluster_id"),
        "destination_cluster_id": dst_manifest.get("cluster_id"),
        "source_snapshot_at": src_manifest.get("started_at"),
        "destination_snapshot_at": dst_manifest.get("started_at"),
        "data_docs": docs,
        TOTAL_LAG.name: lag.values[TOTAL_LAG.name],
        **{f.name: data.extremes.get(f.name) for f in (MAX_LAG_SECONDS, MIN_EPOCH_HEADROOM)},
        **loss.values,
        "thresholds": cfg.redacted()["thresholds"],
        **(run_extra or {}),
    }
    if loss.unknown or lag.unknown:
        run_info["unknown_figures"] = {**loss.unknown, **lag.unknown}
    if untracked:
        run_info["violations_not_kept"] = untracked
    run_info.update(compared.tables.run_info())
    details = invariant_details(compared, src_manifest, dst_manifest)
    nightly_data = _nightly_data(job, prof, cfg, results, history)
    answer = None
    accepted_loss = _accepted_loss(results, cfg)
    if job.answers_go:
        answer = gating.answer(results, prof.gating(), prof.gates_need_collected)
        if nightly_data is not None:
            answer = answer.adding(nightly_data[1], nightly_data[2])
        answer = answer.adding([], accepted_loss)
        for line in answer.accepted:
            log.warning("accepted gap: %s", line)
    else:
        for line in accepted_loss:
            log.warning("accepted: %s", line)
    summary = build_summary(results, cfg.mode, run_info, figures, details, answer, prof.figures_key)
    summary["lag_by_topic"] = [dict(r) for r in data.topic_lag]
    if prof.slices.lost is not None and compared.tables.has("mm2_syncs"):
        summary["lost_by_partition"] = [dict(r) for r in data.lost]
    if nightly_data is not None:
        summary["nightly_data"] = nightly_data[0]
    if plan is not None:
        summary["failover_plan"] = plan
    return _finish(summary, data, cfg, run_dir, clock, figures if figures is not None else loss, history)


def _accepted_loss(results: list[Any], cfg: AuditConfig) -> list[str]:
    """The known loss the configuration accepts (``readiness.accept_lost``), as a line said
    on every run: MM2-SKIP-1's gaps on those topics warn instead of failing."""
    from audit.validate.invariants import named

    if not cfg.readiness.accept_lost:
        return []
    for r in results:
        if r.id != named.MM2_SKIP_1:
            continue
        gaps = sum(c.unexpected for c in r.checks if c.severity == "warn" and not c.success)
        if gaps:
            topics = ", ".join(sorted(set(cfg.readiness.accept_lost)))
            return [
                f"{r.id}: {gaps} offset sync gaps passed over records on {topics} without a copy "
                "(accepted: readiness.accept_lost)"
            ]
    return []


def _previous_source(run_dir: Path, history: list[dict[str, Any]]) -> Path | None:
    """The source snapshot of the newest earlier run that still has one: where that run
    read it (an offline audit's), else the run directory's own ``source/``."""
    root = shared_state_root(run_dir)
    for earlier in reversed(history):
        recorded = (earlier.get("run") or {}).get("source")
        candidates = [Path(recorded)] if isinstance(recorded, str) and recorded else []
        if root is not None:
            candidates.append(root / str(earlier["dir"]) / "source")
        for candidate in candidates:
            if (candidate / "partitions.parquet").is_file():
                return candidate
    return None


def _previous_compared(run_dir: Path, history: list[dict[str, Any]], table: str) -> Path | None:
    """``table`` as the newest earlier run that wrote it in this version's format left it
    under the output root (an older format is passed over: its rows are not read as ours)."""
    from audit.compare.run import written_format
    from audit.schemas import comparison_format

    root = shared_state_root(run_dir)
    if root is None:
        return None
    for earlier in reversed(history):
        compared = root / str(earlier["dir"]) / "compare"
        if (compared / f"{table}.parquet").exists():
            if written_format(compared, table) == comparison_format(table):
                return compared / f"{table}.parquet"
            log.info("%s of %s is of another format: not read", table, compared.parent)
    return None


def _history(run_dir: Path, cfg: AuditConfig, pair: tuple[Any, Any]) -> list[dict[str, Any]]:
    """Earlier runs of this cluster pair under the run's output root (none where the root
    is not one of the user's own: ``shared_state_root``)."""
    from audit.report.history import load_history

    shared = shared_state_root(run_dir)
    if shared is None:
        return []
    return load_history(shared, exclude=run_dir, limit=cfg.output.history_runs, pair=pair)


def _nightly_data(
    job: Job, prof: Profile, cfg: AuditConfig, results: list[Any], history: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[str], list[str]] | None:
    """For a job that reports them, the latest nightly's results of the data-level
    invariants this run left unchecked (the Spark engine's), the reasons they make the
    answer NO-GO where the configuration gates on them, and the gaps there it accepts
    (``readiness.accept_unchecked``, as for every other gate); None where there are none."""
    from datetime import UTC, datetime

    from audit.validate.nightly_data import accepted_gaps, gate_reasons, latest_nightly_data

    if not job.reads_nightly_data:
        return None
    status = {r.id: r.status for r in results}
    ids = [
        inv.id
        for inv in prof.catalogue
        if inv.spark_only and not inv.not_applicable and status.get(inv.id) == "skipped"
    ]
    if not ids:
        return None
    found = latest_nightly_data(history, ids, datetime.now(UTC))
    none = "no nightly run under this output root checked them"
    shown = found or {"run": None, "checked": ids, "reason": none}
    max_age, accept = cfg.readiness.nightly_data_max_age_hours, cfg.readiness.accept_unchecked
    return (
        shown,
        gate_reasons(found, ids, max_age, accept),
        accepted_gaps(found, ids, max_age, accept),
    )


def _finish(
    summary: dict[str, Any],
    data: Any,
    cfg: AuditConfig,
    run_dir: Path,
    clock: StageClock,
    figures: Figures,
    history: list[dict[str, Any]],
) -> RunOutcome:
    """What the runs before (``history``, read once by the caller) say (since when, what
    changed), the report, the metrics, and summary.json last: a run directory without it is
    not a finished run. Then the notices, which change none of it."""
    from audit.report.history import annotate_since, changes
    from audit.report.html import render_report
    from audit.report.metrics import write_metrics
    from audit.report.notices import notify_run
    from audit.report.summary import write_summary

    shared = shared_state_root(run_dir)
    root = shared if shared is not None else run_dir
    docs = run_dir / "validation" / "data_docs" / "index.html"  # absent: not asked for
    annotate_since(summary, history, root)
    summary["changes"] = changes(summary, history, run_dir)
    report = render_report(
        summary,
        data,
        cfg.redacted(),
        [*history, {"dir": run_dir.name, **summary}],
        run_dir / "report" / "index.html",
        docs if docs.is_file() else None,
    )
    clock.done("report")
    summary["run"]["stage_seconds"] = dict(clock.stages)
    summary["run"]["finished_at"] = _now()
    summary["run"]["duration_seconds"] = round(clock.elapsed(), 3)
    write_metrics(run_dir, summary, history, cfg.output)
    write_summary(run_dir, summary)
    # The notices once the run is on disk: a webhook that hangs or fails cannot cost the
    # run its result (notify_run never raises, and each webhook has one deadline). What
    # became of them is the run directory's notices.json, and a count in its metrics.
    notified = notify_run(cfg, summary, report, shared, run_dir)
    if notified.kind is not None:
        _count_notices(run_dir, summary, history, cfg, notified.as_json())
    return RunOutcome(run_dir, summary, report, figures)


def _count_notices(
    run_dir: Path,
    summary: dict[str, Any],
    history: list[dict[str, Any]],
    cfg: AuditConfig,
    notices: dict[str, Any],
) -> None:
    """The run's metrics written again (each file replaced atomically, pushed again) with
    the notices' count, ``mirror_audit_notices_failed``; summary.json is left as it was.
    Never raises: the run is finished and on disk, and an error here would make the run
    directory's handling (``run_dirs``) remove it."""
    from audit.report.metrics import write_metrics

    try:
        write_metrics(run_dir, {**summary, "notices": notices}, history, cfg.output)
    except Exception as exc:
        log.warning("metrics: the notices' count could not be added (%s); the run's result stands", exc)


def _failover_plan(
    prof: Profile, compared: Compared, run_dir: Path, cfg: AuditConfig
) -> dict[str, Any] | None:
    """Mode mm2's readiness: the offsets translating each group's latest checkpoint would set."""
    if not prof.failover_plan:
        return None
    from audit.report.failover_plan import write_failover_plan

    bootstrap = cfg.destination.bootstrap_servers if cfg.destination else None
    return write_failover_plan(compared, run_dir, bootstrap).to_json()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class StageClock:
    """How long each stage of a job took: logged as it ends (where an audit's time goes is
    worth seeing every run), and kept for summary.json and the metrics."""

    def __init__(self) -> None:
        self.started_at = _now()
        self._start = self._last = time.monotonic()
        self.stages: dict[str, float] = {}

    def done(self, stage: str) -> None:
        now = time.monotonic()
        log.info("%s: %.1fs", stage, now - self._last)
        self.stages[stage] = round(self.stages.get(stage, 0.0) + now - self._last, 3)
        self._last = now

    def elapsed(self) -> float:
        return time.monotonic() - self._start


def audit_offline(
    source: Path,
    destination: Path,
    cfg: AuditConfig,
    out: Path | None = None,
    job: Job = AUDIT,
    engine: EngineName = "spark",
) -> RunOutcome:
    """``audit`` (under the output root's lock) and the offline ``readiness`` (without it)
    of two snapshot directories into a new run directory."""
    mask_config(cfg)
    with run_directory(cfg, out, job.lock_name, (source, destination)) as run_dir:
        return audit_snapshots(source, destination, run_dir, cfg, job, engine)


def nightly(
    cfg: AuditConfig,
    out: Path | None = None,
    job: Job = NIGHTLY,
    engine: EngineName = "spark",
    full_records: bool = False,
) -> RunOutcome:
    """Snapshot both clusters (destination first) into the run directory, then audit; the
    nightly job holds the output root's lock throughout, the live readiness check does not."""
    mask_config(cfg)
    from audit.validate.run import mode_suites

    prof = job.profile(cfg, None)
    # A missing or broken suite directory fails before the clusters are read (and the
    # suites read here are the ones the run validates with).
    suites = mode_suites(cfg, prof.suite_patterns)
    if cfg.segments.enabled() and job.scans_data:
        prof.require_data_level("segments")
    if cfg.records.enabled and job.scans_data:
        prof.require_records_scan()
    # The run directory is made once the snapshots are taken.
    clock = StageClock()
    with run_directory(cfg, out, job.lock_name) as run_dir:
        return _nightly(cfg, job, prof, run_dir, engine, full_records, clock, suites)


def _nightly(
    cfg: AuditConfig,
    job: Job,
    prof: Profile,
    run_dir: Path,
    engine: EngineName,
    full_records: bool,
    clock: StageClock,
    suites: list[SuiteFile],
) -> RunOutcome:
    from audit.collect.metadata.snapshot import take_snapshots
    from audit.validate import data_docs

    if job.writes_data_docs(cfg):
        data_docs.start()  # GX imports in a process of its own, on the other core
    src, dst = take_snapshots(cfg, run_dir, prof.snapshot)
    clock.done("snapshot")
    if cfg.segments.enabled() and job.scans_data:
        _collect_batches(cfg, src, dst)
        clock.done("segments")
    # What was verified is kept beside the runs (incremental), but not where others write.
    state_root = shared_state_root(run_dir) or run_dir
    scan = prof.records_scan if cfg.records.enabled and job.scans_data else None
    if scan is not None:
        from audit.spark_session import build_spark

        scan(build_spark(cfg.spark), cfg, src, dst, state_root, full_records)
        clock.done("records scan")
    outcome = audit_snapshots(src, dst, run_dir, cfg, job, engine, prof, clock=clock, suites=suites)
    if scan is not None and prof.records_settle is not None:
        prof.records_settle(cfg, src, dst, run_dir, state_root, full_records)
    return outcome


def _collect_batches(cfg: AuditConfig, src: Path, dst: Path) -> None:
    """The nightly job's batch-level collection (``segments`` in the config), destination
    first like the snapshot. Readiness never waits for it: batch scans take minutes."""
    from audit.collect.batches.collect import collect_batches
    from audit.spark_session import build_spark

    spark = build_spark(cfg.spark)
    for role, directory in (("destination", dst), ("source", src)):
        side = cfg.segments.destination if role == "destination" else cfg.segments.source
        if side.read != "none":
            note = collect_batches(spark, cfg, role, directory)  # type: ignore[arg-type]
            log.info(
                "%s: %d batches, %d markers collected (%s)", role, note["batches"], note["markers"], side.read
            )
