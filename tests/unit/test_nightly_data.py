"""What readiness says about the data-level invariants it leaves to the nightly job: the
newest nightly run that evaluated them, its age, and the NO-GO reasons where the
configuration gates on them (audit/validate/nightly_data.py)."""

from __future__ import annotations

import json
import logging
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from audit import api
from audit.config_file import parse_config
from audit.validate.nightly_data import accepted_gaps, describe, gate_reasons, latest_nightly_data
from tests.output_roots import copy_run, make_previous_run, snapshot_pair

IDS = ("MM2-DATA-1", "MM2-DATA-2")
NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def _run(directory: str, job: str, started: str, **statuses: str) -> dict[str, Any]:
    return {
        "dir": directory,
        "run": {"job": job, "started_at": started},
        "invariants": {
            i.replace("_", "-"): {"status": s, "violations": int(s == "fail"), "unchecked": 0}
            for i, s in statuses.items()
        },
    }


def test_the_newest_nightly_that_evaluated_them_is_reported_with_its_age() -> None:
    history = [
        _run("a", "nightly", "2026-11-26T00:00:00+00:00", MM2_DATA_1="fail", MM2_DATA_2="pass"),
        _run("b", "nightly", "2026-11-27T02:00:00+00:00", MM2_DATA_1="pass", MM2_DATA_2="pass"),
        # Newer, but a readiness run (skipped there) and a nightly without records read.
        _run("c", "readiness", "2026-11-27T10:00:00+00:00", MM2_DATA_1="skipped", MM2_DATA_2="skipped"),
        _run("d", "nightly", "2026-11-27T11:00:00+00:00", MM2_DATA_1="skipped", MM2_DATA_2="skipped"),
    ]
    found = latest_nightly_data(history, IDS, NOW)
    assert found is not None
    assert (found["run"], found["age_seconds"], found["not_evaluated"]) == ("b", 10 * 3600, [])
    assert {i: r["status"] for i, r in found["invariants"].items()} == {
        "MM2-DATA-1": "pass",
        "MM2-DATA-2": "pass",
    }
    assert describe(found) == (
        "data-level checks from the latest nightly run (b, 10.0 h ago): MM2-DATA-1 pass, MM2-DATA-2 pass"
    )
    assert latest_nightly_data(history[2:], IDS, NOW) is None


def test_without_the_setting_nothing_gates() -> None:
    assert gate_reasons(None, IDS, None) == []


def test_gated_no_go_for_none_stale_failing_unchecked_or_not_evaluated() -> None:
    assert gate_reasons(None, IDS, 24) == [
        "cannot verify: no nightly run under this output root checked MM2-DATA-1, MM2-DATA-2 "
        "(readiness.nightly_data_max_age_hours)"
    ]
    fresh = [_run("b", "nightly", "2026-11-27T02:00:00+00:00", MM2_DATA_1="pass", MM2_DATA_2="warn")]
    found = latest_nightly_data(fresh, IDS, NOW)
    assert gate_reasons(found, IDS, 24) == []  # warnings (duplicates) do not stop a failover
    (stale,) = gate_reasons(found, IDS, 6)
    assert stale.startswith(
        "cannot verify: the latest nightly run checking the data (b) is 10.0 h old, over 6 h"
    )
    failing = [_run("b", "nightly", "2026-11-27T02:00:00+00:00", MM2_DATA_1="fail")]
    found = latest_nightly_data(failing, IDS, NOW)
    assert gate_reasons(found, IDS, 24) == [
        "MM2-DATA-1 fail in the latest nightly run (b)",
        "cannot verify: MM2-DATA-2 was not evaluated by the latest nightly run (b)",
    ]
    unchecked = fresh[0] | {
        "invariants": {"MM2-DATA-1": {"status": "warn", "unchecked": 3}, "MM2-DATA-2": {"status": "pass"}}
    }
    found = latest_nightly_data([unchecked], IDS, NOW)
    assert gate_reasons(found, IDS, 24) == [
        "cannot verify: MM2-DATA-1: 3 rows unchecked in the latest nightly run (b)"
    ]


def test_a_run_of_unknown_time_is_never_fresh() -> None:
    found = latest_nightly_data([_run("x", "nightly", "yesterday", MM2_DATA_1="pass")], IDS[:1], NOW)
    assert found is not None and found["age_seconds"] is None
    (reason,) = gate_reasons(found, IDS[:1], 24)
    assert "of unknown age" in reason


def test_a_run_dated_in_the_future_has_no_age_rather_than_a_negative_one() -> None:
    ahead = [_run("x", "nightly", "2027-03-01T00:00:00+00:00", MM2_DATA_1="pass", MM2_DATA_2="pass")]
    found = latest_nightly_data(ahead, IDS, NOW)
    assert found is not None and found["age_seconds"] is None
    (reason,) = gate_reasons(found, IDS, 24)
    assert "of unknown age" in reason
    # Within the declared skew a run is believed (a clock a little ahead): age 0, not negative.
    slightly = [_run("y", "nightly", "2026-11-27T12:02:00+00:00", MM2_DATA_1="pass", MM2_DATA_2="pass")]
    found = latest_nightly_data(slightly, IDS, NOW)
    assert found is not None and found["age_seconds"] == 0


def _seed(template: Path, root: Path, name: str, started: datetime, verdict: str, data: str) -> None:
    """A nightly run of the template's pair under ``root``: the template run's files, its
    summary made a nightly's, started at ``started``, the data-level invariants ``data``."""
    run = copy_run(template, root)
    run = run.rename(root / name)
    summary = json.loads((run / "summary.json").read_text())
    stamp = started.isoformat(timespec="seconds").replace("+00:00", "Z")
    summary["run"].update(job="nightly", started_at=stamp, finished_at=stamp)
    summary["verdict"] = verdict
    for inv_id in ("CM-DATA-1", "CM-DATA-2", "CM-TXN-2", "CM-TXN-3", "CM-EPOCH-4"):
        status = data if inv_id == "CM-DATA-1" else "pass"
        summary["invariants"][inv_id].update(status=status, violations=int(status == "fail"), unchecked=0)
    (run / "summary.json").write_text(json.dumps(summary))


def test_a_summary_dated_in_the_future_cannot_turn_a_gated_readiness_to_go(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 53, 3: a nightly dated in 2027 that passed, and one from an hour ago that found
    CM-DATA-1 failing. The future run is left out of the history (with a warning): readiness
    gates on the real latest nightly (NO-GO), compares with it, and the last success the
    metrics report is not in 2027."""
    template = make_previous_run(tmp_path / "template")
    src, dst = snapshot_pair(tmp_path / "snaps")
    root = tmp_path / "runs"
    root.mkdir()
    now = datetime.now(UTC)
    _seed(template, root, "future", datetime(2027, 6, 1, tzinfo=UTC), "PASS", "pass")
    _seed(template, root, "recent", now - timedelta(hours=1), "FAIL", "fail")
    cfg = parse_config("readiness:\n  nightly_data_max_age_hours: 24\n", env={})

    caplog.set_level(logging.WARNING, logger="audit.report.history")
    result = api.readiness(cfg, source=src, destination=dst, out=root / "readiness")
    summary = json.loads(result.summary_path.read_text())

    assert summary["readiness"] == "NO-GO"
    assert "CM-DATA-1 fail in the latest nightly run (recent)" in summary["readiness_reasons"]
    assert summary["nightly_data"]["run"] == "recent"
    assert 3500 <= summary["nightly_data"]["age_seconds"] <= 3700
    assert summary["changes"]["previous_run"]["dir"] == "recent"
    (warning,) = [r.getMessage() for r in caplog.records if "2027" in r.getMessage()]
    assert "runs/future" in warning and "2027-06-01" in warning
    samples = text_string_to_metric_families((result.run_dir / "metrics.prom").read_text())
    (last_success,) = [
        s.value for f in samples for s in f.samples if s.name == "mirror_audit_last_success_timestamp_seconds"
    ]
    assert last_success <= time.time()


def test_accept_unchecked_accepts_the_nightlys_unchecked_rows_and_says_so() -> None:
    """Issue 53, 9: MM2-DATA never checks a compacted topic whole, so a pair with one had
    its nightly rows unchecked for good, and ``readiness.accept_unchecked: [MM2-DATA-1]``
    did not reach this gate. Accepted, those rows are no reason for NO-GO and are said as
    an accepted gap; a failure, or an ID not accepted, still blocks."""
    run = _run("b", "nightly", "2026-11-27T02:00:00+00:00")
    run["invariants"] = {
        "MM2-DATA-1": {"status": "warn", "unchecked": 1},
        "MM2-DATA-2": {"status": "warn", "unchecked": 2},
    }
    found = latest_nightly_data([run], IDS, NOW)
    assert gate_reasons(found, IDS, 24, accepted=["MM2-DATA-1"]) == [
        "cannot verify: MM2-DATA-2: 2 rows unchecked in the latest nightly run (b)"
    ]
    assert accepted_gaps(found, IDS, 24, ["MM2-DATA-1"]) == [
        "MM2-DATA-1: 1 rows unchecked in the latest nightly run (b) (accepted: readiness.accept_unchecked)"
    ]
    assert gate_reasons(found, IDS, 24, accepted=IDS) == []
    assert accepted_gaps(found, IDS, None, IDS) == []  # no gate, nothing to accept
    failing = _run("c", "nightly", "2026-11-27T02:00:00+00:00", MM2_DATA_1="fail", MM2_DATA_2="pass")
    found = latest_nightly_data([failing], IDS, NOW)
    assert gate_reasons(found, IDS, 24, accepted=IDS) == ["MM2-DATA-1 fail in the latest nightly run (c)"]


def test_a_gated_readiness_is_go_over_an_accepted_nightly_gap_and_lists_it(tmp_path: Path) -> None:
    """End to end: the latest nightly left CM-DATA-1 rows unchecked; with the gate on and
    CM-DATA-1 accepted, readiness is GO and the gap is in ``accepted_unchecked``."""
    template = make_previous_run(tmp_path / "template")
    src, dst = snapshot_pair(tmp_path / "snaps")
    root = tmp_path / "runs"
    root.mkdir()
    _seed(template, root, "recent", datetime.now(UTC) - timedelta(hours=1), "WARN", "warn")
    summary_path = root / "recent" / "summary.json"
    seeded = json.loads(summary_path.read_text())
    seeded["invariants"]["CM-DATA-1"]["unchecked"] = 4
    summary_path.write_text(json.dumps(seeded))
    gated = "readiness:\n  nightly_data_max_age_hours: 24\n"
    refused = api.readiness(parse_config(gated, env={}), source=src, destination=dst, out=root / "r1")
    before = json.loads(refused.summary_path.read_text())
    assert (
        "cannot verify: CM-DATA-1: 4 rows unchecked in the latest nightly run (recent)"
        in (before["readiness_reasons"])
    )
    cfg = parse_config(gated + "  accept_unchecked: [CM-DATA-1]\n", env={})
    result = api.readiness(cfg, source=src, destination=dst, out=root / "r2")
    summary = json.loads(result.summary_path.read_text())
    assert not any("CM-DATA-1" in r for r in summary["readiness_reasons"]), summary["readiness_reasons"]
    assert summary["readiness"] == "GO", summary["readiness_reasons"]
    (accepted,) = summary["accepted_unchecked"]
    assert accepted == (
        "CM-DATA-1: 4 rows unchecked in the latest nightly run (recent) "
        "(accepted: readiness.accept_unchecked)"
    )
