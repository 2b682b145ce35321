"""An operator's own suites (validation.expectations_dir) change how invariants are checked,
never which ones a run accounts for: an invariant whose checks the copy leaves out is listed,
skipped with that reason (not "not collected", which would send the operator after data
that is there), and a job whose gating inputs must be there cannot verify it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from audit.config_file import parse_config
from audit.jobs import READINESS
from audit.pipeline import audit_snapshots
from audit.validate.gating import answer
from audit.validate.results import NOT_IN_SUITES, skipped
from audit.validate.suites import shipped_expectations_dir
from tests.snapshots import faulty_pair

# Failed by the faulty pair with the shipped suites (tests/unit/test_audit_invariants.py).
DROPPED = "CM-OFFSET-1"


def _suites_without(root: Path, invariant: str) -> Path:
    """A copy of the shipped suites with every expectation naming ``invariant`` removed."""
    suites = root / "suites"
    shutil.copytree(shipped_expectations_dir(), suites)
    for path in suites.glob("*.json"):
        raw = json.loads(path.read_text())
        kept = [e for e in raw["expectations"] if e["meta"]["invariant"] != invariant]
        if len(kept) < len(raw["expectations"]):
            path.write_text(json.dumps({**raw, "expectations": kept}))
    return suites


def test_an_invariant_the_suites_in_use_leave_out_is_skipped_saying_so(tmp_path: Path) -> None:
    src, dst = faulty_pair(tmp_path / "snap")
    shipped = audit_snapshots(
        src, dst, tmp_path / "shipped", parse_config("", env={}), job=READINESS, engine="local"
    )
    assert shipped.summary["invariants"][DROPPED]["status"] == "fail"  # what the copy leaves out

    suites = _suites_without(tmp_path, DROPPED)
    cfg = parse_config(f"validation:\n  expectations_dir: {suites}\n", env={})
    summary = audit_snapshots(src, dst, tmp_path / "run", cfg, job=READINESS, engine="local").summary
    result = summary["invariants"][DROPPED]
    assert result["status"] == "skipped", result
    assert result["reason"].startswith(NOT_IN_SUITES), result["reason"]
    assert str(suites) in result["reason"] and "not collected" not in result["reason"]
    # The others are judged as before.
    others = {k: v["status"] for k, v in summary["invariants"].items() if k != DROPPED}
    assert others == {k: v["status"] for k, v in shipped.summary["invariants"].items() if k != DROPPED}


def test_a_job_whose_gating_inputs_must_be_there_cannot_verify_an_invariant_no_suite_checks() -> None:
    left_out = skipped(DROPPED, "statement", f"{NOT_IN_SUITES}: no expectation in /suites names it")
    verify = answer([left_out], {DROPPED}, need_collected=True)
    assert not verify.go
    assert verify.reasons == (f"cannot verify: {DROPPED}: {left_out.reason}",)
