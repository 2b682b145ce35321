"""The invariant catalogue (docs/invariants.md), read from the suites shipped with the
package: each invariant is declared once, in ``meta.invariants`` of the suite that holds
its checks (``Invariant``), and a job's catalogue is the declarations of its suites in
report order.

The catalogue is always the shipped suites', whatever suites a run evaluates: an operator's
own suite directory (``validation.expectations_dir``) changes how invariants are checked,
never which ones a run must account for, so a deleted or renamed suite leaves its
invariants listed as skipped, never silently absent.
"""

from __future__ import annotations

import dataclasses
from functools import cache

from audit.validate.invariants.declaration import DETAIL_KINDS, Invariant
from audit.validate.suites import SuiteFile, load_suites, shipped_expectations_dir

# Each job's suites in report order; within a suite, the order of its ``meta.invariants``.
# A suite that declares invariants is listed under its job (a test says so); a suite may
# hold checks of an invariant declared elsewhere (mode mm2's suites check CM-TOPIC-1).
# mirror_states belongs to both: the stop's own state is the last invariant of an audit
# and the first that failover verify judges.
SUITES: dict[str, tuple[str, ...]] = {
    "cluster-mirroring": (
        "cm_topics",
        "cm_partitions",
        "cm_commit_epochs",
        "cm_group_offsets",
        "cm_groups",
        "cm_record_chunks",
        "cm_batch_diffs",
        "cm_scan_issues",
        "cm_marker_diffs",
        "cm_txn_closure",
        "cm_mirror_states",
    ),
    "failover-verify": ("cm_mirror_states", "fo_partitions", "fo_groups"),
    "failback": ("fb_partitions", "fb_groups"),
    "mm2": ("mm2_syncs", "mm2_positions", "mm2_checkpoints", "mm2_group_offsets", "mm2_partitions"),
    "mm2-records": ("mm2_records",),
}


@cache
def _suites() -> dict[str, SuiteFile]:
    """The shipped suites by name, read as a run reads suites (``load_suites``)."""
    return {suite.path.stem: suite for suite in load_suites(shipped_expectations_dir(), ("*.json",))}


def _declared(suite: str) -> tuple[Invariant, ...]:
    declared = (_suites()[suite].raw.get("meta") or {}).get("invariants") or {}
    return tuple(Invariant.from_meta(i, f, f"expectations/{suite}.json") for i, f in declared.items())


def _catalogue(job: str) -> tuple[Invariant, ...]:
    return tuple(inv for suite in SUITES[job] for inv in _declared(suite))


def checked_by(suite_names: tuple[str, ...]) -> frozenset[str]:
    """The invariant IDs the expectations of these shipped suites name."""
    return frozenset().union(*(_suites()[name].invariants for name in suite_names))


# An audit's catalogue, in report order; the stop's own state last (after a stop, an audit
# judges it too).
CLUSTER_MIRRORING = _catalogue("cluster-mirroring")
# failover verify: the destination after the stop against the readiness check before it.
FAILOVER_VERIFY = _catalogue("failover-verify")
# failback readiness: mirroring back truncates the old source to the last mirrored offset.
FAILBACK = _catalogue("failback")
# Mode mm2: offset syncs, positions, checkpoints and translated group offsets; then record
# by record (a records scan).
MM2 = _catalogue("mm2")
MM2_DATA = _catalogue("mm2-records")

# Every invariant of every job of both modes, each once.
ALL: dict[str, Invariant] = {
    inv.id: inv for inv in (*CLUSTER_MIRRORING, *FAILOVER_VERIFY, *FAILBACK, *MM2, *MM2_DATA)
}

# The cluster-mirroring invariants that still mean something when offsets are translated:
# those mode mm2's suites check (partition presence through the replication policy,
# unreplicated records per partition, target group offsets within the replica's range).
CM_IN_MM2 = tuple(
    inv.id for inv in CLUSTER_MIRRORING if inv.id in checked_by(SUITES["mm2"] + SUITES["mm2-records"])
)


def mm2_catalogue() -> tuple[Invariant, ...]:
    """Mode mm2's invariants (metadata, then record level), then the cluster-mirroring
    ones: those of ``CM_IN_MM2`` as they are, the others skipped as not applicable."""
    reason = "assumes equal offsets on both clusters: not applicable in mode mm2"
    return (
        MM2
        + MM2_DATA
        + tuple(
            inv if inv.id in CM_IN_MM2 else dataclasses.replace(inv, not_applicable=reason)
            for inv in CLUSTER_MIRRORING
        )
    )


def declared(invariant_id: str) -> str:
    """``invariant_id``, checked against the catalogue: how code names an invariant it
    treats specially (a demo's promised faults, a chart's caption), so that a renamed or
    removed declaration fails at import, not in a run."""
    if invariant_id not in ALL:
        raise KeyError(f"{invariant_id} is declared in no shipped suite's meta.invariants")
    return invariant_id


def known_ids() -> frozenset[str]:
    """Every invariant ID (what ``readiness.accept_unchecked`` may name)."""
    return frozenset(ALL)


def remediation(invariant_id: str) -> str | None:
    """What to do about a failing invariant; None for an operator's own invariant ID."""
    inv = ALL.get(invariant_id)
    return inv.remediation if inv is not None else None


def with_details(kind: str) -> tuple[str, ...]:
    """The IDs of the invariants that show details of ``kind`` (``Invariant.details``)."""
    return tuple(inv.id for inv in ALL.values() if kind in inv.details)


__all__ = [
    "ALL",
    "CLUSTER_MIRRORING",
    "CM_IN_MM2",
    "DETAIL_KINDS",
    "FAILBACK",
    "FAILOVER_VERIFY",
    "MM2",
    "MM2_DATA",
    "SUITES",
    "Invariant",
    "checked_by",
    "declared",
    "known_ids",
    "mm2_catalogue",
    "remediation",
    "with_details",
]
