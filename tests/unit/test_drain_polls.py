"""The drain loop's logic (``readiness --wait-drained``): polls read offsets only, a poll
that finds the mirror drained is confirmed by a full snapshot with the same source ends,
and only that snapshot is handed to the readiness check.

The clusters are stood in for by the snapshots each poll would have taken (the loop's
decisions are pure logic over them); tests/integration/test_failover_live.py runs it
against the sandbox's brokers and mirror.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import audit.collect.metadata.snapshot as snapshot_module
from audit.config_file import parse_config
from audit.drain import wait_drained
from audit.snapshot import read_arrow
from tests.snapshots import group, offset, part, write_pair

CFG = parse_config("mirror:\n  preserves_topic_ids: true\n", env={})


def _clusters(monkeypatch: pytest.MonkeyPatch, states: list[tuple[int, int]]) -> list[bool]:
    """Each poll sees the next (source end, destination end) of ``states``; returns, per
    poll, whether it read groups (a full snapshot) or offsets only."""
    plans: list[bool] = []

    def take(cfg: Any, out: Path, plan: Any, mirror_state: Any = None) -> tuple[Path, Path]:
        src_end, dst_end = states[len(plans)]
        plans.append(plan.reads_groups)
        full = plan.reads_groups
        return write_pair(
            out,
            [part(high_watermark=src_end, last_stable_offset=src_end)],
            [part(high_watermark=dst_end, last_stable_offset=dst_end)],
            [group("g")] if full else [],
            [group("g")] if full else [],
            [offset("g", 10)] if full else [],
            [offset("g", 10)] if full else [],
        )

    monkeypatch.setattr(snapshot_module, "take_snapshots", take)
    return plans


def test_offsets_only_until_drained_then_one_full_snapshot_is_what_readiness_gets(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    plans = _clusters(monkeypatch, [(100, 90), (100, 100), (100, 100)])
    result = wait_drained(CFG, tmp_path / "run", timeout=60, interval=0)
    assert result.status.drained and result.status.polls == 3
    assert plans == [False, False, True]
    assert result.destination is not None and result.source is not None
    # The snapshot handed on is the full one: its groups and committed offsets were read.
    assert read_arrow(result.source, "group_offsets").num_rows == 1


def test_a_confirmation_that_sees_the_source_move_goes_back_to_waiting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Producers wrote between the drained poll and the full snapshot: not drained, and
    the full snapshot's ends are the ones the next poll must match."""
    plans = _clusters(monkeypatch, [(100, 100), (100, 100), (105, 100), (105, 105), (105, 105)])
    result = wait_drained(CFG, tmp_path / "run", timeout=60, interval=0)
    assert result.status.drained and result.status.polls == 5
    assert plans == [False, False, True, False, True]


def test_a_timeout_hands_on_no_snapshot(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _clusters(monkeypatch, [(100, 90)] * 1000)
    result = wait_drained(CFG, tmp_path / "run", timeout=0.5, interval=0.1)
    assert not result.status.drained and result.source is None and result.destination is None
    assert result.status.lag_records == 10
