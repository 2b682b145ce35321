"""A profile per mode: everything that differs between auditing an offset-preserving mirror
(``cluster-mirroring``) and MirrorMaker 2 (``mm2``), in one place.

The pipeline asks the profile of the configured mode once and follows it: which topics a
snapshot reads on each side and what else it collects, which comparisons run on which
inputs, which suites judge them and which invariants the catalogue lists, which queries
give the readiness figures and the report's slices, and what only one mode has (batch and
record checks; the failover plan). No module below this one decides by mode.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from audit.collect.metadata.snapshot import SnapshotPlan
from audit.compare import cluster_mirroring, failover, mm2
from audit.compare.engines import Tables
from audit.compare.run import (
    Inputs,
    cluster_mirroring_inputs,
    data_level_tables,
    load_compared,
    mm2_inputs,
)
from audit.compare.sql import Comparison
from audit.config import AuditConfig, Mode
from audit.errors import ConfigError
from audit.report.data import (
    CLUSTER_MIRRORING_SLICES,
    FAILBACK_SLICES,
    FAILOVER_SLICES,
    MM2_SLICES,
    ReportSlices,
)
from audit.validate.figures import FAILOVER_KEY, FigureQueries
from audit.validate.invariants import CLUSTER_MIRRORING, FAILBACK, FAILOVER_VERIFY, Invariant, mm2_catalogue
from audit.validate.readiness import (
    CLUSTER_MIRRORING_DRAIN,
    CLUSTER_MIRRORING_FIGURES,
    FAILBACK_FIGURES,
    FAILOVER_FIGURES,
    MM2_DRAIN,
    MM2_FIGURES,
)

Role = Literal["source", "destination"]


@dataclass(frozen=True)
class Profile:
    mode: Mode
    suite_patterns: tuple[str, ...]  # file name globs in expectations/
    catalogue: tuple[Invariant, ...]
    comparisons: tuple[Comparison, ...]
    inputs: Inputs
    # Readiness figures: summary.json's top level, for a readiness check.
    figures: FigureQueries
    # readiness --wait-drained: per in-scope partition lag_records, src_end, open_txn.
    drain: str
    slices: ReportSlices
    # The Spark-only tables that grow with the data (batches, records), where they apply.
    data_level: Callable[[Tables, Path, Path, AuditConfig, Path], list[str]] | None
    # The nightly job's records scan (records.enabled), into both snapshots: record chunks
    # at equal offsets, or each record's content digest where offsets are translated.
    records_scan: Callable[[Any, AuditConfig, Path, Path, Path, bool], Any] | None
    # After a nightly's comparison: what its records scan keeps for the next one, where the
    # comparison (not the scan) decides it: (config, source, destination, run, state root,
    # --full).
    records_settle: Callable[[AuditConfig, Path, Path, Path, Path, bool], None] | None
    # After a scanning job's comparison, before its checks: the few records its findings
    # point at, fetched and described while the clusters are at hand (mode mm2: the first
    # missing record per partition); registered beside the comparison tables.
    describe_findings: Callable[[Any, AuditConfig], Any] | None
    # Whether a readiness check writes the failover plan (translated group offsets).
    failover_plan: bool
    # Which topics a snapshot of each side reads, and whether MirrorMaker 2's own too.
    snapshot: SnapshotPlan
    # A job of the failover (verify, failback) rather than an audit: its figures on every
    # run, under ``figures_key`` (None: the top level). Whether a job answers GO / NO-GO
    # is the job's (audit/jobs.py).
    job_figures: FigureQueries | None = None
    figures_key: str | None = None
    # The invariants whose every in-scope row must be checked for a GO (None: those of the
    # catalogue the in-process engine computes), and whether one not collected at all is
    # "cannot verify" too (verify and failback: their inputs are the point of the job).
    gates: tuple[str, ...] | None = None
    gates_need_collected: bool = False

    def gating(self) -> frozenset[str]:
        """The IDs of the invariants that gate this job's GO / NO-GO."""
        if self.gates is not None:
            return frozenset(self.gates)
        return frozenset(i.id for i in self.catalogue if not i.spark_only and i.not_applicable is None)

    @property
    def tables(self) -> tuple[str, ...]:
        return tuple(c.table for c in self.comparisons)

    def require_data_level(self, what: str) -> None:
        """Batch checks and record chunks compare equal offsets: refused, naming ``what``
        asked for them, where the mode translates offsets."""
        if self.data_level is None:
            raise ConfigError(
                f"{what}: batch-level checks and record chunks compare equal offsets: use them with mode "
                f"cluster-mirroring (mode is {self.mode}); in mode mm2 the nightly job reads records itself "
                "(records.enabled)"
            )

    def require_records_scan(self) -> None:
        """records.enabled where this job's mode has no records scan: refused."""
        if self.records_scan is None:
            raise ConfigError(f"records.enabled: mode {self.mode} has no record-level checks")


def _same_names(cfg: AuditConfig, role: Role) -> Callable[[str], bool]:
    return cfg.scope.topic_in_scope


def _replica_names(cfg: AuditConfig, role: Role) -> Callable[[str], bool]:
    """Scope names source topics; under MirrorMaker 2 a target topic is in scope when the
    source topic it replicates is (``source.orders`` for ``orders``)."""
    if role == "source":
        return cfg.scope.topic_in_scope

    def replica_in_scope(topic: str) -> bool:
        source_topic = cfg.mirror.mm2.source_topic(topic)
        return source_topic is not None and cfg.scope.topic_in_scope(source_topic)

    return replica_in_scope


def _scan_chunks(spark: Any, cfg: AuditConfig, src: Path, dst: Path, state_root: Path, full: bool) -> Any:
    from audit.collect.records.collect import collect_records

    return collect_records(spark, cfg, src, dst, state_root, full=full)


def _scan_digests(spark: Any, cfg: AuditConfig, src: Path, dst: Path, state_root: Path, full: bool) -> Any:
    from audit.collect.records.digests import collect_digests

    return collect_digests(spark, cfg, src, dst, state_root, full)


def _settle_digests(
    cfg: AuditConfig, src: Path, dst: Path, run_dir: Path, state_root: Path, full: bool
) -> None:
    from audit.collect.records.digest_history import settle_run

    settle_run(cfg, src, dst, run_dir, state_root, full)


def _describe_first_missing(compared: Any, cfg: AuditConfig) -> Any:
    from audit.collect.records.first_missing import describe_first_missing

    return describe_first_missing(compared, cfg)


def _scope_of(cfg: AuditConfig) -> Callable[[str], bool]:
    return cfg.scope.topic_in_scope


def _mm2_scope_of(cfg: AuditConfig) -> Callable[[str], bool]:
    return cfg.scope.mm2_topic_in_scope


PROFILES: dict[str, Profile] = {
    "cluster-mirroring": Profile(
        mode="cluster-mirroring",
        suite_patterns=("cm_*.json",),
        catalogue=CLUSTER_MIRRORING,
        comparisons=cluster_mirroring.COMPARISONS,
        inputs=Inputs(cluster_mirroring_inputs, _scope_of),
        figures=CLUSTER_MIRRORING_FIGURES,
        drain=CLUSTER_MIRRORING_DRAIN,
        slices=CLUSTER_MIRRORING_SLICES,
        data_level=data_level_tables,
        records_scan=_scan_chunks,
        records_settle=None,
        describe_findings=None,
        failover_plan=False,
        snapshot=SnapshotPlan(_same_names),
    ),
    "mm2": Profile(
        mode="mm2",
        suite_patterns=("mm2_*.json",),
        catalogue=mm2_catalogue(),
        comparisons=mm2.COMPARISONS,
        inputs=Inputs(mm2_inputs, _mm2_scope_of, replica_names=True),
        figures=MM2_FIGURES,
        drain=MM2_DRAIN,
        slices=MM2_SLICES,
        data_level=None,
        records_scan=_scan_digests,
        records_settle=_settle_digests,
        describe_findings=_describe_first_missing,
        failover_plan=True,
        snapshot=SnapshotPlan(_replica_names, reads_mm2_topics=True),
    ),
}


def failover_verify_profile(before: Path) -> Profile:
    """``failover verify --before READINESS_RUN``: the destination after the stop (and the
    source, live or as the readiness run saw it) against what readiness predicted, whose
    partitions table joins as ``{before_partitions}``."""
    from audit.compare import cluster_mirroring as cm

    def prepare(tables: Tables, source: Path, destination: Path) -> list[tuple[str, Path, str]]:
        load_compared(
            tables,
            "before_partitions",
            before / "compare" / "partitions.parquet",
            "partitions",
            failover.BEFORE_COLUMNS,
        )
        return cluster_mirroring_inputs(tables, source, destination)

    base = PROFILES["cluster-mirroring"]
    return dataclasses.replace(
        base,
        suite_patterns=("cm_mirror_states.json", "fo_*.json"),
        catalogue=FAILOVER_VERIFY,
        comparisons=(cm.PARTITIONS, cm.GROUP_OFFSETS, failover.MIRROR_STATES, *failover.VERIFY),
        inputs=Inputs(prepare, _scope_of),
        slices=FAILOVER_SLICES,
        data_level=None,
        job_figures=FAILOVER_FIGURES,
        figures_key=FAILOVER_KEY,
        gates=tuple(i.id for i in FAILOVER_VERIFY),
        gates_need_collected=True,
    )


def failback_profile() -> Profile:
    """``failback readiness``: the old source (the source snapshot) against the mirror state
    recorded at the stop: what mirroring back would truncate; GO / NO-GO."""
    from audit.compare import cluster_mirroring as cm

    base = PROFILES["cluster-mirroring"]
    return dataclasses.replace(
        base,
        suite_patterns=("fb_*.json",),
        catalogue=FAILBACK,
        comparisons=(cm.PARTITIONS, cm.GROUP_OFFSETS, *failover.FAILBACK),
        slices=FAILBACK_SLICES,
        data_level=None,
        job_figures=FAILBACK_FIGURES,
        gates=tuple(i.id for i in FAILBACK),
        gates_need_collected=True,
    )


def profile(mode: str) -> Profile:
    return PROFILES[mode]


def profile_of(cfg: AuditConfig) -> Profile:
    return PROFILES[cfg.mode]
