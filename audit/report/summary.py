"""summary.json (DESIGN.md): the machine-readable result of a run."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from audit.fsutil import atomic_write_json
from audit.validate.remediation import remediation
from audit.validate.results import InvariantResult, verdict

log = logging.getLogger(__name__)


def build_summary(
    results: list[InvariantResult],
    mode: str,
    run: dict[str, Any],
    figures: dict[str, int] | None = None,
    details: dict[str, dict[str, Any]] | None = None,
    go_no_go: bool = False,
    figures_key: str | None = None,
) -> dict[str, Any]:
    """``details`` adds per-invariant context, e.g. CM-TXN-1's named open transactions;
    ``figures`` go at the top level, or under ``figures_key``; ``go_no_go`` adds the
    readiness answer (GO unless an invariant failed)."""
    invariants = {r.id: r.to_json() for r in results}
    for r in results:
        advice = remediation(r.id)
        if r.status in ("fail", "warn") and advice:
            invariants[r.id]["remediation"] = advice
    for inv_id, extra in (details or {}).items():
        if inv_id in invariants:
            invariants[inv_id].update(extra)
    summary: dict[str, Any] = {
        "verdict": verdict(results),
        "mode": mode,
        "run": run,
        "invariants": invariants,
    }
    if go_no_go:
        summary["readiness"] = "NO-GO" if summary["verdict"] == "FAIL" else "GO"
    if figures is not None:
        if figures_key is None:
            summary.update(figures)
        else:
            summary[figures_key] = dict(figures)
    return summary


def write_summary(run_dir: Path, summary: dict[str, Any]) -> Path:
    return atomic_write_json(run_dir / "summary.json", summary)
