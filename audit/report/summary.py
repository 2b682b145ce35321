"""summary.json (docs/usage.md, "What a run writes"): the machine-readable result of a run."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from audit.fsutil import atomic_write_json
from audit.validate.gating import Answer
from audit.validate.invariants import remediation
from audit.validate.results import InvariantResult, verdict

if TYPE_CHECKING:
    from audit.validate.readiness import Figures

log = logging.getLogger(__name__)


SUMMARY_FORMAT = "mirror-audit-summary/1"

COVERAGE_ADVICE = (
    "Some rows could not be checked because an input was missing (listed above). Find out why "
    "the cluster or the mirror does not report it (a partition without a leader, an older broker, "
    "a mirror state without that field) and audit again; where the cluster cannot supply it, "
    "accept the gap by name with `readiness.accept_unchecked: [{id}]`."
)


def build_summary(
    results: list[InvariantResult],
    mode: str,
    run: dict[str, Any],
    figures: Figures | None = None,
    details: dict[str, dict[str, Any]] | None = None,
    answer: Answer | None = None,
    figures_key: str | None = None,
) -> dict[str, Any]:
    """``details`` adds per-invariant context, e.g. CM-TXN-1's named open transactions;
    ``figures`` go at the top level, or under ``figures_key``, an unknown one as null with
    its reason under ``unknown_figures``; ``answer`` is the GO / NO-GO of a job that gives
    one (``audit.validate.gating``)."""
    from audit import __version__

    invariants = {r.id: r.to_json() for r in results}
    for r in results:
        advice = remediation(r.id)
        if r.status in ("fail", "warn") and r.violations and advice:
            invariants[r.id]["remediation"] = advice
        elif r.status == "warn" and r.gaps:  # warns for what it could not check, not for a violation
            invariants[r.id]["remediation"] = COVERAGE_ADVICE.format(id=r.id)
    for inv_id, extra in (details or {}).items():
        if inv_id in invariants:
            invariants[inv_id].update(extra)
    summary: dict[str, Any] = {
        "format": SUMMARY_FORMAT,
        "tool_version": __version__,
        "verdict": verdict(results),
        "mode": mode,
        "run": run,
        "coverage": coverage_section(results),
        "invariants": invariants,
    }
    if answer is not None:
        summary["readiness"] = answer.word
        summary["readiness_reasons"] = list(answer.reasons)
        summary["accepted_unchecked"] = list(answer.accepted)
        summary["gated_by"] = list(answer.gates)
    if figures is not None:
        target = summary if figures_key is None else summary.setdefault(figures_key, {})
        target.update(figures.values)
        target["unknown_figures"] = dict(figures.unknown)
    return summary


def coverage_section(results: list[InvariantResult]) -> dict[str, Any]:
    """What the run could not check, over every invariant: the gaps by invariant and
    missing input (all their rows are in ``unchecked.parquet``)."""
    gaps = [{"invariant": r.id, "accepted": r.accepted, **g.to_json()} for r in results for g in r.gaps]
    return {
        "complete": not gaps,
        "unchecked_rows": sum(g["rows"] for g in gaps),
        "gaps": gaps,
    }


SCHEMA_ENV = "MIRROR_AUDIT_CHECK_SUMMARY"


def summary_schema() -> dict[str, Any]:
    """The JSON Schema of summary.json (format ``mirror-audit-summary/1``), shipped in the package."""
    import json
    from importlib import resources

    text = resources.files("audit.report").joinpath("resources/summary.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def output_schema() -> dict[str, Any]:
    """The JSON Schema of what ``--output json`` prints (one object a run), shipped in the package."""
    import json
    from importlib import resources

    text = resources.files("audit.report").joinpath("resources/output.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def schema_errors(summary: dict[str, Any], schema: dict[str, Any] | None = None) -> list[str]:
    """Where ``summary`` (or another document, against ``schema``) breaks the shipped schema
    (empty when it holds), each as path: message."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema or summary_schema())
    return [
        f"{'/'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message}"
        for e in sorted(validator.iter_errors(summary), key=lambda e: list(map(str, e.absolute_path)))
    ]


def write_summary(run_dir: Path, summary: dict[str, Any]) -> Path:
    """summary.json, written last. With ``$MIRROR_AUDIT_CHECK_SUMMARY`` set (the test suite
    sets it, so every summary it writes is held to the schema) a summary that breaks the
    shipped schema is refused before it is written."""
    if os.environ.get(SCHEMA_ENV):
        errors = schema_errors(summary)
        if errors:
            raise AssertionError(f"summary.json breaks its schema: {errors[:3]}")
    return atomic_write_json(run_dir / "summary.json", summary)
