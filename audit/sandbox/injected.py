"""What a faulty demo injects, and whether the audit caught exactly that.

A faulty demo is meant to end FAIL: the exit code 1 of ``mirror-audit demo`` is the
audit's verdict and stays so. Whether the demo *worked* is another question, answered
here for ``make demo`` (``--expect-faults``): every injected fault caught with the status
it should have, and nothing else failing or warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class InjectedFaults:
    fail: frozenset[str]
    # Invariants that warn because of the faults (None: warnings are not part of the promise).
    warn: frozenset[str] | None = None

    def problems(self, summary: dict[str, Any]) -> list[str]:
        """What differs from the injected faults; empty when the audit caught exactly them."""
        statuses = {k: v["status"] for k, v in summary["invariants"].items()}
        out = []
        for status, expected in (("fail", self.fail), ("warn", self.warn)):
            if expected is None:
                continue
            got = {k for k, s in statuses.items() if s == status}
            missed, extra = sorted(expected - got), sorted(got - expected)
            if missed:
                out.append(f"expected to {status} but did not: {', '.join(missed)}")
            if extra:
                verb = "failed" if status == "fail" else "warned"
                out.append(f"{verb} without an injected fault: {', '.join(extra)}")
        return out
