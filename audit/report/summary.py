"""summary.json (DESIGN.md): the machine-readable result of a run."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from audit.fsutil import atomic_write_json
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


def load_history(output_root: Path, exclude: Path | None = None, limit: int = 30) -> list[dict[str, Any]]:
    """Earlier runs' summaries under the output root, oldest first (for the trend)."""
    runs = []
    if not output_root.is_dir():
        return []
    for path in sorted(output_root.glob("*/summary.json")):
        if exclude is not None and path.parent.resolve() == exclude.resolve():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            log.warning("ignoring unreadable earlier run %s", path)
            continue
        runs.append({"dir": path.parent.name, **data})
    runs.sort(key=lambda s: str((s.get("run") or {}).get("started_at", s["dir"])))
    return runs[-limit:]
