"""The failover's jobs after the stop: ``failover verify`` (the destination against the
readiness run taken before the stop) and ``failback readiness`` (what mirroring back would
truncate). Each takes its snapshot pair as its job declares (audit/jobs.py) and runs the
same stages as an audit (``pipeline.audit_snapshots``)."""

from __future__ import annotations

import logging
from pathlib import Path

from audit.compare.engines import EngineName
from audit.config import AuditConfig
from audit.fsutil import json_loads
from audit.jobs import FAILBACK_READINESS, FAILOVER_VERIFY
from audit.logs import mask_config
from audit.paths import local_path
from audit.pipeline import RunOutcome, audit_snapshots
from audit.run_dirs import run_directory
from audit.snapshot import read_manifest
from audit.validate.figures import EXPECTED_LOSS

log = logging.getLogger(__name__)


def failover_verify(
    cfg: AuditConfig,
    before: Path,
    out: Path | None = None,
    source: Path | None = None,
    destination: Path | None = None,
    engine: EngineName = "local",
) -> RunOutcome:
    """The destination after the stop against the readiness run taken before it (``before``):
    records lost per partition against the loss predicted, where each group resumes.

    Snapshot directories given are audited as they are; otherwise the destination is
    snapshotted live (with the mirror's state) and so is the source where it answers. In a
    disaster it does not: the source's offsets then come from the mirror's own record of
    them, else from the readiness run's source snapshot, and the run says which.
    """
    mask_config(cfg)
    before, before_source = _readiness_run(local_path(before))
    with run_directory(cfg, out, FAILOVER_VERIFY.lock_name, (source, destination)) as run_dir:
        return _failover_verify(cfg, before, before_source, run_dir, source, destination, engine)


def _failover_verify(
    cfg: AuditConfig,
    before: Path,
    before_source: Path,
    run_dir: Path,
    source: Path | None,
    destination: Path | None,
    engine: EngineName,
) -> RunOutcome:
    from audit.collect.metadata.snapshot import collect_snapshot, with_mirror_state
    from audit.errors import AuditError, UsageError
    from audit.snapshot import check_table, write_snapshot
    from audit.validate import data_docs

    prof = FAILOVER_VERIFY.profile(cfg, before)
    source_from = "the source snapshot given"
    if destination is None:
        data_docs.start()  # GX imports in a process of its own while the clusters answer
        from audit.collect.metadata.mirror_state import read_mirror_state

        if not cfg.mirror.state_file:
            raise UsageError(
                "failover verify needs the mirror's state at the stop: set mirror.state_file in the "
                "configuration (or give --destination DIR, a snapshot taken with --mirror-state)"
            )
        state = read_mirror_state(Path(cfg.mirror.state_file))
        dst_snap = collect_snapshot(cfg, "destination", prof.snapshot)
        dst_snap = with_mirror_state(dst_snap, state, cfg.mirror.state_file)
        destination = write_snapshot(run_dir / "destination", dst_snap)
        if source is None:
            try:
                source = write_snapshot(run_dir / "source", collect_snapshot(cfg, "source", prof.snapshot))
                source_from = "the live source"
            except AuditError as exc:
                log.warning("the source cannot be read (%s): using the readiness run's source snapshot", exc)
                source = before_source
                source_from = f"the readiness run's source snapshot (the source did not answer: {exc})"
    elif source is None:
        source = before_source
        source_from = "the readiness run's source snapshot (no source snapshot given)"
    if not check_table(destination, "mirror_partitions"):
        raise UsageError(
            f"{destination} holds no mirror state (mirror_partitions.parquet): take the destination's "
            "snapshot with 'snapshot --mirror-state FILE' or mirror.state_file"
        )
    return audit_snapshots(
        source,
        destination,
        run_dir,
        cfg,
        FAILOVER_VERIFY,
        engine,
        prof,
        run_extra={"before": str(before), "source_offsets_read_from": source_from},
    )


def failback_readiness(
    cfg: AuditConfig,
    out: Path | None = None,
    source: Path | None = None,
    destination: Path | None = None,
    engine: EngineName = "local",
) -> RunOutcome:
    """What mirroring back would truncate on the old source (``source``: the cluster the
    original mirror read from), against the mirror state recorded at the stop (in the
    destination's snapshot, or ``mirror.state_file``); GO / NO-GO."""
    mask_config(cfg)
    with run_directory(cfg, out, FAILBACK_READINESS.lock_name, (source, destination)) as run_dir:
        return _failback_readiness(cfg, run_dir, source, destination, engine)


def _failback_readiness(
    cfg: AuditConfig, run_dir: Path, source: Path | None, destination: Path | None, engine: EngineName
) -> RunOutcome:
    from audit.collect.metadata.snapshot import take_snapshots
    from audit.errors import UsageError
    from audit.snapshot import check_table
    from audit.validate import data_docs

    prof = FAILBACK_READINESS.profile(cfg, None)
    if source is None or destination is None:
        if not cfg.mirror.state_file:
            raise UsageError(
                "failback readiness needs the mirror state recorded at the stop: set mirror.state_file "
                "in the configuration (or give --source DIR --destination DIR, the destination's "
                "snapshot taken with --mirror-state)"
            )
        data_docs.start()  # GX imports in a process of its own while the clusters answer
        source, destination = take_snapshots(cfg, run_dir, prof.snapshot)
    for directory in (destination, source):
        if check_table(directory, "mirror_partitions"):
            break
    else:
        raise UsageError(
            f"neither {source} nor {destination} holds a mirror state (mirror_partitions.parquet): take "
            "the snapshots with 'snapshot --mirror-state FILE' or mirror.state_file"
        )
    return audit_snapshots(source, destination, run_dir, cfg, FAILBACK_READINESS, engine, prof)


def _readiness_run(before: Path) -> tuple[Path, Path]:
    """A readiness run's directory, checked to hold what verify compares against, and its
    source snapshot (in the run for a live check, where its summary says for an offline one)."""

    from audit.errors import InputError

    summary = before / "summary.json"
    try:
        data = json_loads(summary.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{before} is not a finished run: {summary} is missing") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"{summary} cannot be read: {exc}") from exc
    if not isinstance(data, dict) or "readiness" not in data or EXPECTED_LOSS.name not in data:
        raise InputError(
            f"{before} is not a readiness run (its summary.json has no readiness figures): give the run "
            "of the 'mirror-audit readiness' taken before the stop"
        )
    if data.get("mode", "cluster-mirroring") != "cluster-mirroring":
        raise InputError(
            f"{before} is a readiness run of mode {data.get('mode')}: failover verify needs cluster-mirroring"
        )
    source = before / "source"
    if not source.is_dir():
        run = data.get("run")
        given = run.get("source") if isinstance(run, dict) else None
        source = Path(str(given or source))
    read_manifest(source, "source")
    return before, source
