"""GO / NO-GO: what a job that answers one (readiness, drained readiness, failover verify,
failback readiness) says, from its invariants' results and the invariants that gate it.

GO means "checked and fine": no invariant failed, and every gating invariant checked every
in-scope row. A gating invariant with unchecked rows makes the answer NO-GO with
"cannot verify" and what is missing, unless the configuration accepts that gap by name
(``readiness.accept_unchecked``); an accepted gap is said on every run. Jobs whose gating
inputs must be there (verify, failback) also answer "cannot verify" for a gating invariant
that was not collected at all, or that no suite in use checks.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from audit.validate.results import NOT_COLLECTED, NOT_IN_SUITES, InvariantResult

# Skips that leave a gating invariant unverified where its inputs must be there: its data
# was not collected, or no suite in use checks it.
UNCHECKED_SKIPS = (NOT_COLLECTED, NOT_IN_SUITES)


@dataclass(frozen=True)
class Answer:
    go: bool
    reasons: tuple[str, ...]  # why NO-GO: failures first, then what could not be verified
    accepted: tuple[str, ...]  # gaps the configuration accepts, said on every run
    gates: tuple[str, ...]

    @property
    def word(self) -> str:
        return "GO" if self.go else "NO-GO"

    def adding(self, reasons: Sequence[str], accepted: Sequence[str] = ()) -> Answer:
        """This answer with more reasons for NO-GO (none: unchanged) and more gaps the
        configuration accepts (a gate outside the invariants', as the nightly-data one: its
        accepted gaps are said on every run like theirs)."""
        if not reasons and not accepted:
            return self
        go = self.go and not reasons
        return Answer(go, (*self.reasons, *reasons), (*self.accepted, *accepted), self.gates)

    def to_json(self) -> dict[str, Any]:
        return {
            "answer": self.word,
            "reasons": list(self.reasons),
            "accepted": list(self.accepted),
            "gated_by": list(self.gates),
        }


def answer(results: Sequence[InvariantResult], gates: Collection[str], need_collected: bool) -> Answer:
    """The job's answer over ``results``; ``gates`` are the IDs of the invariants that gate it."""
    failed = [f"{r.id} failed ({r.violations} rows)" for r in results if r.status == "fail"]
    cannot, accepted = [], []
    for r in results:
        if r.id not in gates:
            continue
        for gap in r.gaps:
            line = f"{r.id}: {gap.describe()}"
            if r.accepted:
                accepted.append(f"{line} (accepted: readiness.accept_unchecked)")
            else:
                cannot.append(f"cannot verify: {line}")
        if need_collected and r.status == "skipped" and (r.reason or "").startswith(UNCHECKED_SKIPS):
            cannot.append(f"cannot verify: {r.id}: {r.reason}")
    reasons = (*failed, *cannot)
    return Answer(not reasons, tuple(reasons), tuple(accepted), tuple(sorted(gates)))
