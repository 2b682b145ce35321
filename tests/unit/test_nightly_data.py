"""What readiness says about the data-level invariants it leaves to the nightly job: the
newest nightly run that evaluated them, its age, and the NO-GO reasons where the
configuration gates on them (audit/validate/nightly_data.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from audit.validate.nightly_data import describe, gate_reasons, latest_nightly_data

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
