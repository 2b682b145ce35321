"""The invariant catalogue (docs/invariants.md): one declaration per invariant, in the module of
its mode or job (``cluster_mirroring``, ``failover``, ``mm2``), with its statement, what
it needs, its remediation and the details the report shows; the catalogues of the jobs
are tuples of those declarations, never positions in another job's list."""

from __future__ import annotations

from audit.validate.invariants.cluster_mirroring import CLUSTER_MIRRORING
from audit.validate.invariants.declaration import Invariant
from audit.validate.invariants.failover import FAILBACK, FAILOVER_VERIFY
from audit.validate.invariants.mm2 import CM_IN_MM2, MM2, MM2_DATA, mm2_catalogue

# Every invariant of every job of both modes, each once.
ALL: dict[str, Invariant] = {
    inv.id: inv for inv in (*CLUSTER_MIRRORING, *FAILOVER_VERIFY, *FAILBACK, *MM2, *MM2_DATA)
}


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
    "FAILBACK",
    "FAILOVER_VERIFY",
    "MM2",
    "MM2_DATA",
    "Invariant",
    "known_ids",
    "mm2_catalogue",
    "remediation",
    "with_details",
]
