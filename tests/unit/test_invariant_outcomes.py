"""Each invariant failing, warning and passing at its boundary, each on a pair of its own:
one change to its catalogue's small pair (tests/invariant_scenarios.py, where every
invariant passes), folded as the validator folds the suites' checks, on the in-process
engine, without Great Expectations or the report.

The cases are listed by the comparison table the invariant's checks read. Which cases an
invariant needs follows from its checks in the suites: one case per severity its checks
carry (a ``fail`` and a ``warn`` case where it has both), and for a check whose bound is a
threshold parameter, the boundary: the same change passing (or only warning) with the
threshold at the value and reaching the check's severity one step past it.
``test_every_invariant_has_its_cases`` fails for an invariant without them, so a new one
brings its cases (docs/architecture.md's worked example adds one). The unchecked case of
each is generated from its declared inputs (tests/unit/test_unknown_never_passes.py).
Cluster mirroring's data-level invariants (PySpark) have theirs in tests/spark."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from audit.config import AuditConfig
from audit.config_file import parse_config
from audit.snapshot import Mm2CheckpointRecord, Mm2OffsetSyncRecord
from audit.validate.run import mode_suites
from tests.invariant_scenarios import REMOTE, SCENARIOS, Pair, Scenario, scenario_statuses
from tests.snapshots import T0_MS, group


@dataclass(frozen=True)
class Outcome:
    """``invariant`` on its catalogue's pair changed by ``change``: the status expected.

    ``change`` maps ``side:table`` (every row of it) or ``side:table[i]`` (its i-th row) to
    the fields set there, or to a list of rows that replaces the table; ``thresholds`` and
    ``config`` (YAML appended to the scenario's) change what the pair is judged by."""

    invariant: str
    expected: str  # fail | warn | pass
    what: str  # the change, as a person reads it
    change: dict[str, Any] = field(default_factory=dict)
    thresholds: dict[str, Any] = field(default_factory=dict)
    config: str = ""
    scenario: str = ""  # the pair to change; default: the first whose catalogue holds it


def on(where: str, **fields: Any) -> dict[str, Any]:
    """A change: ``fields`` set on every row of ``side:table`` (or on its i-th: ``[i]``)."""
    return {where: fields}


# A transaction open on the source for 10 s when the snapshot was taken.
OPEN_10S = on("src:partitions", last_stable_offset=95, open_txn_first_timestamp_ms=T0_MS - 10_000)
SRC_AT_120 = on("src:partitions", high_watermark=120, last_stable_offset=120)
SRC_AT_103 = on("src:partitions", high_watermark=103, last_stable_offset=103)
CHANGELOG = "app-store-changelog"
TWICE = on("dst:record_digests[5]", digest=7004)  # the replica's offset 5 a second copy of 4

# The mm2 pair's offset syncs (0 -> 0, 50 -> 50).
_SYNCS = (
    Mm2OffsetSyncRecord("orders", 0, 0, 0, 0, 0, 1000),
    Mm2OffsetSyncRecord("orders", 0, 50, 50, 0, 1, 1001),
)

OUTCOMES = (
    # -- topics (cm_topics) ---------------------------------------------------------------
    Outcome(
        "CM-TOPIC-1", "fail", "the destination topic has another topic ID", on("dst:partitions", topic_id="x")
    ),
    # -- partitions (cm_partitions: lag 2 records and 0.5 s, destination epoch 9 against 5) -
    Outcome("CM-OFFSET-1", "fail", "the destination holds more", on("src:partitions", high_watermark=97)),
    Outcome(
        "CM-OFFSET-2",
        "fail",
        "the source deleted records not mirrored",
        on("src:partitions", log_start_offset=99),
    ),
    Outcome("CM-OFFSET-2", "warn", "a backlog of 2, 3 retained", on("src:partitions", log_start_offset=97)),
    Outcome(
        "CM-OFFSET-2", "pass", "a backlog of 2, 4 retained (half)", on("src:partitions", log_start_offset=96)
    ),
    Outcome("CM-LAG-1", "fail", "2 records behind, 1 allowed", thresholds={"max_lag_records": 1}),
    Outcome("CM-LAG-1", "pass", "2 records behind, 2 allowed", thresholds={"max_lag_records": 2}),
    Outcome("CM-LAG-1", "fail", "0.5 s behind, 0.4 allowed", thresholds={"max_lag_seconds": 0.4}),
    Outcome("CM-LAG-1", "pass", "0.5 s behind, 0.5 allowed", thresholds={"max_lag_seconds": 0.5}),
    Outcome(
        "CM-EPOCH-1", "fail", "the destination epoch below the source's", on("dst:partitions", leader_epoch=4)
    ),
    Outcome("CM-EPOCH-2", "warn", "headroom 4, 5 wanted", thresholds={"epoch_headroom": 5}),
    Outcome("CM-EPOCH-2", "pass", "headroom 4, 4 wanted", thresholds={"epoch_headroom": 4}),
    Outcome("CM-TXN-1", "warn", "a transaction open on the source", OPEN_10S),
    Outcome("CM-TXN-1", "warn", "open for 10 s, 10 allowed", OPEN_10S, {"max_open_txn_seconds": 10}),
    Outcome("CM-TXN-1", "fail", "open for 10 s, 9 allowed", OPEN_10S, {"max_open_txn_seconds": 9}),
    Outcome("CM-SCOPE-1", "warn", "a Streams changelog in scope", on("src:partitions", topic=CHANGELOG)),
    Outcome(
        "CM-TIER-1", "fail", "tiered storage on the destination", on("dst:partitions", remote_storage=True)
    ),
    Outcome(
        "CM-TIER-1",
        "warn",
        "tiered storage on the destination, a mirror that supports it",
        on("dst:partitions", remote_storage=True),
        config="mirror:\n  tiered_destination: warn\n",
    ),
    Outcome(
        "CM-TIER-2",
        "warn",
        "the destination's end (98) below the source's local log start (99)",
        on("src:partitions", remote_storage=True, local_log_start_offset=99),
    ),
    Outcome(
        "CM-TIER-2",
        "warn",
        "a tiered source whose local log start was not read (earliest-local): unchecked, never passed",
        on("src:partitions", remote_storage=True, local_log_start_offset=None),
    ),
    Outcome(
        "CM-TIER-2",
        "pass",
        "the destination's end (98) at the source's local log start",
        on("src:partitions", remote_storage=True, local_log_start_offset=98),
    ),
    # -- group offsets (cm_group_offsets: g committed 90 on both sides, the clamp's 90) --------
    Outcome(
        "CM-EPOCH-3",
        "fail",
        "a commit's epoch past the partition's",
        on("dst:group_offsets", committed_leader_epoch=10),
    ),
    Outcome("CM-GROUP-1", "fail", "synced past the clamp (95)", on("dst:group_offsets", committed_offset=95)),
    Outcome(
        "CM-GROUP-1", "warn", "synced 2 behind, none tolerated", on("dst:group_offsets", committed_offset=88)
    ),
    Outcome(
        "CM-GROUP-1",
        "pass",
        "synced 2 behind, 2 tolerated",
        on("dst:group_offsets", committed_offset=88),
        {"group_sync_tolerance_records": 2},
    ),
    Outcome(
        "CM-GROUP-1",
        "warn",
        "synced 2 behind, 1 tolerated",
        on("dst:group_offsets", committed_offset=88),
        {"group_sync_tolerance_records": 1},
    ),
    Outcome(
        "CM-GROUP-2",
        "fail",
        "synced past the destination's end",
        on("dst:group_offsets", committed_offset=120),
    ),
    Outcome("CM-GROUP-4", "warn", "5 deleted before g read them", on("dst:partitions", log_start_offset=95)),
    Outcome(
        "CM-GROUP-4",
        "pass",
        "5 unseen, 5 allowed",
        on("dst:partitions", log_start_offset=95),
        {"max_unseen_records": 5},
    ),
    Outcome(
        "CM-GROUP-4",
        "warn",
        "5 unseen, 4 allowed",
        on("dst:partitions", log_start_offset=95),
        {"max_unseen_records": 4},
    ),
    # -- groups (cm_groups) -----------------------------------------------------------------
    Outcome("CM-GROUP-3", "fail", "an excluded group synced", config="scope:\n  groups:\n    exclude: [g]\n"),
    Outcome(
        "CM-SCOPE-1",
        "warn",
        "a Kafka Streams group in scope",
        {"src:groups": [group("g", group_type="streams")]},
    ),
    # -- mirror states (cm_mirror_states: stopped cleanly at 98) -------------------------------
    Outcome(
        "CM-FAILOVER-1",
        "fail",
        "the mirror failed",
        on("dst:mirror_partitions", state="FAILED", error_message="x"),
    ),
    Outcome(
        "CM-FAILOVER-1",
        "fail",
        "the stop wrote 3 records, 1 expected",
        on("dst:partitions", high_watermark=101, last_stable_offset=101),
        scenario="failover-verify",
    ),
    # -- failover verify (fo_partitions, fo_groups: 2 predicted lost) --------------------------
    Outcome(
        "CM-FAILOVER-2", "fail", "3 lost, 2 predicted", on("dst:mirror_partitions", last_mirror_offset=97)
    ),
    Outcome(
        "CM-FAILOVER-3", "fail", "g resumes 5 records ahead", on("dst:group_offsets", committed_offset=95)
    ),
    Outcome("CM-FAILOVER-3", "fail", "g resumes past the end", on("dst:group_offsets", committed_offset=120)),
    Outcome("CM-FAILOVER-3", "warn", "g has no offset on the destination", {"dst:group_offsets": []}),
    # -- failback (fb_partitions, fb_groups: mirrored to 100) ---------------------------------
    Outcome("CM-FAILBACK-1", "fail", "3 records to truncate, none allowed", SRC_AT_103),
    Outcome(
        "CM-FAILBACK-1",
        "pass",
        "3 to truncate, 3 allowed",
        SRC_AT_103,
        {"max_failback_truncation_records": 3},
    ),
    Outcome(
        "CM-FAILBACK-1",
        "fail",
        "3 to truncate, 2 allowed",
        SRC_AT_103,
        {"max_failback_truncation_records": 2},
    ),
    Outcome(
        "CM-FAILBACK-2",
        "warn",
        "g committed past the truncation point",
        SRC_AT_103 | on("src:group_offsets", committed_offset=102),
    ),
    Outcome(
        "CM-FAILBACK-3",
        "fail",
        "a transaction open on the old source",
        on("src:partitions", last_stable_offset=95),
    ),
    # -- mm2 syncs and checkpoints (offset syncs 0->0, 50->50; g checkpointed 60->55) ----------
    Outcome(
        "MM2-SKIP-1",
        "fail",
        "200 source offsets passed over on a plain topic",
        {"src:mm2_offset_syncs": [*_SYNCS, Mm2OffsetSyncRecord("orders", 0, 251, 51, 0, 2, 1002)]},
    ),
    Outcome(
        "MM2-SKIP-1",
        "pass",
        "a marker passed over on a topic one transactional producer writes",
        {"src:mm2_offset_syncs": [*_SYNCS, Mm2OffsetSyncRecord("orders", 0, 52, 51, 0, 2, 1002)]}
        | on("src:partition_traits", transactional_producers=1),
    ),
    Outcome(
        "MM2-SKIP-1",
        "warn",
        "a gap of 5 where one transactional producer leaves 1 marker, not scanned: how many lost unknown",
        {"src:mm2_offset_syncs": [*_SYNCS, Mm2OffsetSyncRecord("orders", 0, 56, 51, 0, 2, 1002)]}
        | on("src:partition_traits", transactional_producers=1),
    ),
    Outcome(
        "MM2-SKIP-1",
        "warn",
        "a gap on a topic whose producers could not be described",
        {"src:mm2_offset_syncs": [*_SYNCS, Mm2OffsetSyncRecord("orders", 0, 251, 51, 0, 2, 1002)]}
        | on("src:partition_traits", transactional_producers=None),
    ),
    Outcome(
        "MM2-SKIP-1",
        "warn",
        "a gap on a compacted topic (the cleaner's, not told apart without a record scan)",
        {"src:mm2_offset_syncs": [*_SYNCS, Mm2OffsetSyncRecord("orders", 0, 251, 51, 0, 2, 1002)]}
        | on("src:partition_traits", compacted=True),
    ),
    Outcome(
        "MM2-SKIP-1",
        "warn",
        "200 passed over on a topic whose loss the operator accepted",
        {"src:mm2_offset_syncs": [*_SYNCS, Mm2OffsetSyncRecord("orders", 0, 251, 51, 0, 2, 1002)]},
        config="readiness:\n  accept_lost: ['orders']\n",
    ),
    Outcome(
        "MM2-POS-1",
        "fail",
        "its position 80 below the source's log start 90: records deleted before it copied them",
        on("dst:mm2_positions", committed_offset=79) | on("src:partitions", log_start_offset=90),
    ),
    Outcome(
        "MM2-TIER-1",
        "warn",
        "its position 80 below the source's local log start 90: it reads the remote tier",
        on("dst:mm2_positions", committed_offset=79)
        | on("src:partitions", remote_storage=True, local_log_start_offset=90),
    ),
    Outcome(
        "MM2-TIER-1",
        "warn",
        "a tiered source whose local log start was not read (earliest-local): unchecked, never passed",
        on("dst:mm2_positions", committed_offset=79)
        | on("src:partitions", remote_storage=True, local_log_start_offset=None),
    ),
    Outcome(
        "MM2-TIER-1",
        "pass",
        "its position 80 at the source's local log start",
        on("dst:mm2_positions", committed_offset=79)
        | on("src:partitions", remote_storage=True, local_log_start_offset=80),
    ),
    Outcome(
        "MM2-POS-1",
        "fail",
        "its position past the source's end (the topic recreated)",
        on("dst:mm2_positions", committed_offset=150),
    ),
    Outcome(
        "MM2-POS-1",
        "warn",
        "behind at 80, 10 records above the log start, margin 20",
        on("dst:mm2_positions", committed_offset=79) | on("src:partitions", log_start_offset=70),
        thresholds={"mm2_position_margin_records": 20},
    ),
    Outcome(
        "MM2-POS-1",
        "warn",
        "no committed position and no offset sync on a partition holding records",
        on("dst:mm2_positions", committed_offset=None) | {"src:mm2_offset_syncs": []},
    ),
    Outcome(
        "MM2-POS-1",
        "pass",
        "no committed position yet, the latest offset sync at 50 (Connect flushes positions later)",
        on("dst:mm2_positions", committed_offset=None),
    ),
    Outcome(
        "MM2-POS-1",
        "pass",
        "behind at 80 on a partition retention has deleted nothing of (log start 0), margin 1000",
        on("dst:mm2_positions", committed_offset=79),
    ),
    Outcome(
        "MM2-POS-1",
        "pass",
        "behind at 80, 10 records above the log start, margin 10",
        on("dst:mm2_positions", committed_offset=79) | on("src:partitions", log_start_offset=70),
        thresholds={"mm2_position_margin_records": 10},
    ),
    Outcome(
        "MM2-SKIP-2",
        "fail",
        "a sync names offset 50 of a source partition ending at 40 (recreated)",
        on("src:partitions", high_watermark=40, last_stable_offset=40),
    ),
    Outcome(
        "MM2-SYNC-1",
        "fail",
        "a sync goes back",
        {
            "src:mm2_offset_syncs": [
                Mm2OffsetSyncRecord("orders", 0, 50, 50, 0, 0, 1000),
                Mm2OffsetSyncRecord("orders", 0, 40, 40, 0, 1, 1001),
            ]
        },
    ),
    Outcome(
        "MM2-CKPT-1",
        "fail",
        "a checkpoint goes back",
        {
            "dst:mm2_checkpoints": [
                Mm2CheckpointRecord("g", REMOTE, 0, 60, 55, None, 0, 0, 2000),
                Mm2CheckpointRecord("g", REMOTE, 0, 58, 53, None, 0, 1, 2001),
            ]
        },
    ),
    Outcome(
        "MM2-CKPT-2",
        "fail",
        "a checkpoint past the replica's end",
        on("dst:mm2_checkpoints", downstream_offset=150),
    ),
    Outcome(
        "MM2-CKPT-3",
        "fail",
        "60 -> 61, the sync at 50 allows 60",
        on("dst:mm2_checkpoints", downstream_offset=61),
    ),
    Outcome(
        "MM2-CKPT-3",
        "pass",
        "60 -> 60, the sync at 50 allows 60",
        on("dst:mm2_checkpoints", downstream_offset=60),
    ),
    Outcome("MM2-CKPT-4", "fail", "g committed, never checkpointed", {"dst:mm2_checkpoints": []}),
    Outcome(
        "MM2-CKPT-4",
        "warn",
        "g committed 65, checkpointed at 60",
        on("src:group_offsets", committed_offset=65),
    ),
    Outcome(
        "MM2-GROUP-1",
        "fail",
        "g synced to 50, checkpointed at 55",
        on("dst:group_offsets", committed_offset=50),
    ),
    Outcome("MM2-READY-1", "fail", "20 source records not replicated", SRC_AT_120),
    Outcome(
        "MM2-READY-1",
        "fail",
        "g active on the target",
        {"dst:groups": [group("g", state="STABLE", members=1)]},
    ),
    Outcome(
        "MM2-READY-1", "fail", "a transaction open on the source", on("src:partitions", last_stable_offset=95)
    ),
    Outcome(
        "MM2-READY-1",
        "fail",
        "the replica holds more than was copied",
        on("dst:partitions", high_watermark=110),
    ),
    Outcome(
        "CM-LAG-1", "fail", "20 unreplicated, 19 allowed", SRC_AT_120, {"max_lag_records": 19}, scenario="mm2"
    ),
    Outcome(
        "CM-LAG-1", "pass", "20 unreplicated, 20 allowed", SRC_AT_120, {"max_lag_records": 20}, scenario="mm2"
    ),
    # The cluster-mirroring invariants mode mm2 judges on its own tables (mm2_partitions,
    # mm2_group_offsets), beside those of its catalogue.
    Outcome("CM-TOPIC-1", "fail", "no replica on the target", {"dst:partitions": []}, scenario="mm2"),
    Outcome(
        "CM-GROUP-2",
        "fail",
        "synced past the replica's end",
        on("dst:group_offsets", committed_offset=120),
        scenario="mm2",
    ),
    # -- mm2 records (mm2_records: ten records, each copied once, in order) --------------------
    Outcome("MM2-DATA-1", "fail", "the copy of offset 5 missing", TWICE),
    Outcome(
        "MM2-DATA-2",
        "fail",
        "a replica record no source record explains",
        on("dst:record_digests[5]", digest=1),
    ),
    Outcome("MM2-DATA-3", "warn", "offset 4 copied twice", TWICE),
    Outcome(
        "MM2-DATA-3",
        "fail",
        "copied twice, exactly-once",
        TWICE,
        config="mirror:\n  mm2:\n    exactly_once: true\n",
    ),
    Outcome(
        "MM2-DATA-4",
        "fail",
        "offsets 4 and 5 copied in the other order",
        on("dst:record_digests[4]", digest=7005) | on("dst:record_digests[5]", digest=7004),
    ),
)


def _scenario(outcome: Outcome) -> Scenario:
    named = [
        sc
        for sc in SCENARIOS
        if (sc.name == outcome.scenario)
        or (not outcome.scenario and outcome.invariant in {inv.id for inv in sc.catalogue})
    ]
    assert named, f"no scenario for {outcome}"
    return named[0]


def _changed(pair: Pair, change: dict[str, Any]) -> Pair:
    out = {side: dict(tables) for side, tables in pair.items()}
    for where, what in change.items():
        side, _, rest = where.partition(":")
        table, _, index = rest.rstrip("]").partition("[")
        if isinstance(what, list):
            out[side][table] = list(what)
            continue
        rows = out[side][table]
        assert rows, f"{where}: no row to change"
        picked = range(len(rows)) if not index else (int(index),)
        out[side][table] = [dataclasses.replace(r, **what) if i in picked else r for i, r in enumerate(rows)]
    return out


def _judged_by(outcome: Outcome, sc: Scenario) -> AuditConfig:
    cfg = parse_config(sc.config + outcome.config, env={})
    return dataclasses.replace(cfg, thresholds=dataclasses.replace(cfg.thresholds, **outcome.thresholds))


@pytest.mark.parametrize("outcome", OUTCOMES, ids=lambda o: f"{o.invariant}:{o.expected}:{o.what}")
def test_an_invariant_reaches_the_status_its_case_names(outcome: Outcome, tmp_path: Path) -> None:
    sc = _scenario(outcome)
    got = scenario_statuses(sc, _changed(sc.tables, outcome.change), tmp_path, _judged_by(outcome, sc))
    assert got.get(outcome.invariant) == outcome.expected, (outcome.what, got)


RANK = {"pass": 0, "warn": 1, "fail": 2}


def test_every_invariant_has_its_cases() -> None:
    """Every invariant the scenarios evaluate in process has a case per severity of its
    checks, and each check bounded by a threshold parameter its boundary: a case setting
    that threshold which reaches the check's severity and one which stays below it."""
    missing = []
    for sc in SCENARIOS:
        evaluated = {
            inv.id for inv in sc.catalogue if (sc.records or not inv.spark_only) and not inv.not_applicable
        }
        mine = [o for o in OUTCOMES if _scenario(o) is sc]  # its own pair's cases
        for suite in mode_suites(sc.cfg, sc.job_profile(sc.cfg, Path("unused")).suite_patterns):
            for e in suite.raw["expectations"]:
                inv, severity = e["meta"]["invariant"], e["meta"]["severity"]
                if inv not in evaluated:
                    continue
                cases = [o for o in mine if o.invariant == inv]
                if not any(o.expected == severity for o in cases):
                    missing.append(f"{inv}: no {severity} case")
                for bound in ("min_value", "max_value"):
                    param = e["kwargs"].get(bound)
                    if not isinstance(param, dict):
                        continue
                    name = param["$PARAMETER"]
                    set_it = [o for o in cases if name in o.thresholds]
                    if not any(o.expected == severity for o in set_it):
                        missing.append(f"{inv}: no case reaching {severity} with {name} set")
                    if not any(RANK[o.expected] < RANK[severity] for o in set_it):
                        missing.append(f"{inv}: no case within {name} (the boundary)")
    assert not missing, sorted(set(missing))


def test_each_case_changes_something_its_pair_holds() -> None:
    """A case's change names tables its pair holds, and its thresholds exist."""
    fields = {f.name for f in dataclasses.fields(SCENARIOS[0].cfg.thresholds)}
    for o in OUTCOMES:
        sc = _scenario(o)
        assert o.change or o.thresholds or o.config, o
        assert set(o.thresholds) <= fields, o
        for where in o.change:
            side, _, rest = where.partition(":")
            assert rest.partition("[")[0] in sc.tables[side], (o.what, where)
