"""What a readiness check says about the data-level invariants it does not compute: the
latest nightly run's results, with their age.

Readiness answers in seconds, in process: it scans no records and leaves the data-level
invariants (the Spark engine's: CM-DATA-*, MM2-DATA-*) unchecked. A nightly run of the same
cluster pair under the same output root did check them, hours ago; readiness reports those
results with the run and its age (``nightly_data`` in summary.json, a line on the console),
and gates on them only where the configuration asks (``readiness.nightly_data_max_age_hours``):
then the answer is NO-GO when no nightly run checked them, when the newest is older than
that, or when it found one failing or could not check every row. A run dated in the future
has an unknown age, never a fresh one (``load_history`` already leaves such runs out).

Rows left unchecked are a gap like any gating invariant's, and ``readiness.accept_unchecked``
accepts them here as it does there: a pair with a compacted mirrored topic (which MM2-DATA
never checks whole) could otherwise never be GO with the gate on, while the configuration
took the ID without a word. An accepted gap is still said on every run; a failure, a stale
or missing nightly run, or an invariant it did not evaluate is never accepted.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from audit.report.history import CLOCK_SKEW, parse_time

# The statuses a nightly result may have and still let a gated readiness say GO.
_FINE = ("pass", "warn")


def latest_nightly_data(
    history: list[dict[str, Any]], ids: Collection[str], now: datetime
) -> dict[str, Any] | None:
    """From earlier runs' summaries (oldest first, as ``load_history`` gives them), the newest
    nightly run that evaluated any of ``ids``: its directory, start, age and those
    invariants' status, violations and unchecked rows. None when no such run exists."""
    for run in reversed(history):
        info = run.get("run") or {}
        invariants = run.get("invariants") or {}
        if info.get("job") != "nightly":
            continue
        evaluated = {
            i: invariants[i]
            for i in sorted(ids)
            if isinstance(invariants.get(i), dict) and invariants[i].get("status") not in (None, "skipped")
        }
        if not evaluated:
            continue
        started = parse_time(info.get("started_at"))
        return {
            "run": run.get("dir"),
            "started_at": info.get("started_at"),
            "age_seconds": _age(started, now),
            "invariants": {
                i: {
                    "status": inv.get("status"),
                    "violations": inv.get("violations"),
                    "unchecked": inv.get("unchecked"),
                }
                for i, inv in evaluated.items()
            },
            "not_evaluated": [i for i in sorted(ids) if i not in evaluated],
        }
    return None


def _age(started: datetime | None, now: datetime) -> int | None:
    """Seconds since ``started``; None (unknown) for no time or one ahead of ``now`` by more
    than the clock skew: a negative age is under every maximum, and would pass the gate."""
    if started is None or started - now > CLOCK_SKEW:
        return None
    return max(0, round((now - started).total_seconds()))


def gate_reasons(
    found: dict[str, Any] | None,
    ids: Collection[str],
    max_age_hours: float | None,
    accepted: Collection[str] = (),
) -> list[str]:
    """Why a readiness check gated on the nightly's data-level results is NO-GO (empty: it
    may say GO); nothing when the configuration does not ask for the gate. Unchecked rows of
    an invariant in ``accepted`` (``readiness.accept_unchecked``) are no reason: they are in
    ``accepted_gaps`` instead."""
    return _gate(found, ids, max_age_hours, accepted)[0]


def accepted_gaps(
    found: dict[str, Any] | None,
    ids: Collection[str],
    max_age_hours: float | None,
    accepted: Collection[str],
) -> list[str]:
    """The gaps the gate would have blocked on that the configuration accepts by name, one
    line each, to be said on every run (``accepted_unchecked``, the console)."""
    return _gate(found, ids, max_age_hours, accepted)[1]


def _gate(
    found: dict[str, Any] | None,
    ids: Collection[str],
    max_age_hours: float | None,
    accepted: Collection[str],
) -> tuple[list[str], list[str]]:
    """The gate's reasons for NO-GO and the accepted gaps, from one reading of ``found``."""
    if max_age_hours is None or not ids:
        return [], []
    setting = "readiness.nightly_data_max_age_hours"
    if found is None:
        checked = ", ".join(sorted(ids))
        return [f"cannot verify: no nightly run under this output root checked {checked} ({setting})"], []
    reasons: list[str] = []
    gaps: list[str] = []
    age = found["age_seconds"]
    if age is None or age > max_age_hours * 3600:
        shown = "of unknown age" if age is None else f"{age / 3600:.1f} h old"
        reasons.append(
            f"cannot verify: the latest nightly run checking the data ({found['run']}) is {shown}, "
            f"over {max_age_hours:g} h ({setting})"
        )
    for inv_id, result in found["invariants"].items():
        if result["status"] not in _FINE:
            reasons.append(f"{inv_id} {result['status']} in the latest nightly run ({found['run']})")
        elif result.get("unchecked"):
            line = (
                f"{inv_id}: {result['unchecked']} rows unchecked in the latest nightly run ({found['run']})"
            )
            if inv_id in accepted:
                gaps.append(f"{line} (accepted: readiness.accept_unchecked)")
            else:
                reasons.append(f"cannot verify: {line}")
    reasons += [
        f"cannot verify: {inv_id} was not evaluated by the latest nightly run ({found['run']})"
        for inv_id in found["not_evaluated"]
    ]
    return reasons, gaps


def describe(found: dict[str, Any] | None) -> str:
    """The console line: what the latest nightly said, and how long ago."""
    if found is None:
        return "data-level checks: no nightly run under this output root checked them"
    age = found["age_seconds"]
    when = "at an unknown time" if age is None else f"{age / 3600:.1f} h ago"
    statuses = ", ".join(f"{i} {r['status']}" for i, r in found["invariants"].items())
    return f"data-level checks from the latest nightly run ({found['run']}, {when}): {statuses}"
