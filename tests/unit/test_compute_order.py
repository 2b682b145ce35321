"""The compare stage computes a mode's comparisons each after the ones it reads, side by side
where the engine takes queries from several threads (audit/compare/run.py, ``compute_all``).
Pure scheduling, on an engine that records what it was asked; the tables both real engines
write from the same comparisons are held equal by tests/spark/test_engine_parity.py."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from audit.compare.run import compute_all, reads
from audit.compare.sql import Comparison, Step
from audit.profiles import failback_profile, failover_verify_profile, profile


class _Recorder:
    """Computes nothing: notes when each comparison started and finished, and holds those
    named in ``meet`` until all of them have started (so they can only finish if they ran
    at the same time)."""

    def __init__(
        self,
        concurrent_queries: int,
        meet: tuple[str, ...] = (),
        fail: str | None = None,
        patience: float = 10,
    ) -> None:
        self.concurrent_queries = concurrent_queries
        self._patience = patience
        self.events: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._meet = threading.Barrier(len(meet)) if meet else None
        self._meeting = set(meet)
        self._fail = fail

    def compute(self, comparison: Comparison, path: Path) -> None:
        with self._lock:
            self.events.append(("start", comparison.table))
        if self._meet is not None and comparison.table in self._meeting:
            self._meet.wait(timeout=self._patience)  # BrokenBarrierError when run one after the other
        if comparison.table == self._fail:
            raise RuntimeError(f"{comparison.table} failed")
        with self._lock:
            self.events.append(("end", comparison.table))


def _c(table: str, sql: str, steps: tuple[Step, ...] = ()) -> Comparison:
    return Comparison(table, ("k",), sql, steps=steps)


CHAIN = [
    _c("a", "SELECT * FROM {src_partitions}"),
    _c("b", "SELECT * FROM {dst_partitions}"),
    _c("c", "SELECT * FROM {a} JOIN {run_params}"),
    # Reads b only through a step of its own.
    _c("d", "SELECT * FROM {d_step}", (Step("d_step", "SELECT * FROM {b}"),)),
]


def _before(events: list[tuple[str, str]], first: tuple[str, str], then: tuple[str, str]) -> bool:
    return events.index(first) < events.index(then)


def test_reads_are_the_placeholders_of_the_query_and_its_steps() -> None:
    assert reads(CHAIN[2]) == {"a", "run_params"}
    assert reads(CHAIN[3]) == {"d_step", "b"}
    assert reads(_c("e", "SELECT '{{literal}}' AS x FROM {a}")) == {"a"}


@pytest.mark.parametrize("workers", [1, 3])
def test_each_comparison_starts_after_those_it_reads_have_finished(workers: int, tmp_path: Path) -> None:
    engine: Any = _Recorder(workers)
    compute_all(engine, CHAIN, tmp_path)
    events = engine.events
    assert sorted(t for kind, t in events if kind == "end") == ["a", "b", "c", "d"]
    assert _before(events, ("end", "a"), ("start", "c"))
    assert _before(events, ("end", "b"), ("start", "d"))
    if workers == 1:  # in the given order, one at a time
        assert events == [(k, t) for t in "abcd" for k in ("start", "end")]


def test_comparisons_that_do_not_read_each_other_run_at_the_same_time(tmp_path: Path) -> None:
    engine: Any = _Recorder(3, meet=("a", "b"))
    compute_all(engine, CHAIN, tmp_path)
    assert {t for kind, t in engine.events if kind == "end"} == {"a", "b", "c", "d"}


def test_in_order_where_the_engine_takes_one_query_at_a_time(tmp_path: Path) -> None:
    engine: Any = _Recorder(1, meet=("a", "b"), patience=0.5)  # would need both at once
    with pytest.raises(threading.BrokenBarrierError):
        compute_all(engine, CHAIN, tmp_path)


def test_a_failure_is_raised_and_what_reads_it_is_not_computed(tmp_path: Path) -> None:
    engine: Any = _Recorder(3, fail="a")
    with pytest.raises(RuntimeError, match="a failed"):
        compute_all(engine, CHAIN, tmp_path)
    assert ("start", "c") not in engine.events


def test_every_mode_reads_only_comparisons_computed_before_it() -> None:
    """What the scheduler relies on: a comparison names no comparison listed after it."""
    modes = [profile("cluster-mirroring"), profile("mm2")]
    for prof in [*modes, failover_verify_profile(Path()), failback_profile()]:
        tables = [c.table for c in prof.comparisons]
        for i, comparison in enumerate(prof.comparisons):
            assert not reads(comparison) & set(tables[i:]), comparison.table
