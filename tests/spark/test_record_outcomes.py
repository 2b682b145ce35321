"""What a record scan's mismatches do to the incremental history: which chunks hold
``verified_through`` back and which are listed as mismatched or unreadable."""

from __future__ import annotations

from typing import Any

from audit.collect.records.collect import _outcomes
from audit.collect.records.plan import RecordPlan, RecordRange
from audit.schemas import spark_schema

KEYS = "topic string, partition int, chunk_start long, chunk_end long"


def _divergences(spark: Any, rows: list[tuple[str, int, int, int, str]]) -> Any:
    full = [
        {
            "topic": t,
            "partition": p,
            "chunk_start": a,
            "chunk_end": b,
            "offset": None,
            "kind": k,
            "source_record": None,
            "destination_record": None,
            "detail": None,
        }
        for t, p, a, b, k in rows
    ]
    return spark.createDataFrame(full, spark_schema("record_divergences"))


def test_compacted_chunks_narrowed_to_compaction_only_are_verified_and_unnarrowed_ones_hold_back(
    spark: Any,
) -> None:
    mismatches = spark.createDataFrame(
        [
            ("plain", 0, 100, 200, False),  # differs, narrowed: a real mismatch
            ("plain", 0, 300, 400, False),  # differs, not narrowed (cap): still a mismatch
            ("comp", 0, 0, 100, True),  # compaction_only: verified
            ("comp", 0, 200, 300, True),  # not narrowed: unverified, not mismatched
            ("comp", 0, 400, 500, True),  # payload differs on a compacted topic: a mismatch
            ("tidy", 0, 0, 100, True),  # compaction_only only: nothing holds it back
            ("cut", 0, 0, 100, False),  # differs where both sides were read: a mismatch
            ("cut", 0, 500, 600, False),  # differs where the source stopped short: unreadable
        ],
        f"{KEYS}, compacted boolean",
    )
    narrowed = _divergences(
        spark,
        [
            ("plain", 0, 100, 200, "payload_differs"),
            ("comp", 0, 0, 100, "compaction_only"),
            ("comp", 0, 400, 500, "payload_differs"),
            ("tidy", 0, 0, 100, "compaction_only"),
        ],
    )
    plan = RecordPlan(
        ranges=tuple(
            RecordRange(t, 0, 0, 600, "new") for t in ("plain", "comp", "tidy", "clean", "cut", "stopped")
        ),
    )
    unread = {("cut", 0): [(550, 600)], ("stopped", 0): [(250, 300), (450, 600)]}
    out = _outcomes(plan, mismatches, narrowed, unread)
    assert out[("plain", 0)].first_bad == 100
    assert out[("plain", 0)].mismatched == ((100, 200), (300, 400))
    assert out[("comp", 0)].first_bad == 200  # the unverified chunk, not the tolerated one at 0
    assert out[("comp", 0)].mismatched == ((400, 500),)
    assert out[("tidy", 0)].first_bad is None and out[("tidy", 0)].mismatched == ()
    assert out[("clean", 0)].first_bad is None and out[("clean", 0)].new_range == (0, 600)
    # A chunk that differs because a side did not read it is unreadable, never mismatched.
    assert out[("cut", 0)].first_bad == 0
    assert out[("cut", 0)].mismatched == ((0, 100),)
    assert out[("cut", 0)].unreadable == ((550, 600),)
    assert out[("plain", 0)].unreadable == ()
    # Nothing differs, but a side's scan stopped short (a range failed, or no task reported
    # it): verification stops where the first unread span starts.
    assert out[("stopped", 0)].first_bad == 250 and out[("stopped", 0)].mismatched == ()
    assert out[("stopped", 0)].unreadable == ((250, 300), (450, 600))
