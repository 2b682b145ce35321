"""A profile per mode: everything that differs between auditing an offset-preserving mirror
(``cluster-mirroring``) and MirrorMaker 2 (``mm2``), in one place.

The pipeline asks the profile of the configured mode once and follows it: which topics a
snapshot reads on each side and what else it collects, which comparisons run on which
inputs, which suites judge them and which invariants the catalogue lists, which queries
give the readiness figures and the report's slices, and what only one mode has (batch and
record checks; the failover plan). No module below this one decides by mode.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from audit.collect.metadata.snapshot import SnapshotPlan
from audit.compare import cluster_mirroring, mm2
from audit.compare.engines import Tables
from audit.compare.run import Inputs, data_level_tables, mm2_inputs, scan_issue_inputs
from audit.compare.sql import Comparison
from audit.config import AuditConfig, Mode
from audit.errors import ConfigError
from audit.report.data import CLUSTER_MIRRORING_SLICES, MM2_SLICES, ReportSlices
from audit.validate.catalogue import CLUSTER_MIRRORING, Invariant, mm2_catalogue
from audit.validate.readiness import CLUSTER_MIRRORING_FIGURES, MM2_FIGURES, FigureQueries

Role = Literal["source", "destination"]


@dataclass(frozen=True)
class Profile:
    mode: Mode
    suite_prefix: str  # expectations/<prefix>*.json
    catalogue: tuple[Invariant, ...]
    comparisons: tuple[Comparison, ...]
    inputs: Inputs
    figures: FigureQueries
    slices: ReportSlices
    # The Spark-only tables that grow with the data (batches, records), where they apply.
    data_level: Callable[[Tables, Path, Path, AuditConfig, Path], list[str]] | None
    # Whether a readiness check writes the failover plan (translated group offsets).
    failover_plan: bool
    # Which topics a snapshot of each side reads, and whether MirrorMaker 2's own too.
    snapshot: SnapshotPlan

    @property
    def tables(self) -> tuple[str, ...]:
        return tuple(c.table for c in self.comparisons)

    def require_data_level(self, what: str) -> None:
        """Batch and record checks compare equal offsets: refused, naming ``what`` asked
        for them, where the mode translates offsets."""
        if self.data_level is None:
            raise ConfigError(
                f"{what}: batch- and record-level checks compare equal offsets: use them with mode "
                f"cluster-mirroring (mode is {self.mode})"
            )


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


def _scope_of(cfg: AuditConfig) -> Callable[[str], bool]:
    return cfg.scope.topic_in_scope


def _mm2_scope_of(cfg: AuditConfig) -> Callable[[str], bool]:
    return cfg.scope.mm2_topic_in_scope


PROFILES: dict[str, Profile] = {
    "cluster-mirroring": Profile(
        mode="cluster-mirroring",
        suite_prefix="cm_",
        catalogue=CLUSTER_MIRRORING,
        comparisons=cluster_mirroring.COMPARISONS,
        inputs=Inputs(scan_issue_inputs, _scope_of),
        figures=CLUSTER_MIRRORING_FIGURES,
        slices=CLUSTER_MIRRORING_SLICES,
        data_level=data_level_tables,
        failover_plan=False,
        snapshot=SnapshotPlan(_same_names),
    ),
    "mm2": Profile(
        mode="mm2",
        suite_prefix="mm2_",
        catalogue=mm2_catalogue(),
        comparisons=mm2.COMPARISONS,
        inputs=Inputs(mm2_inputs, _mm2_scope_of, replica_names=True),
        figures=MM2_FIGURES,
        slices=MM2_SLICES,
        data_level=None,
        failover_plan=True,
        snapshot=SnapshotPlan(_replica_names, reads_mm2_topics=True),
    ),
}


def profile(mode: str) -> Profile:
    return PROFILES[mode]


def profile_of(cfg: AuditConfig) -> Profile:
    return PROFILES[cfg.mode]
