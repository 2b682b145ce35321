"""The jobs: collect -> compare -> validate -> report, each stage reading the previous one's files."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from audit.compare.run import Engine
from audit.config import AuditConfig
from audit.errors import ConfigError, ExitCode
from audit.paths import local_path, writable_directory
from audit.snapshot import read_manifest

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunOutcome:
    run_dir: Path
    summary: dict[str, Any]
    report: Path

    @property
    def exit_code(self) -> int:
        return ExitCode.FAILED if self.summary["verdict"] == "FAIL" else ExitCode.OK


def audit_snapshots(
    source: Path,
    destination: Path,
    run_dir: Path,
    cfg: AuditConfig,
    readiness: bool = False,
    engine: Engine = "spark",
) -> RunOutcome:
    """Audit two snapshot directories into ``run_dir`` (summary.json is written last).

    ``engine`` computes the comparison tables: Spark by default; "local" (pandas in this
    process) for readiness, where an answer is needed before a JVM could start. The same GX
    suites judge both, and both write the same files.
    """
    from audit.compare.run import run_compare, run_compare_local, run_compare_mm2
    from audit.report.data import collect_report_data
    from audit.report.html import render_report
    from audit.report.summary import build_summary, load_history, write_summary
    from audit.validate.readiness import readiness_figures
    from audit.validate.run import mode_suites, run_validation

    _check_mode(cfg, engine)
    suites = mode_suites(cfg)
    source, destination, run_dir = local_path(source), local_path(destination), local_path(run_dir)
    src_manifest = read_manifest(source, "source")
    dst_manifest = read_manifest(destination, "destination")
    started = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    writable_directory(run_dir, "run directory")
    clock = _StageClock()
    if engine == "local":
        compared = run_compare_local(source, destination, run_dir, cfg)
    else:
        from audit.spark_session import build_spark

        spark = build_spark(cfg.spark)
        clock.done("spark session")
        compare = run_compare_mm2 if cfg.mode == "mm2" else run_compare
        compared = compare(spark, source, destination, run_dir, cfg)
    clock.done(f"compare ({engine})")
    results = run_validation(compared, run_dir, cfg, suites=suites)
    clock.done("validate (Great Expectations)")
    figures = readiness_figures(compared) if readiness else None
    plan = None
    if readiness and cfg.mode == "mm2":
        from audit.report.failover_plan import write_failover_plan

        bootstrap = cfg.destination.bootstrap_servers if cfg.destination else None
        plan = write_failover_plan(compared.frames["mm2_group_offsets"], run_dir, bootstrap)
    data = collect_report_data(compared)
    clock.done("readiness figures and report data")
    run_info = {
        "started_at": started,
        "engine": engine,
        "source": str(source),
        "destination": str(destination),
        "source_cluster_id": src_manifest.get("cluster_id"),
        "destination_cluster_id": dst_manifest.get("cluster_id"),
        "source_snapshot_at": src_manifest.get("started_at"),
        "destination_snapshot_at": dst_manifest.get("started_at"),
        "total_lag_records": data.totals["total_lag_records"],
        "thresholds": cfg.redacted()["thresholds"],
    }
    details = _details(source, src_manifest)
    if compared.engine == "spark" and "batch_diffs" in compared.frames:
        from audit.report.data import first_batch_divergence

        details["CM-DATA-2"] = {"first_divergence": first_batch_divergence(compared)}
    if compared.engine == "spark" and "record_chunk_diffs" in compared.frames:
        from audit.report.data import first_record_divergence

        records_note = (dst_manifest.get("notes") or {}).get("records") or {}
        details["CM-DATA-1"] = {
            "first_divergence": first_record_divergence(compared),
            "coverage": records_note.get("coverage"),
            "isolation": records_note.get("isolation"),
            "unreadable_ranges": _unreadable_ranges(records_note),
        }
    summary = build_summary(results, cfg.mode, run_info, figures, details)
    if plan is not None:
        summary["failover_plan"] = plan.to_json()
    history = [*load_history(run_dir.parent, exclude=run_dir), {"dir": run_dir.name, **summary}]
    report = render_report(
        summary,
        data,
        cfg.redacted(),
        history,
        run_dir / "report" / "index.html",
        run_dir / "validation" / "data_docs" / "index.html",
    )
    write_summary(run_dir, summary)
    clock.done("report and summary")
    return RunOutcome(run_dir, summary, report)


def _unreadable_ranges(records_note: dict[str, Any]) -> dict[str, Any]:
    """The record scan's ranges that could not be read, from its manifest note: their
    chunks are absent on that side and show as missing there, which without this would
    read as lost data rather than as a read that failed."""
    issues = records_note.get("issues") or []
    first = [
        {
            "topic": i.get("topic"),
            "partition": i.get("partition"),
            "offset": i.get("position"),
            "detail": i.get("detail"),
        }
        for i in issues[:20]
    ]
    return {"total": int(records_note.get("unreadable_ranges", len(issues))), "first": first}


def _check_mode(cfg: AuditConfig, engine: Engine) -> None:
    """Before any work: what this version cannot judge must not look like it ran."""
    if cfg.mode != "mm2":
        return
    if engine != "spark":
        raise ConfigError("mode 'mm2' runs on the Spark engine only in this version: use --engine spark")


class _StageClock:
    """Logs how long each stage took: where an audit's time goes is worth seeing every run."""

    def __init__(self) -> None:
        self._last = time.monotonic()

    def done(self, stage: str) -> None:
        now = time.monotonic()
        log.info("%s: %.1fs", stage, now - self._last)
        self._last = now


def _details(source: Path, manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """CM-TXN-1 names the open transactions as `kafka-transactions find-hanging` does
    (transactional id, producer id/epoch, partition, start), coordinator and partition side,
    where the source allowed the transaction admin calls; otherwise says why not."""
    from dataclasses import asdict

    from audit.snapshot import OpenTransactionRecord, check_table, read_records

    note = (manifest.get("notes") or {}).get("open_transactions", "not collected")
    if not check_table(source, "open_transactions"):
        return {"CM-TXN-1": {"open_transactions": [], "open_transactions_source": note}}
    rows = [asdict(r) for r in read_records(source, "open_transactions", OpenTransactionRecord)]
    return {"CM-TXN-1": {"open_transactions": rows[:50], "open_transactions_source": note}}


def new_run_dir(cfg: AuditConfig) -> Path:
    """A new timestamped run directory under ``output.root`` (absolute: a relative root is
    taken from the current directory when no configuration file anchored it)."""
    root = writable_directory(local_path(cfg.output.root), "output root (output.root)")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    run_dir, n = root / stamp, 1
    while run_dir.exists():  # two runs started within the same second
        n += 1
        run_dir = root / f"{stamp}-{n}"
    return run_dir


def nightly(
    cfg: AuditConfig,
    out: Path | None = None,
    readiness: bool = False,
    engine: Engine = "spark",
    full_records: bool = False,
) -> RunOutcome:
    """Snapshot both clusters (destination first) into the run directory, then audit."""
    from audit.collect.snapshot import import_dependencies, take_snapshots
    from audit.validate.gx import import_in_background
    from audit.validate.run import mode_suites

    _check_mode(cfg, engine)
    mode_suites(cfg)  # a missing or broken suite directory fails before the clusters are read
    run_dir = local_path(out) if out is not None else new_run_dir(cfg)
    writable_directory(run_dir, "run directory")
    import_dependencies()
    import_in_background()  # GX's import overlaps the snapshot's network waits
    src, dst = take_snapshots(cfg, run_dir)
    if cfg.segments.enabled() and not readiness:
        _collect_batches(cfg, src, dst)
    if cfg.records.enabled and not readiness:
        from audit.collect.record_collect import collect_records
        from audit.spark_session import build_spark

        collect_records(build_spark(cfg.spark), cfg, src, dst, run_dir.parent, full=full_records)
    return audit_snapshots(src, dst, run_dir, cfg, readiness=readiness, engine=engine)


def _collect_batches(cfg: AuditConfig, src: Path, dst: Path) -> None:
    """The nightly job's batch-level collection (``segments`` in the config), destination
    first like the snapshot. Readiness never waits for it: batch scans take minutes."""
    from audit.collect.batches import collect_batches
    from audit.spark_session import build_spark

    spark = build_spark(cfg.spark)
    for role, directory in (("destination", dst), ("source", src)):
        side = cfg.segments.destination if role == "destination" else cfg.segments.source
        if side.read != "none":
            note = collect_batches(spark, cfg, role, directory)  # type: ignore[arg-type]
            log.info(
                "%s: %d batches, %d markers collected (%s)", role, note["batches"], note["markers"], side.read
            )
